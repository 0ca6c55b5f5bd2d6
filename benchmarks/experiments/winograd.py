"""Winograd against every other applicable solver on the 3x3 stride-1 layers it targets.

    python -m benchmarks.experiments.winograd [-n 32] [--layers resnet50,vgg16] [--sweep 16] [--json results.json]

For each layer and direction (forward, backward-data; backward-weights with --directions 4) it prints every
applicable solver's time from find (default params, median of 5 profiled runs) with its effective TFLOP/s
(useful FLOPs of the direct convolution / time), whether a Winograd solver beat every other one, and each
Winograd solver's time per kernel, named (forward: filter, input, GEMM, output transforms; backward-weights:
input, dy transform and GEMM per pass over the tiles, then the filter-gradient transform). --sweep N also
times N random valid GEMM tilings of each Winograd solver and prints the best next to the default.
"""
from __future__ import annotations

import argparse
import sys

import miopy
from benchmarks import harness
from miopy.conv import registry
from miopy.conv.problem import ConvDesc, ConvProblem, Direction
from miopy.errors import MiopyError
from miopy.find import find_problem, random_buffers
from miopy.plan import solution_plan as prepared_solution
from miopy.tensor import TensorDesc

LAYERS = {  # name -> (C, H=W, K) of its 3x3 pad-1 stride-1 convolutions
    "resnet50": [(64, 56, 64), (128, 28, 128), (256, 14, 256), (512, 7, 512)],
    "vgg16": [(64, 224, 64), (128, 112, 128), (256, 56, 256), (512, 28, 512), (512, 14, 512)],
}
WINOGRAD = [s for s in registry.ALL if s.algorithm == "winograd"]


def problem_of(direction: Direction, n: int, c: int, hw: int, k: int) -> ConvProblem:
    return ConvProblem.create(direction, TensorDesc("FP32", (n, c, hw, hw)), TensorDesc("FP32", (k, c, 3, 3)),
                              ConvDesc(1))


def kernel_times(handle, problem: ConvProblem, solver_id: str, params: dict, buffers,
                 iters: int = 5) -> list[tuple[str, float]]:
    """(kernel name, median ms) of each launch of the solution, in launch order."""
    prepared = prepared_solution(handle, problem, solver_id, params)
    for _ in range(2):
        prepared.enqueue(buffers)
    names = [launch.spec.name for launch in prepared.solution.launches]
    return list(zip(names, harness.launch_ms(handle, lambda: prepared.enqueue(buffers), runs=iters)))


def sweep(handle, problem: ConvProblem, solver, buffers, count: int) -> tuple[float, dict] | None:
    """Fastest (ms, params) among count random valid tilings; failures are skipped."""
    timed = []
    for params in solver.sample_space(problem, handle.info, count):
        try:
            plan = prepared_solution(handle, problem, solver.id, params)
            timed.append((harness.device_ms(handle, lambda p=plan: p.enqueue(buffers), 2, 5), params))
        except MiopyError as exc:
            print(f"    {solver.id} {params}: {type(exc).__name__}", file=sys.stderr)
    return min(timed, key=lambda t: t[0]) if timed else None


def bench_layer(handle, problem: ConvProblem, sweep_count: int) -> dict:
    found = find_problem(handle, problem)
    tflops = {r.solver_id: problem.flops() / r.time_ms / 1e9 for r in found}
    print(f"{problem.key()}")
    for r in found:
        print(f"  {r.solver_id:28s} {r.time_ms:9.4f} ms  {tflops[r.solver_id]:8.3f} TFLOP/s")
    others = [r.time_ms for r in found if r.algorithm != "winograd"]
    best_wino = min((r.time_ms for r in found if r.algorithm == "winograd"), default=float("inf"))
    wins = not others or best_wino < min(others)
    print(f"  winograd fastest: {'yes' if wins else 'NO'}")
    result = {"problem": problem.key(), "records": [r.as_dict() for r in found], "winograd_fastest": wins}
    buffers = random_buffers(handle, problem, max(s.workspace_bytes(problem) for s in WINOGRAD))
    for r in (r for r in found if r.algorithm == "winograd"):
        parts = kernel_times(handle, problem, r.solver_id, r.params, buffers)
        print(f"  {r.solver_id} kernels ms: " + ", ".join(f"{name.removeprefix('wino_')} {t:.4f}" for name, t in parts))
        result[f"{r.solver_id}_kernels_ms"] = parts
    for solver in (s for s in WINOGRAD if sweep_count and s.is_applicable(problem, handle.info)):
        best = sweep(handle, problem, solver, buffers, sweep_count)
        if best:
            print(f"  {solver.id} sweep best {best[0]:.4f} ms with {best[1]}")
            result[f"{solver.id}_sweep"] = {"time_ms": best[0], "params": best[1]}
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=32, help="batch size")
    ap.add_argument("--layers", default="resnet50,vgg16", help=f"comma list of {sorted(LAYERS)}")
    ap.add_argument("--directions", default="1,2", help="1 forward, 2 backward-data, 4 backward-weights")
    ap.add_argument("--sweep", type=int, default=0, help="random GEMM tilings to time per Winograd solver")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    handle = miopy.Handle()
    print(f"device: {handle.info.name} ({handle.info.platform}), batch {args.n}")
    results = []
    for net in args.layers.split(","):
        for c, hw, k in LAYERS[net]:
            for d in (Direction(int(v)) for v in args.directions.split(",")):
                results.append({"net": net, **bench_layer(handle, problem_of(d, args.n, c, hw, k), args.sweep)})
    harness.write_json(args.json, harness.new_record(handle, batch=args.n, results=results))
    return 0 if all(r["winograd_fastest"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
