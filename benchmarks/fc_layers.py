"""AlexNet's fully connected layers (1x1 convolutions of 1x1 images) through miopy beside PyTorch.

For each layer at each batch size: find's ranking of every applicable solver (each at its default or perf-DB
params, as the ONNX runner's find=True sees them), then ConvGemv1x1's tuning grid (the default params
first, then the points around them, then a random sample of valid points, until --budget seconds per layer
are spent), then
torch.nn.functional.linear in fp32 (TF32 off) on the same shape, all in one run. Kernel times are device
times (profiling events), the median of --iters runs.

    python -m benchmarks.fc_layers --batch 32 --out benchmarks/results/h100-fc-layers.json   # ~40 s on an H100
    python -m benchmarks.fc_layers --batch 9 32 64 --budget 5 --out /tmp/fc.json
    python -m benchmarks.fc_layers --batch 4 --layers 512x10 --budget 2 --out /tmp/fc.json    # PoCL smoke run

The results page is docs/results/fc-layers.md (`python -m benchmarks.report`).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchmarks import harness
from miopy.conv.problem import ConvDesc, ConvProblem, Direction
from miopy.conv.solvers.gemv_1x1 import ConvGemv1x1
from miopy.errors import MiopyError
from miopy.find import find_problem, random_buffers
from miopy.handle import Handle
from miopy.plan import plan_of
from miopy.solver import Params
from miopy.tensor import TensorDesc

ALEXNET = ("9216x4096", "4096x4096", "4096x1000")   # classifier.1, .4, .6: C x K
GEMV = ConvGemv1x1()


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, nargs="+", default=[32], help="batch sizes N")
    ap.add_argument("--layers", nargs="+", default=list(ALEXNET), help="CxK per layer (default AlexNet's)")
    ap.add_argument("--dtype", choices=("FP32", "FP16"), default="FP32")
    ap.add_argument("--budget", type=float, default=8.0, help="seconds of ConvGemv1x1 grid points per layer")
    ap.add_argument("--iters", type=int, default=20, help="timed runs per config (median)")
    ap.add_argument("--no-find", action="store_true", help="skip find (only ConvGemv1x1's grid and PyTorch)")
    ap.add_argument("--out", default=None, help="write every timing to this JSON file")
    return ap


def fc_problem(n: int, c: int, k: int, dtype: str) -> ConvProblem:
    return ConvProblem.create(Direction.FORWARD, TensorDesc(dtype, (n, c, 1, 1)), TensorDesc(dtype, (k, c, 1, 1)),
                              ConvDesc(0, 1, 1, 1))


def time_gemv(handle: Handle, problem: ConvProblem, params: Params, buffers, iters: int) -> float:
    plan = plan_of(handle, problem, GEMV.solution(problem, params))
    return harness.device_ms(handle, lambda: plan.enqueue(buffers), iters=iters)


def curated(problem: ConvProblem, handle: Handle, default: Params) -> list[Params]:
    """The default, its other STAGE values, then ROWS x IMAGE_GROUPS around it (staged and not): the
    comparisons that say whether the default's rules hold on this device."""
    near = [{**default, "STAGE": s} for s in GEMV.grid["STAGE"]]
    near += [{**default, "ROWS": r, "IMAGE_GROUPS": g, "STAGE": s} for r in (16, 8, 4) for g in (16, 8, 4)
             for s in (4, 0, 8, 2)]
    out: list[Params] = [default]
    for params in near:
        if params not in out and GEMV.is_valid(problem, params, handle.info):
            out.append(params)
    return out


def gemv_grid(handle: Handle, problem: ConvProblem, budget: float, iters: int) -> list[dict]:
    """The default params and the points around it, then random valid grid points, until budget seconds
    are spent; fastest first."""
    default = GEMV.default_params(problem, handle.info)
    points = curated(problem, handle, default)
    points += [p for p in GEMV.sample_space(problem, handle.info, 10_000, seed=1) if p not in points]
    buffers = random_buffers(handle, problem, 0)
    records, start = [], time.time()
    for params in points:
        if records and time.time() - start > budget:
            break
        try:
            records.append({"params": params, "ms": time_gemv(handle, problem, params, buffers, iters),
                            "default": params == default})
        except MiopyError as exc:
            records.append({"params": params, "error": f"{type(exc).__name__}: {exc}"[:200]})
    timed = sorted((r for r in records if "ms" in r), key=lambda r: r["ms"])
    print(f"  ConvGemv1x1 grid: {len(timed)} of {len(points)} valid points timed in {time.time() - start:.1f} s")
    for rank, rec in enumerate(timed[:5], 1):
        print(f"    #{rank} {rec['ms']:8.4f} ms  {rec['params']}{'  (default)' if rec['default'] else ''}")
    default_rec = next((r for r in timed if r["default"]), None)
    if default_rec is not None and default_rec is not timed[0]:
        print(f"    default {default_rec['ms']:8.4f} ms  {default_rec['params']}")
    return records


def find_ranking(handle: Handle, problem: ConvProblem) -> list[dict]:
    found = find_problem(handle, problem, mode="normal", store=False)
    for perf in found:
        print(f"  find: {perf.solver_id:<22} {perf.time_ms:8.4f} ms  {perf.params}")
    return [{"solver": p.solver_id, "ms": p.time_ms, "params": p.params} for p in found]


def torch_linear_ms(torch, n: int, c: int, k: int, dtype: str, iters: int) -> float:
    kind = torch.float16 if dtype == "FP16" else torch.float32
    x = torch.randn(n, c, device="cuda", dtype=kind)
    w = torch.randn(k, c, device="cuda", dtype=kind)
    return harness.cuda_ms(torch, lambda: torch.nn.functional.linear(x, w), iters=iters)


def bench_layer(handle: Handle, torch, n: int, layer: str, args) -> dict:
    c, k = (int(v) for v in layer.split("x"))
    problem = fc_problem(n, c, k, args.dtype)
    weight_mb = problem.w.nbytes / 1e6
    print(f"\nN={n} C={c} K={k} {args.dtype}: {problem.flops() / 1e9:.2f} GFLOP, weights {weight_mb:.1f} MB",
          flush=True)
    row: dict = {"n": n, "c": c, "k": k, "dtype": args.dtype, "key": problem.key()}
    if not args.no_find:
        row["find"] = find_ranking(handle, problem)
    row["gemv"] = gemv_grid(handle, problem, args.budget, args.iters)
    if torch is not None:
        row["torch_fp32_ms" if args.dtype == "FP32" else "torch_fp16_ms"] = ms = torch_linear_ms(
            torch, n, c, k, args.dtype, args.iters)
        print(f"  torch F.linear ({args.dtype}, TF32 off): {ms:8.4f} ms")
    return row


def page(sources: list[harness.Source], out: Path) -> list[str]:
    """docs/results/fc-layers.md: each run's table."""
    lines = harness.page_head(
        "Fully connected layers (1x1 convolutions of 1x1 images)", sources,
        "AlexNet's classifier layers through miopy beside PyTorch: find's ranking of every applicable solver, then "
        "ConvGemv1x1's tuning grid (the default params first, the points around them, then a random sample, within "
        "a time budget), then `torch.nn.functional.linear` in fp32 (TF32 off) on the same shape, all in one run. "
        "Kernel ms: medians of profiled runs (CUDA events for PyTorch).")
    for s in sources:
        lines += [f"## {s.name}", ""] + report(s.data)
    return lines


def report(data: dict) -> list[str]:
    """Per layer, the other solvers' best and ConvGemv1x1's default and best point (find's timings and the grid's,
    one run), beside PyTorch."""
    out = ["| N | C -> K | best other solver (find) | ConvGemv1x1 default | ConvGemv1x1 best point | PyTorch fp32 |",
           "|---|---|---|---|---|---|"]
    for r in data["rows"]:
        other = min((f for f in r.get("find", []) if f["solver"] != GEMV.id), key=lambda f: f["ms"], default=None)
        default = next((g for g in r["gemv"] if g.get("default")), None)
        best = min(r["gemv"], key=lambda g: g["ms"])
        params = ", ".join(f"{k} {v}" for k, v in best["params"].items())
        out.append(f"| {r['n']} | {r['c']} -> {r['k']} | " + (f"{other['solver']} {other['ms']:.3f}" if other else "-")
                   + f" | {default['ms']:.3f} | {best['ms']:.3f} ({params}) | "
                   + (f"{r['torch_fp32_ms']:.3f}" if r.get("torch_fp32_ms") else "-") + " |")
    return out + [""]


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    handle = Handle()
    torch = harness.load_torch()
    print(f"device: {handle.info.name} ({handle.info.platform}), {handle.info.compute_units} CUs; "
          f"torch: {torch.__version__ if torch is not None else 'none'}")
    rows = [bench_layer(handle, torch, n, layer, args) for n in args.batch for layer in args.layers]
    harness.write_json(args.out, harness.new_record(handle, rows=rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
