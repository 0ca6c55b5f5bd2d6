"""Time ConvDirectLocal's tuning grid on one problem and print the fastest configs.

The problem is given by miopy-driver's conv flags; -F picks the direction (0: all three). Every valid grid
point is timed with --sample 0, else a random sample of that many (the default params are always timed
too). Configs that fail to build or launch are counted, never fatal.

    python -m benchmarks.experiments.direct_local_grid -n 128 -c 96 -H 27 -W 27 -k 256 -y 5 -x 5 -p 2 -q 2 -F 1 \\
        --sample 200 --peak 67 --verify --json l2_fwd.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import pyopencl as cl

from benchmarks import harness
from miopy.accuracy import max_error
from miopy.conv import reference
from miopy.conv.driver import conv_arguments, descriptors
from miopy.conv.problem import OUTPUT_ROLE, ConvProblem, Direction, directions, map_problem
from miopy.conv.solvers.direct_local import ConvDirectLocal
from miopy.errors import MiopyError
from miopy.find import random_buffers
from miopy.handle import Handle
from miopy.plan import Plan as Prepared
from miopy.plan import plan_of
from miopy.solver import Params

SOLVER = ConvDirectLocal()


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    conv_arguments(ap)
    ap.add_argument("--sample", type=int, default=100, help="time this many random valid points (0: all)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sample")
    ap.add_argument("--top", type=int, default=10, help="configs to print")
    ap.add_argument("--iters", type=int, default=5, help="timed runs per config (median)")
    ap.add_argument("--peak", type=float, default=None, help="fp32 peak in TFLOP/s, to print %% of peak")
    ap.add_argument("--verify", action="store_true", help="check the fastest config against float64")
    ap.add_argument("--json", default=None, help="write every timing to this file")
    return ap


def candidates(problem: ConvProblem, handle: Handle, sample: int, seed: int) -> list[Params]:
    """The points to time: the default params first, then all valid points or a random sample."""
    space = (list(SOLVER.search_space(problem, handle.info)) if sample <= 0
             else SOLVER.sample_space(problem, handle.info, sample, seed))
    default = SOLVER.default_params(problem, handle.info)
    return [default] + [p for p in space if p != default]


def time_point(handle: Handle, problem: ConvProblem, params: Params, buffers, iters: int) -> tuple[float, Prepared]:
    prepared = plan_of(handle, problem, SOLVER.solution(problem, params))
    return harness.device_ms(handle, lambda: prepared.enqueue(buffers), warmup=1, iters=iters), prepared


def host_copy(handle: Handle, buffer: cl.Buffer, shape) -> np.ndarray:
    out = np.empty(shape, np.float32)
    cl.enqueue_copy(handle.queue, out, buffer)
    handle.finish()
    return out


def verify(handle: Handle, problem: ConvProblem, prepared: Prepared, buffers) -> float:
    """Run prepared once more and return its max error against the float64 reference."""
    prepared.enqueue(buffers)
    t = {role: host_copy(handle, buffers[role], desc.dims) for role, desc in
         (("x", problem.x), ("w", problem.w), ("y", problem.y))}
    geo = dict(pad=problem.conv.pad, stride=problem.conv.stride, dilation=problem.conv.dilation,
               groups=problem.groups)
    if problem.direction is Direction.FORWARD:
        want = reference.conv_forward(t["x"], t["w"], **geo)
    elif problem.direction is Direction.BACKWARD_DATA:
        want = reference.conv_backward_data(t["y"], t["w"], problem.x.dims, **geo)
    else:
        want = reference.conv_backward_weights(t["x"], t["y"], problem.w.dims, **geo)
    return max_error(t[OUTPUT_ROLE[problem.direction]], want)


def describe(params: Params) -> str:
    return " ".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in params.items())


def report_line(rank: str, ms: float, problem: ConvProblem, params: Params, peak: float | None) -> str:
    gflops = problem.flops() / ms / 1e6
    share = f" {100 * gflops / (peak * 1e3):5.1f}%" if peak else ""
    return f"{rank:>7} {ms:9.4f} ms {gflops:9.1f} GFLOP/s{share}  {describe(params)}"


def bench_direction(handle: Handle, problem: ConvProblem, args) -> list[dict]:
    points = candidates(problem, handle, args.sample, args.seed)
    buffers = random_buffers(handle, problem, SOLVER.workspace_bytes(problem))
    print(f"\n{problem.key()}: {problem.flops() / 1e9:.2f} GFLOP, timing {len(points)} configs", flush=True)
    timed, failed, best, start = [], [], None, time.time()
    for i, params in enumerate(points):
        try:
            ms, prepared = time_point(handle, problem, params, buffers, args.iters)
        except MiopyError as exc:
            failed.append({"params": params, "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        timed.append({"params": params, "ms": ms, "default": i == 0})
        if best is None or ms < best[0]:
            best = (ms, prepared)
        if (i + 1) % 20 == 0:
            print(f"  {i + 1}/{len(points)} timed ({time.time() - start:.0f} s)", file=sys.stderr, flush=True)
    timed.sort(key=lambda r: r["ms"])
    for rank, rec in enumerate(timed[:args.top], 1):
        print(report_line(f"#{rank}", rec["ms"], problem, rec["params"], args.peak))
    default = next((r for r in timed if r["default"]), None)
    if default is not None:
        print(report_line("default", default["ms"], problem, default["params"], args.peak))
    if failed:
        print(f"  {len(failed)} config(s) failed, first: {failed[0]['error']}")
    if args.verify and best is not None:
        print(f"  fastest config: max error vs float64 {verify(handle, problem, best[1], buffers):.2e}")
    return [{"problem": problem.key(), **r} for r in timed] + [{"problem": problem.key(), **r} for r in failed]


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    x_desc, w_desc, conv = descriptors(args)
    handle = Handle()
    print(f"device: {handle.info.name} ({handle.info.platform}), {handle.info.compute_units} CUs")
    records = []
    for direction in directions(args.forw):
        records += bench_direction(handle, map_problem(direction, x_desc, w_desc, conv).problem, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": handle.info.device_id, "argv": sys.argv[1:], "records": records}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
