"""The GPU benchmark suite: miopy's find against cuDNN (through PyTorch) in one run.

For each layer set and direction: miopy's find (system perf DB params) picks a solver; we record its time,
useful GFLOP/s (2*N*K*P*Q*C*R*S/groups), percent of the fp32 peak measured in the same run, every other
solver's time, and cuDNN's time with cudnn.benchmark=True in strict fp32 and in default TF32, with ratios.
miopy's output and cuDNN's strict-fp32 output are both checked against a float64 reference computed on
the GPU (Boda's hybrid error |a-e|/(1+|e|)).

    python benchmarks/suite.py --sets alexnet,boda,resnet50,vgg16 --directions F --out benchmarks/results/x.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import miopy  # noqa: E402
from miopy.conv import (  # noqa: E402
    networks,
    reference,
    registry,  # noqa: E402
)
from miopy.conv.problem import (
    OUTPUT_ROLE,  # noqa: E402
    Direction,  # noqa: E402
)
from miopy.find import find_problem  # noqa: E402
from miopy.plan import solution_plan  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crosscheck import float64_reference, torch_call  # noqa: E402
from microbench import copy_bandwidth_gbs, fp32_peak_gflops  # noqa: E402

LETTERS = {"F": Direction.FORWARD, "B": Direction.BACKWARD_DATA, "W": Direction.BACKWARD_WEIGHTS}


def cudnn_ms(problem, tensors, tf32: bool, iters: int) -> tuple[float, np.ndarray]:
    """Median CUDA-event time of the cuDNN call for problem's direction; also its output (strict only)."""
    import torch
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    x, w, y = (torch.from_numpy(tensors[r]).cuda() for r in "xwy")
    call = torch_call(problem, x, w, y)
    for _ in range(3):
        out = call()
    torch.cuda.synchronize()
    samples = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    result = out.cpu().numpy()
    del x, w, y, out
    return statistics.median(samples), result


def miopy_layer(handle, problem, tensors, iters: int) -> dict:
    """find, then time the winner over iters runs and return its output for the cross-check."""
    import pyopencl as cl
    mf = cl.mem_flags
    bufs = {r: cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=tensors[r]) for r in "xwy"}
    t0 = time.perf_counter()
    found = find_problem(handle, problem, buffers={**bufs, "workspace": handle.alloc(max_workspace(problem, handle))})
    find_s = time.perf_counter() - t0
    best = found[0]
    prepared = solution_plan(handle, problem, best.solver_id, best.params)
    ws = handle.alloc(prepared.solution.workspace_bytes)
    run = lambda: prepared.enqueue({**bufs, "workspace": ws})
    ms = handle.time_ms(run, warmup=2, iters=iters)
    out = np.empty_like(tensors[OUTPUT_ROLE[problem.direction]])
    cl.enqueue_copy(handle.queue, out, bufs[OUTPUT_ROLE[problem.direction]])
    handle.finish()
    return {"solver": best.solver_id, "algorithm": best.algorithm, "time_ms": ms, "params": best.params,
            "params_source": best.params_source, "find_s": find_s,
            "all": {r.solver_id: r.time_ms for r in found}, "skipped": found.skipped}, out


def max_workspace(problem, handle) -> int:
    return max([s.workspace_bytes(problem) for s in registry.solvers() if s.is_applicable(problem, handle.info)] + [4])


def run_layer(handle, set_name, layer, n, direction, peak, iters) -> dict:
    problem = layer.problem(n, direction)
    rng = np.random.default_rng(0)
    tensors = {r: rng.standard_normal(d.dims, dtype=np.float32) for r, d in (("x", problem.x), ("w", problem.w),
                                                                             ("y", problem.y))}
    flops = problem.flops()
    rec = {"set": set_name, "layer": layer.name, "n": n, "direction": direction.letter,
           "shape": layer.driver_args(n), "flops": flops}
    try:
        mi, out = miopy_layer(handle, problem, tensors, iters)
    except miopy.MiopyError as exc:
        rec["error"] = f"{type(exc).__name__}: {exc}"
        return rec
    rec["miopy"] = mi
    rec["miopy"].update(gflops=flops / mi["time_ms"] / 1e6, pct_peak=100 * flops / mi["time_ms"] / 1e6 / peak)
    try:
        strict_ms, expect = cudnn_ms(problem, tensors, False, iters)
        tf32_ms, _ = cudnn_ms(problem, tensors, True, iters)
    except Exception as exc:  # torch missing or OOM: keep miopy's numbers
        rec["cudnn_error"] = repr(exc)
        return rec
    exact = float64_reference(problem, tensors)
    rec.update(cudnn_fp32_ms=strict_ms, cudnn_tf32_ms=tf32_ms, ratio_fp32=mi["time_ms"] / strict_ms,
               ratio_tf32=mi["time_ms"] / tf32_ms, max_err=reference.max_error(out, exact),
               cudnn_fp32_max_err=reference.max_error(expect, exact),
               tolerance=reference.tolerance(registry.get(mi["solver"]), problem))
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="alexnet,boda,resnet50,vgg16")
    ap.add_argument("--directions", default="F")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--limit", type=int, default=0, help="first N layers of each set (0: all)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    handle = miopy.Handle()
    peak, bw = fp32_peak_gflops(handle), copy_bandwidth_gbs(handle)
    print(f"device {handle.info.name}: fp32 peak {peak:.0f} GFLOP/s, copy {bw:.0f} GB/s", flush=True)
    result = {"device": handle.info.name, "device_id": handle.info.device_id, "peak_gflops": peak,
              "copy_gbs": bw, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "miopy_version": miopy.__version__, "host": platform.node(), "command": " ".join(sys.argv),
              "layers": []}
    for set_name in args.sets.split(","):
        layers = networks.layer_set(set_name)[: args.limit or None]
        for letter in args.directions.split(","):
            for layer in layers:
                rec = run_layer(handle, set_name, layer, networks.DEFAULT_BATCH[set_name], LETTERS[letter], peak,
                                args.iters)
                result["layers"].append(rec)
                _print(rec)
                Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


def _print(rec: dict) -> None:
    if "miopy" not in rec:
        print(f"{rec['set']:9s} {rec['layer']:8s} {rec['direction']} ERROR {rec.get('error')}", flush=True)
        return
    m = rec["miopy"]
    cud = (f"cudnn {rec['cudnn_fp32_ms']:.3f}/{rec['cudnn_tf32_ms']:.3f} ms x{rec['ratio_fp32']:.2f} "
           f"err {rec['max_err']:.1e} (cuDNN {rec['cudnn_fp32_max_err']:.1e})") if "cudnn_fp32_ms" in rec \
        else rec.get("cudnn_error", "")
    print(f"{rec['set']:9s} {rec['layer']:8s} {rec['direction']} {m['solver']:22s} {m['time_ms']:8.3f} ms "
          f"{m['gflops']:8.0f} GF/s {m['pct_peak']:5.1f}% | {cud} | find {m['find_s']:.1f}s {m['all']}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
