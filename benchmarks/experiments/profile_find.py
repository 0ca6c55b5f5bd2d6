"""Where a cold find's seconds go: one layer of a set, found once in a fresh process after a tiny warm-up
find, under cProfile (top entries by cumulative time), then the wall time of find's phases and the slowest kernel
builds of the compile workers (where find compiles in processes).

    python -m benchmarks.experiments.profile_find --set vgg16 --layer conv1 -F 4
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time

import miopy
from miopy import config, find, find_compile_pool
from miopy.conv import networks
from miopy.conv.problem import Direction
from miopy.find import find_problem

PHASES: dict[str, float] = {}


def _timed(module, name: str) -> None:
    """Wrap module.name so its wall time adds to PHASES[name] (cProfile does not follow the compile threads)."""
    inner = getattr(module, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            PHASES[name] = PHASES.get(name, 0.0) + time.perf_counter() - start
    setattr(module, name, wrapper)


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
    for name in ("_candidates", "_checker", "random_buffers", "prebuild", "_measure"):
        _timed(find, name)
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    result = find_problem(handle, problem, mode="normal", store=False)
    profile.disable()
    print(f"{problem.key()}: find {time.perf_counter() - start:.2f} s;",
          ", ".join(f"{r.solver_id} {r.time_ms:.3f} ms" for r in result))
    pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)
    for phase, seconds in sorted(PHASES.items(), key=lambda kv: -kv[1]):
        print(f"phase {phase}: {seconds:.3f} s")
    if find_compile_pool.wanted(handle):
        for seconds, label, who in find_compile_pool.pool_for(handle, config.find_jobs()).slowest(8):
            print(f"build {seconds:6.2f} s by {who}: {label[:400]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
