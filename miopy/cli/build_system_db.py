"""Build the system perf DB: tune named layer sets on this device and write their winners to a DB file.

    python -m miopy.cli.build_system_db --out miopy/data/system_perf.db --networks alexnet,resnet50 \\
        -n 1 --budget 4 [-F 1] [-S SOLVER] [--limit LAYERS] [--layers NAME,...] [--merge]

Tuning runs against a temporary user DB, so the machine's own user DB is left alone; only the perf records
go into OUT, which uses a rollback journal so it can ship inside the package and be opened read-only.
--merge keeps OUT's existing records of other devices or problems (tune on each device, one file).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from .. import db
from ..conv import networks, registry
from ..conv.problem import directions
from ..errors import MiopyError
from ..handle import Handle
from ..tuning import Compiler, TuneOptions, tune_problem


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m miopy.cli.build_system_db", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="DB file to write")
    ap.add_argument("--networks", default="alexnet,resnet50", help="comma-separated layer sets")
    ap.add_argument("-n", "--batchsize", type=int, default=1)
    ap.add_argument("-F", "--forw", type=int, default=1, choices=(0, 1, 2, 4),
                    help="1 fwd, 2 bwd-data, 4 bwd-weights, 0 all")
    ap.add_argument("-S", "--solver", default=None, help="tune only this solver")
    ap.add_argument("--limit", type=int, default=None, help="tune only the first LIMIT layers of each network")
    ap.add_argument("--strategy", default="local")
    ap.add_argument("--layers", default="", help="comma-separated layer names to tune (default: all)")
    ap.add_argument("--budget", type=int, default=4, help="most points per solver and problem")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--merge", action="store_true", help="keep OUT's existing records not tuned again")
    return ap


def build(args: argparse.Namespace) -> int:
    """Tune and write OUT; returns the number of records written."""
    problems = [layer.problem(args.batchsize, d) for name in args.networks.split(",")
                for layer in networks.layer_set(name)[:args.limit]
                if not args.layers or layer.name in args.layers.split(",") for d in directions(args.forw)]
    handle = Handle()
    solvers = [registry.get(args.solver)] if args.solver else None
    with Compiler(handle, args.jobs) as compiler:
        for i, problem in enumerate(problems, 1):
            start = time.perf_counter()
            results = tune_problem(handle, problem, solvers=solvers, strategy_name=args.strategy,
                                   options=TuneOptions(budget=args.budget), compiler=compiler)
            print(f"[{i}/{len(problems)}] {problem.key()} tuned in {time.perf_counter() - start:.1f} s: "
                  + ", ".join(f"{r.solver_id} {r.best_ms:.3f} ms" for r in results), flush=True)
    rows = {tuple(row[:3]): row for row in _existing(args.out)} if args.merge else {}
    for row in db.user_perf_db().rows():
        rows[tuple(row[:3])] = faster(rows.get(tuple(row[:3])), row)
    db.write_perf_file(args.out, rows.values())
    return len(rows)


def faster(kept: tuple | None, new: tuple) -> tuple:
    """The record to keep for one (device, problem, solver): the faster one (rows end with time_ms,
    miopy_version, date), so re-tuning with a smaller budget or an unlucky search never makes it worse."""
    return new if kept is None or new[-3] <= kept[-3] else kept


def _existing(path: Path) -> list[tuple]:
    return db.PerfDb(db.Store(path, readonly=True), "existing DB").rows()


@contextlib.contextmanager
def _scratch_user_db():
    """Point MIOPY_USER_DB_PATH at a temporary file for the duration, so the real user DB stays out of it."""
    previous = os.environ.get("MIOPY_USER_DB_PATH")
    with tempfile.TemporaryDirectory(prefix="miopy-system-db-") as tmp:
        os.environ["MIOPY_USER_DB_PATH"] = str(Path(tmp) / "tuning.db")
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("MIOPY_USER_DB_PATH")
            else:
                os.environ["MIOPY_USER_DB_PATH"] = previous


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    with _scratch_user_db():
        try:
            count = build(args)
        except MiopyError as exc:
            print(f"build_system_db: error: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
    print(f"wrote {count} perf records to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
