"""Issue 16's slow layer families beside cuDNN strict fp32, in one run: depthwise (MobileNet), 5x5 filters
(AlexNet conv2, GoogLeNet), backward-weights (AlexNet and VGG-16 sets) and backward-weights accuracy on a
reduction of 4.2 million terms per weight, and 1x1 layers with few input channels (ResNet-50), with sampled
points of the tuning grid beside the defaults.

Every miopy candidate (solver with its perf-DB or default params, plus a few explicit variants) runs on the
same random inputs with its output poisoned first, is checked against float64 (torch on the GPU) with Boda's
hybrid error |a-e|/(1+|e|), and is timed with OpenCL profiling events; cuDNN (torch, benchmark=True,
allow_tf32=False) is timed with CUDA events and checked the same way. The JSON lists every candidate.

    python -m benchmarks.weak_families --out benchmarks/results/h100-weak-families.json --budget 270

The results page is docs/results/conv-families.md (`python -m benchmarks.report`).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import miopy
from benchmarks import harness
from benchmarks.torch_conv import cudnn_ms, device_buffers, float64_reference
from miopy.conv import networks, reference, registry
from miopy.conv.problem import OUTPUT_ROLE, ConvDesc, ConvProblem, Direction
from miopy.find import params_for
from miopy.plan import solution_plan
from miopy.tensor import TensorDesc

F, B, W = Direction.FORWARD, Direction.BACKWARD_DATA, Direction.BACKWARD_WEIGHTS


def problem_of(direction, n, c, h, k, r, pad, stride=1, groups=1, w=None) -> ConvProblem:
    x = TensorDesc("FP32", (n, c, h, w or h))
    wd = TensorDesc("FP32", (k, c // groups, r, r))
    return ConvProblem.create(direction, x, wd, ConvDesc(pad, stride, 1, groups))


def _dw_variants(direction) -> list[dict]:
    if direction is W:
        return [{"TILE_H": 1, "TILE_W": tw, "WG_X": wg, "WG_Y": 1, "USE_LOCAL": False, "SPLIT": sp}
                for tw, wg, sp in ((4, 256, 8), (4, 256, 32), (4, 128, 64), (2, 256, 16), (8, 256, 16), (4, 64, 128))]
    shapes = [(16, 8, 2, 2, True), (32, 4, 2, 4, True), (16, 16, 1, 2, True), (16, 8, 4, 4, True), (32, 8, 1, 4, True),
              (16, 8, 2, 2, False), (32, 4, 2, 4, False), (8, 16, 4, 2, True), (64, 2, 2, 2, True), (16, 4, 4, 8, True)]
    return [{"TILE_H": th, "TILE_W": tw, "WG_X": wx, "WG_Y": wy, "USE_LOCAL": loc, "SPLIT": 1}
            for wx, wy, th, tw, loc in shapes]


FFT_VARIANTS = ({"TILE_M": 32, "TILE_N": 32, "WORK_M": 4, "WORK_N": 4, "K_BLK": 8},
                {"TILE_M": 64, "TILE_N": 32, "WORK_M": 8, "WORK_N": 4, "K_BLK": 8})
WINO_VARIANTS = ({"TILE_M": 64, "TILE_N": 64, "WORK_M": 4, "WORK_N": 4, "K_BLK": 16},
                 {"TILE_M": 64, "TILE_N": 128, "WORK_M": 8, "WORK_N": 8, "K_BLK": 8},
                 {"TILE_M": 128, "TILE_N": 64, "WORK_M": 8, "WORK_N": 8, "K_BLK": 16})


# Backward-weights Winograd (weight gradient): the default, 64x64 GEMM blocks, and SPLIT 32 (more and shorter
# partial sums; skipped where the split rule caps it lower).
WINO_WRW_VARIANTS = (None, {"TILE_M": 64, "TILE_N": 64, "WORK_M": 4, "WORK_N": 4, "K_BLK": 16}, {"SPLIT": 32})


def _wino_wrw(r: int) -> list[tuple[str, dict | None]]:
    """The Winograd weight-gradient candidates of an r x r layer (none for other filter sizes)."""
    sids = {3: ("ConvWinograd3x3F2WrW", "ConvWinograd3x3F4WrW"), 5: ("ConvWinograd5x5F2WrW", "ConvWinograd5x5F3WrW")}
    return [(sid, v) for sid in sids.get(r, ()) for v in WINO_WRW_VARIANTS]


def _split_variants(direction, splits=(8, 32, 128)) -> list[tuple[str, dict | None]]:
    if direction is not W:
        return []
    return [("ConvDirectLocal", {"SPLIT": s}) for s in splits]


def rows() -> list[dict]:
    """The measurements in priority order: (name, problem, candidates [(solver id, params or None)])."""
    out = []
    mobilenet = [("mobilenet.dw32", 64, 32, 112, 1, True), ("mobilenet.dw128", 64, 128, 56, 1, False),
                 ("mobilenet.dw512", 64, 512, 14, 1, False), ("mobilenet.dw64s2", 64, 64, 112, 2, False)]
    for name, n, c, h, stride, sweep in mobilenet[:1]:
        for d in (F, B, W):
            cands = [("ConvDepthwise", None)] + ([("ConvDepthwise", v) for v in _dw_variants(d)] if sweep else [])
            cands += [("ConvDirectLocal", None), ("ConvIm2colGemm", None)]
            cands += [("ConvDirectNaive", None)] if d != W else []
            out.append({"name": name, "problem": problem_of(d, n, c, h, c, 3, 1, stride, c), "cands": cands})
    five = [("alexnet-v2.conv2", 128, 64, 27, 192), ("googlenet.5x5", 128, 48, 7, 128)]
    for name, n, c, h, k in five:
        for d in (F, B, W):
            wino = [(sid, v) for sid in ("ConvWinograd5x5F3", "ConvWinograd5x5F2") for v in (None, *WINO_VARIANTS)]
            cands = _wino_wrw(5) if d is W else wino
            cands += [("ConvFFT", v) for v in (None, *FFT_VARIANTS)]
            cands += [("ConvDirectLocal", None), ("ConvIm2colGemm", None)] + _split_variants(d, (16, 64))
            out.append({"name": name, "problem": problem_of(d, n, c, h, k, 5, 2), "cands": cands})
    accuracy = [("acc.16-32.1024x2048", 16, 32, ("ConvDirectLocal", "ConvIm2colGemm")),
                ("acc.1-2.1024x2048", 1, 2, ("ConvDirectNaive", "ConvDepthwise", "ConvDirectLocal", "ConvIm2colGemm"))]
    for name, c, k, sids in accuracy:
        out.append({"name": name, "problem": problem_of(W, 2, c, 1024, k, 3, 1, w=2048), "iters": 3,
                    "cands": [(s, None) for s in sids] + ([("ConvDirectLocal", {"SPLIT": 16})] if c > 1 else [])
                    + [(s, None) for s, _ in _wino_wrw(3)[::len(WINO_WRW_VARIANTS)]]})
    for set_name in ("alexnet", "vgg16"):
        n = networks.DEFAULT_BATCH[set_name]
        for layer in networks.layer_set(set_name):
            out.append({"name": f"{set_name}.{layer.name}", "problem": layer.problem(n, W),
                        "cands": [("ConvDirectLocal", None), ("ConvIm2colGemm", None), ("ConvGemm1x1", None)]
                        + _split_variants(W, (4, 16, 64)) + _wino_wrw(layer.r)
                        + ([("ConvFFT", v) for v in (None, *FFT_VARIANTS)] if layer.r >= 5 else [])})
    # 1x1 with few input channels (ResNet-50's 64->256 and 64->64 at 56x56): a reduction of 64 per output, so
    # the GEMM is bound by its output traffic; sampled grid points show what tuning can reach
    for name, c, k in (("resnet50.1x1-64-256", 64, 256), ("resnet50.1x1-64-64", 64, 64)):
        for d in (F, B, W):
            out.append({"name": name, "problem": problem_of(d, 128, c, 56, k, 1, 0),
                        "cands": [("ConvGemm1x1", None), ("ConvDirectLocal", None), ("ConvIm2colGemm", None)],
                        "sample": {"ConvGemm1x1": 16, "ConvDirectLocal": 8}})
    for name, n, c, h, stride, _ in mobilenet[1:]:
        for d in (F, B, W):
            out.append({"name": name, "problem": problem_of(d, n, c, h, c, 3, 1, stride, c),
                        "cands": [("ConvDepthwise", None), ("ConvDirectLocal", None)]})
    return out


def run_candidate(handle, problem, bufs, exact, sid, params, iters, warmup=1) -> dict:
    """One solver with params (None: perf DB or default; a partial dict: those keys over the default).
    iters 0: the time is the checked run's own (no further runs: slow devices)."""
    import pyopencl as cl
    solver = registry.get(sid)
    if not solver.is_applicable(problem, handle.info):
        return {"solver": sid, "skipped": solver.not_applicable_reason(problem, handle.info)}
    base, source = params_for(solver, problem, handle)
    full = {**base, **params} if params else base
    if not solver.is_valid(problem, full, handle.info):
        return {"solver": sid, "params": full, "skipped": solver.invalid_reason(problem, full, handle.info)}
    prepared = solution_plan(handle, problem, sid, full)
    role = OUTPUT_ROLE[problem.direction]
    cl.enqueue_copy(handle.queue, bufs[role], np.full(exact.size, np.nan, np.float32))
    ws = handle.scratch("workspace", max(prepared.solution.workspace_bytes, 4))
    run = lambda: prepared.enqueue({**bufs, "workspace": ws})
    events = run()
    out = np.empty(exact.shape, np.float32)
    cl.enqueue_copy(handle.queue, out, bufs[role])
    handle.finish()
    err = harness.max_error(out, exact)
    ms = harness.device_ms(handle, run, warmup=warmup, iters=iters) if iters else harness.events_ms(events)
    handle.finish()
    stages = harness.launch_ms(handle, run, runs=5)   # per launch (transforms, GEMM, ...): where the time goes
    return {"solver": sid, "params": full, "params_source": source if not params else "explicit", "time_ms": ms,
            "stage_ms": stages,
            "max_err": err, "tolerance": reference.tolerance(solver, problem), "rel_err":
            float(np.abs(out - exact).max() / max(np.abs(exact).max(), 1e-30)),
            "rms_err": float(np.sqrt(np.mean(np.square(out - exact))))}


def measure(handle, row, iters) -> dict:
    problem = row["problem"]
    rng = np.random.default_rng(0)
    t = {r: rng.standard_normal(d.dims, dtype=np.float32) for r, d in (("x", problem.x), ("w", problem.w),
                                                                      ("y", problem.y))}
    exact = float64_reference(problem, t)
    rec = {"name": row["name"], "direction": problem.direction.letter, "key": problem.key(),
           "driver": problem.driver_args(), "flops": problem.flops(), "reduction": problem.reduction_length()}
    try:
        rec["cudnn_fp32_ms"], got = cudnn_ms(problem, t, False, iters)
        rec["cudnn_fp32_err"] = harness.max_error(got, exact)
        rec["cudnn_fp32_rel_err"] = float(np.abs(got - exact).max() / max(np.abs(exact).max(), 1e-30))
    except Exception as exc:   # noqa: BLE001 - record and go on
        rec["cudnn_error"] = repr(exc)
    bufs = device_buffers(handle, t)
    rec["miopy"] = []
    sampled = [(sid, params) for sid, count in row.get("sample", {}).items()
               if registry.get(sid).is_applicable(problem, handle.info)
               for params in registry.get(sid).sample_space(problem, handle.info, count, seed=7)]
    for sid, params in [*row["cands"], *sampled]:
        try:
            rec["miopy"].append(run_candidate(handle, problem, bufs, exact, sid, params, iters))
        except Exception as exc:   # noqa: BLE001 - a failed candidate is data
            rec["miopy"].append({"solver": sid, "params": params, "error": f"{type(exc).__name__}: {exc}"[:500]})
    timed = [c for c in rec["miopy"] if "time_ms" in c and c["max_err"] <= c["tolerance"]]
    if timed:
        best = min(timed, key=lambda c: c["time_ms"])
        rec["best"] = {k: best[k] for k in ("solver", "params", "time_ms", "max_err")}
        if "cudnn_fp32_ms" in rec:
            rec["ratio_fp32"] = best["time_ms"] / rec["cudnn_fp32_ms"]
    return rec


def summary(records: list[dict]) -> dict:
    """Geometric means of miopy-best / cuDNN by family."""
    groups: dict[str, list[float]] = {}
    for r in records:
        if "ratio_fp32" not in r:
            continue
        fam = r["name"].split(".")[0] + "-" + r["direction"]
        groups.setdefault(fam, []).append(r["ratio_fp32"])
    return {k: {"geomean": harness.geomean(v), "count": len(v)} for k, v in groups.items()}


def merged(runs: list[dict]) -> list[dict]:
    """Several runs' rows as one list: a later run's row replaces an earlier one of the same layer and direction
    (each row's miopy and cuDNN times still come from one run); a row a budget cut short keeps the earlier one."""
    rows: dict = {}
    for run in runs:
        for r in run["rows"]:
            if "ratio_fp32" in r or (r["name"], r["direction"]) not in rows:
                rows[(r["name"], r["direction"])] = r
    return list(rows.values())


def page(sources: list[harness.Source], out: Path, target: float = 1.2, accuracy: float = 1e-3) -> list[str]:
    """docs/results/conv-families.md: every row's best against cuDNN (the runs merged, later rows replacing earlier
    ones of the same layer and direction), the geomeans by family, the backward-weights accuracy."""
    lines = harness.page_head(
        "Layer families against cuDNN, strict fp32", sources,
        "Depthwise (MobileNet), 5x5 filters (AlexNet-v2 conv2, GoogLeNet), backward-weights (the AlexNet and VGG-16 "
        "sets), 1x1 layers with few input channels (ResNet-50) and backward-weights accuracy on long reductions. "
        "miopy's best over its perf-DB or default params and explicit variants, each checked against float64 on the "
        "same inputs (Boda's hybrid error) and timed with profiling events; cuDNN strict fp32 through PyTorch in the "
        "same run as the row. The runs are listed oldest first: a later run's rows replace the earlier run's rows "
        "of the same layer and direction.")
    rows = merged([s.data for s in sources])
    timed = [r for r in rows if "ratio_fp32" in r and not r["name"].startswith("acc")]
    lines += harness.md_table(["layer", "dir", "cuDNN fp32 ms", "miopy best", "ms", "miopy / cuDNN"],
                              [[r["name"], r["direction"], f"{r['cudnn_fp32_ms']:.3f}", r["best"]["solver"],
                                f"{r['best']['time_ms']:.3f}", f"{r['ratio_fp32']:.2f}x"] for r in timed])
    lines += ["", "Geomean miopy / cuDNN by family and direction (rows): " + "; ".join(
        f"{k} {v['geomean']:.2f}x ({v['count']})" + ("" if v["geomean"] <= target else f" **above {target}x**")
        for k, v in summary(timed).items()) + ".", ""]
    for r in (r for r in rows if r["name"].startswith("acc")):
        ran = [m for m in r["miopy"] if "time_ms" in m and m["params_source"] == "default"]
        lines.append(f"Backward-weights accuracy, `{r['driver']}` ({r['reduction']} terms per weight), hybrid error "
                     "of the defaults against float64: " + ", ".join(
                         f"{m['solver']} {m['max_err']:.2e}" + ("" if m["max_err"] <= accuracy else " **above 1e-3**")
                         for m in ran) + f"; cuDNN {harness.fmt(r.get('cudnn_fp32_err'), '.2e')}.")
        lines.append("")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--budget", type=float, default=270.0, help="seconds; rows not started by then are skipped")
    ap.add_argument("--only", default="", help="comma-separated row-name prefixes")
    ap.add_argument("--lines", type=Path, help="write the selected rows' miopy-driver lines here (to tune them "
                    "into a perf DB: build_system_db --file) and stop")
    args = ap.parse_args(argv)
    todo = [r for r in rows() if not args.only or any(r["name"].startswith(p) for p in args.only.split(","))]
    if args.lines:
        unique = dict.fromkeys(f"miopy-driver {r['problem'].driver_command()}" for r in todo)
        args.lines.write_text("".join(line + "\n" for line in unique))
        print(f"wrote {len(unique)} driver lines to {args.lines}")
        return 0
    if not args.out:
        ap.error("--out is required (or --lines)")
    start = time.monotonic()
    handle = miopy.Handle()
    result = harness.new_record(handle, rows=[])
    for row in todo:
        if time.monotonic() - start > args.budget:
            result["rows"].append({"name": row["name"], "direction": row["problem"].direction.letter,
                                   "skipped": "time budget"})
            continue
        rec = measure(handle, row, row.get("iters", args.iters))
        result["rows"].append(rec)
        result["summary"] = summary(result["rows"])
        harness.write_json(args.out, result)
        _print(rec)
    result["elapsed_s"] = time.monotonic() - start
    harness.write_json(args.out, result)
    print(json.dumps(result.get("summary", {}), indent=1))
    return 0


def _print(rec: dict) -> None:
    cud = f"cudnn {rec.get('cudnn_fp32_ms', float('nan')):.3f} ms err {rec.get('cudnn_fp32_err', float('nan')):.1e}"
    best = rec.get("best")
    head = f"{rec['name']:22s} {rec['direction']} {cud}"
    if best:
        head += f" | best {best['solver']} {best['time_ms']:.3f} ms x{rec.get('ratio_fp32', float('nan')):.2f}"
    print(head, flush=True)
    for c in rec["miopy"]:
        if "time_ms" in c:
            print(f"    {c['solver']:20s} {c['time_ms']:9.3f} ms err {c['max_err']:.1e} rel {c['rel_err']:.1e} "
                  f"{c['params_source']} {c['params']}", flush=True)
        else:
            print(f"    {c['solver']:20s} {c.get('skipped') or c.get('error')}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
