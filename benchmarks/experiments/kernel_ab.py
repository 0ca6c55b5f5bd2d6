"""A/B one tensor-core kernel source against another on the same params, interleaved in one run.

    python -m benchmarks.experiments.kernel_ab --alt conv_mma_ab.cl --sets alexnet,vgg16 --directions F [--out DIR]

Builds each layer's default ConvImplicitGemmMma solution twice: from miopy/kernels/conv_mma.cl and from the
alternative file (--alt, also under miopy/kernels/, e.g. `git show REV:miopy/kernels/conv_mma.cl >
miopy/kernels/conv_mma_ab.cl`), checks both outputs agree, and times them alternately (kernel time from
profiling events, median of --iters after warm-up, `--rounds` alternations) so clock drift hits both alike.
With --ptx the PTX of both builds of the first layer is written to DIR for a diff.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

import miopy
from benchmarks import harness
from benchmarks.tensor_cores import DIRECTIONS, SOLVER, make, set_layers
from benchmarks.torch_conv import device_buffers as buffers
from benchmarks.torch_conv import host_tensors as tensors
from miopy.conv.problem import OUTPUT_ROLE
from miopy.conv.solvers.mma import emulated
from miopy.plan import plan_of


def with_file(solution, alt: str):
    launches = tuple(dataclasses.replace(launch, spec=dataclasses.replace(launch.spec, file=alt))
                     if launch.spec.file == "conv_mma.cl" else launch for launch in solution.launches)
    return dataclasses.replace(solution, launches=launches)


def cases(args, info):
    """(letter, shape, dtype, problem, default params) of every row, in run order."""
    for letter in args.directions:
        for shape in set_layers(args.sets):
            for dtype in args.dtypes.split(","):
                problem = make(DIRECTIONS[letter], dtype, shape)
                yield letter, shape, dtype, problem, SOLVER.default_params(problem, info)


def prebuild(handle, args) -> None:
    """Compile both builds of every row up front in find_compile_pool's worker processes (NVIDIA's compiler does not run
    in parallel within one process; one build at a time, the run waits on the compiler for most of its time)."""
    from miopy import find_compile_pool
    if args.emulate or not find_compile_pool.wanted(handle):
        return
    started = time.monotonic()
    specs = []
    for _, _, _, problem, params in cases(args, handle.info):
        solution = SOLVER.solution(problem, params)
        specs += [launch.spec for sol in (solution, with_file(solution, args.alt)) for launch in sol.launches]
    specs = list(dict.fromkeys(specs))
    errors = find_compile_pool.pool_for(handle, 12).build(specs)
    print(json.dumps({"prebuild": len(specs), "failed": sum(e is not None for e in errors.values()),
                      "s": round(time.monotonic() - started, 1)}), flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alt", required=True)
    ap.add_argument("--sets", default="alexnet")
    ap.add_argument("--directions", default="F")
    ap.add_argument("--dtypes", default="FP32,FP16")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="")
    ap.add_argument("--ptx", action="store_true")
    ap.add_argument("--emulate", action="store_true", help="build with MMA_EMULATE=1 (a dry run off NVIDIA)")
    args = ap.parse_args(argv)
    import pyopencl as cl
    handle = miopy.Handle()
    rows = []
    prebuild(handle, args)
    for letter, shape, dtype, problem, params in cases(args, handle.info):
        t = tensors(problem, 0)
        bufs = buffers(handle, t)
        role = OUTPUT_ROLE[problem.direction]
        sols = {"cur": SOLVER.solution(problem, params)}
        if args.emulate:
            sols["cur"] = emulated(sols["cur"])
        sols["alt"] = with_file(sols["cur"], args.alt)
        ws = handle.alloc(max(sols["cur"].workspace_bytes, 4))
        calls, outs = {}, {}
        for name, sol in sols.items():
            plan = plan_of(handle, problem, sol)
            calls[name] = (lambda p=plan, b=bufs, w=ws: p.enqueue({**b, "workspace": w}))
            cl.enqueue_copy(handle.queue, bufs[role], np.full(t[role].shape, np.nan, t[role].dtype))
            calls[name]()
            outs[name] = np.empty_like(t[role])
            cl.enqueue_copy(handle.queue, outs[name], bufs[role])
            handle.finish()
        times: dict[str, list[float]] = {"cur": [], "alt": []}
        for _ in range(args.rounds):
            for name in ("cur", "alt"):
                times[name].append(harness.device_ms(handle, calls[name], iters=args.iters))
        row = {"layer": shape[0], "direction": letter, "dtype": dtype, "params": params,
               "same_output": bool(np.array_equal(outs["cur"], outs["alt"], equal_nan=True)),
               **{f"{k}_ms": harness.median(v) for k, v in times.items()}}
        row["cur_over_alt"] = row["cur_ms"] / row["alt_ms"]
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "params"}), flush=True)
        if args.ptx and args.out and len(rows) == 1:
            for name, sol in sols.items():
                spec = sol.launches[-1].spec if sol.launches[-1].spec.name == "conv_mma" else \
                    sol.launches[0].spec
                prg = handle.kernels._compile(spec)
                (Path(args.out) / f"{name}.ptx").write_bytes(prg.binaries[0])
    if args.out:
        harness.write_json(Path(args.out) / "kernel_ab.json", harness.new_record(handle, rows=rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
