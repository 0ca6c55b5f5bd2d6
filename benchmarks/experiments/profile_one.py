"""Run one solver once on one layer with its find params, for a profiler (e.g. Nsight Compute) to watch.

    ncu --section SpeedOfLight --section Occupancy --section LaunchStats python -m benchmarks.experiments.profile_one \\
        --set alexnet --layer conv5 --solver ConvDirectLocal
"""
from __future__ import annotations

import argparse
import sys

from benchmarks import harness
from miopy import Handle
from miopy.conv import (
    networks,
    registry,
)
from miopy.find import params_for, random_buffers
from miopy.plan import solution_plan as prepared_solution


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="alexnet")
    ap.add_argument("--layer", default="conv5")
    ap.add_argument("--solver", default="ConvDirectLocal")
    ap.add_argument("-F", type=int, default=1)
    args = ap.parse_args(argv)
    handle = Handle()
    layer = next(x for x in networks.layer_set(args.set) if x.name == args.layer)
    problem = layer.problem(networks.DEFAULT_BATCH[args.set], args.F)
    solver = registry.get(args.solver)
    params, source = params_for(solver, problem, handle)
    prepared = prepared_solution(handle, problem, solver.id, params)
    buffers = random_buffers(handle, problem, prepared.solution.workspace_bytes)
    ms = harness.device_ms(handle, lambda: prepared.enqueue(buffers), warmup=1, iters=3)
    print(f"{problem.key()} {solver.id} ({source}) {params}: {ms:.3f} ms, "
          f"{problem.flops() / ms / 1e9:.1f} TFLOP/s; launches "
          + ", ".join(f"{ln.spec.name} global={ln.global_size} local={ln.local_size}"
                      for ln in prepared.solution.launches))
    return 0


if __name__ == "__main__":
    sys.exit(main())
