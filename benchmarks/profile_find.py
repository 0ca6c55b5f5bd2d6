"""Where a cold find's seconds go: one layer of a set, found once in a fresh process after a tiny warm-up
find, under cProfile (top entries by cumulative time).

    python3 benchmarks/profile_find.py --set vgg16 --layer conv1 -F 4
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import miopy  # noqa: E402
from miopy.conv import networks  # noqa: E402
from miopy.conv.problem import Direction  # noqa: E402
from miopy.find import find_problem  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", default="vgg16")
    ap.add_argument("--layer", default="conv1")
    ap.add_argument("-F", type=int, default=1, choices=(1, 2, 4))
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    handle = miopy.Handle()
    find_problem(handle, networks.Layer("warm", 2, 5, 5, 2, 1, 1).problem(1), mode="normal", store=False)
    layer = next(x for x in networks.layer_set(args.set) if x.name == args.layer)
    problem = layer.problem(networks.DEFAULT_BATCH[args.set], Direction(args.F))
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    result = find_problem(handle, problem, mode="normal", store=False)
    profile.disable()
    print(f"{problem.key()}: find {time.perf_counter() - start:.2f} s;",
          ", ".join(f"{r.solver_id} {r.time_ms:.3f} ms" for r in result))
    pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
