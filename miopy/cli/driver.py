"""miopy-driver: MIOpenDriver's commands on miopy, one or more per family (each family's ``driver`` module:
``add_parsers(subparsers)``, each command's ``run(args) -> int``): conv, convfp16, pool, softmax, lrn, bnorm,
tensorop, dropout, ..."""
from __future__ import annotations

import argparse
import sys

from .. import families


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="miopy-driver", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    for family in families.FAMILIES:
        family.module("driver").add_parsers(sub)
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
