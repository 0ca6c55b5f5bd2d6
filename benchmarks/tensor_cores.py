"""Tensor-core solver (ConvImplicitGemmMma) against cuDNN, TF32 and fp16, on one GPU in one run.

    python -m benchmarks.tensor_cores --out DIR [--budget-s 270] [--parts probe,accuracy,timing]
                                      [--variants N] [--iters 20] [--find] [--worse-than RATIO:JSON]
    python -m benchmarks.tensor_cores --report FILE.json [...]   # the timing table of result files

probe     which PTX mma families the device compiles (miopy.ptx_probe), and how long the probe takes
accuracy  every direction x {fp32 data under TF32, fp16 data} on small and odd problems (pad, stride,
          dilation, groups, ragged tiles), default params and sampled grid points, outputs NaN-poisoned;
          error against a float64 reference as a fraction of the format's bound (docs/tensor_cores.md):
              |a - e| <= (2*u_in + (L + 2) * 2^-23) * sum|x||w| + u_out * |e|
          (u_in = 2^-11 for TF32 operands, 2^-10 where WGMMA truncates them, 0 for fp16 data; u_out = 2^-11 for
          fp16 outputs, 0 for fp32;
          L the reduction length), and cuDNN's error on the same inputs in the same mode, for scale
timing   real layers (ResNet-50, VGG-16, AlexNet, 1x1) in every direction: miopy's default params and
          grid variants beside cuDNN (cudnn.benchmark, allow_tf32 for TF32, fp16 tensors for fp16);
          efficiency against the dense tensor-core peak (H100 SXM: 495 TFLOP/s TF32, 990 fp16); with
          --find also find's pick in the row's mode (any solver the TF32 math mode or fp16 data allows, the
          strict ones too: what a user calling find gets) and its time (ratio_find)

DIR receives tensor-cores-<device>.json, rewritten after every measurement (a timeout keeps what was done).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl as cl

import miopy
from benchmarks import harness
from benchmarks.torch_conv import cudnn_ms as cudnn_conv_ms
from benchmarks.torch_conv import device_buffers, host_tensors, max_workspace, torch_call
from miopy import ptx_probe
from miopy.conv import networks
from miopy.conv.problem import OUTPUT_ROLE, ConvDesc, ConvProblem, Direction
from miopy.conv.solvers.mma import ConvImplicitGemmMma
from miopy.find import DEFAULT, params_for
from miopy.plan import plan_of
from miopy.tensor import TensorDesc

SOLVER = ConvImplicitGemmMma()
PEAK_TFLOPS = {"FP32": 495.0, "FP16": 990.0}   # dense tensor-core peaks, H100 SXM (TF32, fp16 with fp32 sums)
# (name, n, c, h, w, k, r, s, pad, stride, dilation, groups)
ACCURACY = [
    ("odd-3x3", 2, 6, 7, 9, 13, 3, 3, 1, 1, 1, 1),
    ("pad-stride-dil", 2, 6, 11, 12, 10, 3, 3, (1, 2), (2, 1), (1, 2), 1),
    ("5x5-s2", 3, 16, 17, 15, 24, 5, 5, 2, 2, 1, 1),
    ("groups", 2, 12, 9, 9, 18, 3, 3, 1, 1, 1, 3),
    ("1x1", 4, 64, 14, 14, 96, 1, 1, 0, 1, 1, 1),
    ("mid-3x3", 8, 64, 28, 28, 128, 3, 3, 1, 1, 1, 1),
    ("deep-K", 2, 256, 14, 14, 64, 3, 3, 1, 1, 1, 1),
]
LAYERS = [
    ("resnet50-3x3-256", 32, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1),
    ("resnet50-1x1-64-256", 32, 64, 56, 56, 256, 1, 1, 0, 1, 1, 1),
    ("vgg16-3x3-128", 32, 128, 112, 112, 128, 3, 3, 1, 1, 1, 1),
    ("alexnet-conv2-5x5", 32, 96, 27, 27, 256, 5, 5, 2, 1, 1, 1),
]
DIRECTIONS = {"F": Direction.FORWARD, "B": Direction.BACKWARD_DATA, "W": Direction.BACKWARD_WEIGHTS}
LETTERS = "FBW"


def make(direction: Direction, dtype: str, shape) -> ConvProblem:
    _, n, c, h, w, k, r, s, pad, stride, dil, groups = shape
    x, wd = TensorDesc(dtype, (n, c, h, w)), TensorDesc(dtype, (k, c // groups, r, s))
    try:
        conv = ConvDesc(pad, stride, dil, groups, math_mode="tf32")  # type: ignore[call-arg]
        return ConvProblem.create(direction, x, wd, conv)
    except TypeError:   # a tree without math modes yet: mark the problem by hand
        problem = ConvProblem.create(direction, x, wd, ConvDesc(pad, stride, dil, groups))
        object.__setattr__(problem, "math_mode", "tf32")
        return problem


def torch_result(problem, t, dtype, tf32: bool) -> np.ndarray:
    import torch
    harness.set_tf32(torch, tf32)
    args = (torch.from_numpy(np.ascontiguousarray(t[r])).to("cuda", dtype) for r in "xwy")
    return torch_call(problem, *args)().float().cpu().numpy()


def bound(problem, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """float64 exact result and the format's elementwise error bounds (see the module docstring): with TF32 operands
    rounded to nearest, and truncated (params where SOLVER.truncates_tf32)."""
    import torch
    exact = torch_result(problem, t, torch.float64, False).astype(np.float64)
    magnitude = torch_result(problem, {r: np.abs(a) for r, a in t.items()}, torch.float64, False)
    half = problem.dtype.value == "FP16"
    terms = problem.reduction_length()

    def limit(u_in: float) -> np.ndarray:
        u_out = 2.0**-11 if half else 0.0
        return (2 * u_in + (terms + 2) * 2.0**-23) * magnitude + u_out * np.abs(exact) + 1e-30
    return exact, limit(0.0 if half else 2.0**-11), limit(0.0 if half else 2.0**-10)


def limit_for(problem, params, limits: tuple) -> np.ndarray:
    """The bound of limits (bound's second and third values) that params' kernels are held to."""
    return limits[1] if SOLVER.truncates_tf32(problem, params) else limits[0]


def run_once(handle, problem, params, t, bufs) -> tuple[np.ndarray, object]:
    role = OUTPUT_ROLE[problem.direction]
    cl.enqueue_copy(handle.queue, bufs[role], np.full(t[role].shape, np.nan, t[role].dtype))
    solution = SOLVER.solution(problem, params)
    plan = plan_of(handle, problem, solution)
    ws = handle.alloc(max(solution.workspace_bytes, 4))
    call = lambda: plan.enqueue({**bufs, "workspace": ws})  # noqa: E731
    call()
    out = np.empty_like(t[role])
    cl.enqueue_copy(handle.queue, out, bufs[role])
    handle.finish()
    return out, call


def accuracy(handle, record, save, deadline, samples: int) -> None:
    import torch
    rows = record.setdefault("accuracy", [])
    for dtype in ("FP32", "FP16"):
        tdtype = torch.float16 if dtype == "FP16" else torch.float32
        for letter, direction in DIRECTIONS.items():
            for shape in ACCURACY:
                if time.monotonic() > deadline:
                    return
                problem = make(direction, dtype, shape)
                t = host_tensors(problem, 1)
                exact, *limits = bound(problem, t)
                cudnn = torch_result(problem, t, tdtype, True).astype(np.float64)
                default = SOLVER.default_params(problem, handle.info)
                points = [default] + SOLVER.sample_space(problem, handle.info, count=samples, seed=3)
                bufs = device_buffers(handle, t)
                for params in points:
                    limit = limit_for(problem, params, limits)
                    row = {"case": shape[0], "dtype": dtype, "direction": letter, "params": params,
                           "default": params == default}
                    try:
                        out, _ = run_once(handle, problem, params, t, bufs)
                        got = out.astype(np.float64)
                        row.update(nan=int(np.isnan(got).sum()),
                                   worst_vs_bound=float(np.nanmax(np.abs(got - exact) / limit)),
                                   max_error=float(harness.max_error(out, exact)),
                                   cudnn_worst_vs_bound=float(np.max(np.abs(cudnn - exact) / limit)),
                                   cudnn_max_error=float(harness.max_error(cudnn.astype(np.float32), exact)))
                        row["ok"] = row["nan"] == 0 and row["worst_vs_bound"] <= 1.0
                    except Exception as exc:  # noqa: BLE001 -- failures are data
                        row["error"] = f"{type(exc).__name__}: {str(exc)[:2000]}"
                        row["ok"] = False
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                save()


def find_pick(handle, problem, t, bufs, iters: int) -> dict:
    """What a user of this mode gets: find (accuracy-checked, every solver the math mode allows: the tensor-core
    one and the strict ones) and its winner's time, measured here like the variants."""
    from miopy.find import find_problem
    from miopy.plan import solution_plan
    started = time.monotonic()
    found = find_problem(handle, problem, buffers={**bufs, "workspace": handle.alloc(max_workspace(problem, handle))},
                         store=False)
    best = found[0]
    plan = solution_plan(handle, problem, best.solver_id, best.params)
    ws = handle.alloc(max(plan.solution.workspace_bytes, 4))
    ms = harness.device_ms(handle, lambda: plan.enqueue({**bufs, "workspace": ws}), iters=iters)
    return {"find_solver": best.solver_id, "find_ms": ms, "find_s": time.monotonic() - started,
            "find_ranking": {r.solver_id: r.time_ms for r in found}}


def cudnn_ms(problem, t, iters: int) -> float:
    """cuDNN in the row's mode: TF32 math for fp32 data, fp16 tensors for fp16."""
    return cudnn_conv_ms(problem, t, tf32=True, iters=iters)[0]


# Overrides tried on top of the default params, in this order (a feature the override makes invalid is
# switched off again; points still invalid are dropped).
OVERRIDES = [
    {}, {"VECTOR_A": False}, {"LDMATRIX": False}, {"TRANSFORM_W": False},
    {"M_BLK": 128, "N_BLK": 128, "WARPS_M": 2, "WARPS_N": 2, "STAGES": 2},
    {"M_BLK": 128, "N_BLK": 128, "WARPS_M": 2, "WARPS_N": 4, "STAGES": 2},
    {"M_BLK": 128, "N_BLK": 128, "K_BLK": 32, "WARPS_M": 2, "WARPS_N": 2, "STAGES": 1},
    {"M_BLK": 64, "N_BLK": 128, "WARPS_M": 2, "WARPS_N": 2}, {"M_BLK": 128, "N_BLK": 64, "WARPS_M": 2, "WARPS_N": 2},
    {"M_BLK": 256, "N_BLK": 128, "WARPS_M": 4, "WARPS_N": 2, "STAGES": 1},
    {"M_BLK": 64, "N_BLK": 64, "WARPS_M": 2, "WARPS_N": 2, "SPLIT": 16},
    {"M_BLK": 128, "N_BLK": 64, "WARPS_M": 2, "WARPS_N": 2, "SPLIT": 32},
]


def _repaired(problem, handle, params: dict) -> dict | None:
    """params, or params with VECTOR_A, LDMATRIX, then two stages switched off until valid; None if never."""
    for fix in ({}, {"VECTOR_A": False}, {"LDMATRIX": False}, {"STAGES": 1}):
        params = dict(params, **fix)
        if SOLVER.is_valid(problem, params, handle.info):
            return params
    return None


def variants(problem, handle, count: int) -> list[dict]:
    """Default params, then OVERRIDES of them, then random valid grid points (deduplicated); and beyond count the
    params a perf DB holds for the problem (tuned: miopy-tune, the system DB), where they differ from those."""
    base = SOLVER.default_params(problem, handle.info)
    tuned, source = params_for(SOLVER, problem, handle)
    out: list[dict] = []
    for params in [dict(base, **o) for o in OVERRIDES]:
        fixed = _repaired(problem, handle, params)
        if fixed is not None and fixed not in out:
            out.append(fixed)
    if len(out) < count:   # sampling walks the whole grid (2 s a problem): only where the overrides fall short
        for params in SOLVER.sample_space(problem, handle.info, count, seed=11):
            fixed = _repaired(problem, handle, params)
            if fixed is not None and fixed not in out:
                out.append(fixed)
    return out[:count] + ([tuned] if source != DEFAULT and tuned not in out[:count] else [])


def kernel_info(handle, solution) -> dict:
    """Private (spilled) and local memory of the main kernel as the driver reports them."""
    import pyopencl as cl
    kernel = handle.kernels.kernel(solution.launches[-1 if solution.launches[-1].spec.name == "conv_mma" else 0].spec)
    info = cl.kernel_work_group_info
    return {"private_bytes": kernel.get_work_group_info(info.PRIVATE_MEM_SIZE, handle.device),
            "local_bytes": kernel.get_work_group_info(info.LOCAL_MEM_SIZE, handle.device)}


def set_layers(names: str) -> list[tuple]:
    """The layers of named sets (miopy.conv.networks) at their benchmark batch sizes, as LAYERS rows."""
    out = []
    for name in names.split(","):
        batch = networks.DEFAULT_BATCH[name]
        out += [(f"{name}-{ly.name}", batch, ly.c, ly.h, ly.w, ly.k, ly.r, ly.s, ly.pad, ly.stride, 1, 1)
                for ly in networks.layer_set(name)]
    return out


def prebuild(handle, record, problems: list[ConvProblem], count: int) -> None:
    """Compile the kernels of every problem's default params (and, with count > 1, its variants) up front, in
    find_compile_pool's worker processes where find would use them (NVIDIA's compiler does not run in parallel
    within one process): one problem at a time, the timing loop waits on the compiler for most of its time."""
    from miopy import find_compile_pool
    if not find_compile_pool.wanted(handle):
        return
    started = time.monotonic()
    specs = list(dict.fromkeys(launch.spec for problem in problems for params in variants(problem, handle, count)
                               for launch in SOLVER.solution(problem, params).launches))
    specs_s = time.monotonic() - started
    pool = find_compile_pool.pool_for(handle, 12)
    errors = pool.build(specs)
    record["prebuild"] = {"kernels": len(specs), "failed": sum(e is not None for e in errors.values()),
                          "s": time.monotonic() - started, "specs_s": specs_s, **pool.stats,
                          "slowest": [{"s": round(t, 2), "kernel": label, "by": who}
                                      for t, label, who in pool.slowest(8)]}
    print(json.dumps({"prebuild": record["prebuild"]}), flush=True)


def timing(handle, record, save, deadline, count: int, iters: int, verify: bool, letters: str,
           layers: list[tuple], find: bool = False, only: set | None = None) -> None:
    """Time the tensor-core solver's variants (and with find, find's pick) beside cuDNN; only: the (layer, dtype,
    direction) rows to run (None: all)."""
    rows = record.setdefault("timing", [])
    prebuild(handle, record, [make(DIRECTIONS[letter], dtype, shape) for letter in letters for shape in layers
                              for dtype in ("FP32", "FP16") if only is None or (shape[0], dtype, letter) in only],
             count)
    for letter in letters:
        direction = DIRECTIONS[letter]
        for shape in layers:
            for dtype in ("FP32", "FP16"):
                if time.monotonic() > deadline:
                    return
                if only is not None and (shape[0], dtype, letter) not in only:
                    continue
                problem = make(direction, dtype, shape)
                t = host_tensors(problem, 0)
                bufs = device_buffers(handle, t)
                row = {"layer": shape[0], "dtype": dtype, "direction": letter, "flops": problem.flops(),
                       "cudnn_ms": cudnn_ms(problem, t, iters), "variants": []}
                check = None
                if verify:
                    exact, *limits = bound(problem, t)

                    def check(out, params, e=exact, lims=tuple(limits), prob=problem):
                        return float(np.max(np.abs(out.astype(np.float64) - e) / limit_for(prob, params, lims)))
                tuned, source = params_for(SOLVER, problem, handle)
                for params in variants(problem, handle, count):
                    if time.monotonic() > deadline:
                        break
                    entry = {"params": params, **({"source": source} if params == tuned else {})}
                    try:
                        started = time.monotonic()
                        out, call = run_once(handle, problem, params, t, bufs)
                        entry["first_call_s"] = time.monotonic() - started
                        entry["nan"] = int(np.isnan(out.astype(np.float32)).sum())
                        entry["ms"] = harness.device_ms(handle, call, iters=iters)
                        entry.update(kernel_info(handle, SOLVER.solution(problem, params)))
                        if check:
                            entry["worst_vs_bound"] = check(out, params)
                    except Exception as exc:  # noqa: BLE001
                        entry["error"] = f"{type(exc).__name__}: {str(exc)[:1000]}"
                    row["variants"].append(entry)
                timed = [v for v in row["variants"] if "ms" in v and v["nan"] == 0
                         and v.get("worst_vs_bound", 0.0) <= 1.0]
                if timed:
                    best = min(timed, key=lambda v: v["ms"])
                    row.update(default_ms=timed[0]["ms"] if row["variants"][0] is timed[0] else None,
                               best_ms=best["ms"], best_params=best["params"],
                               ratio_best=best["ms"] / row["cudnn_ms"],
                               tflops_best=problem.flops() / best["ms"] / 1e9,
                               pct_peak_best=100 * problem.flops() / best["ms"] / 1e9 / PEAK_TFLOPS[dtype],
                               cudnn_tflops=problem.flops() / row["cudnn_ms"] / 1e9)
                if find and time.monotonic() < deadline:
                    try:
                        row.update(find_pick(handle, problem, t, bufs, iters))
                        row["ratio_find"] = row["find_ms"] / row["cudnn_ms"]
                    except Exception as exc:  # noqa: BLE001
                        row["find_error"] = f"{type(exc).__name__}: {str(exc)[:1000]}"
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "variants"}), flush=True)
                save()


def summarize(record) -> None:
    for dtype in ("FP32", "FP16"):
        ratios = [r["ratio_best"] for r in record.get("timing", []) if r["dtype"] == dtype and "ratio_best" in r]
        if ratios:
            record.setdefault("summary", {})[dtype] = {
                "layers": len(ratios), "geomean_ratio_best": harness.geomean(ratios),
                "worst_ratio": max(ratios)}
        found = [r["ratio_find"] for r in record.get("timing", []) if r["dtype"] == dtype and "ratio_find" in r]
        if found:
            record.setdefault("summary", {})[dtype].update(
                find_layers=len(found), geomean_ratio_find=harness.geomean(found),
                worst_ratio_find=max(found), over_2x_find=sum(r > 2 for r in found))


def report(results: list[tuple[str, dict]]) -> str:
    """A markdown table of the timed rows of (file name, result) pairs (a later file's row replaces an earlier
    one's), with the geometric-mean ratio per dtype and direction, and per layer set."""
    rows: dict[tuple, tuple[str, dict]] = {}
    for name, data in results:
        for row in data.get("timing", []):
            if "best_ms" in row:
                rows[(row["layer"], row["dtype"], row["direction"])] = (name, row)
    lines = ["| layer | data | dir | miopy default ms | miopy best ms | cuDNN ms | best / cuDNN | TFLOP/s (best) "
             "| % of peak | source |", "|---|---|---|---|---|---|---|---|---|---|"]
    for (layer, dtype, letter), (source, row) in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        default = f"{row['default_ms']:.3f}" if row.get("default_ms") else "-"
        lines.append(f"| {layer} | {'TF32' if dtype == 'FP32' else 'fp16'} | {letter} | {default} | "
                     f"{row['best_ms']:.3f} | {row['cudnn_ms']:.3f} | {row['ratio_best']:.2f} | "
                     f"{row['tflops_best']:.0f} | {row['pct_peak_best']:.1f} | {source} |")
    lines.append("")
    for dtype in ("FP32", "FP16"):
        for letters in ("F", "B", "W", "FBW"):
            ratios = [r["ratio_best"] for (_, d, dr), (_, r) in rows.items() if d == dtype and dr in letters]
            if ratios:
                geo = harness.geomean(ratios)
                lines.append(f"- {'TF32' if dtype == 'FP32' else 'fp16'} {letters}: geomean best / cuDNN "
                             f"{geo:.2f} over {len(ratios)} layer-directions, worst {max(ratios):.2f}")
    sets = sorted({layer.split("-")[0] for layer, _, _ in rows})
    if len(sets) > 1:
        lines += ["", "By layer set (geomean best / cuDNN, worst in brackets):", "",
                  "| set | layers | " + " | ".join(f"{m} {d}" for m in ("TF32", "fp16") for d in "FBW") + " |",
                  "|---|---|" + "---|" * 6]
        for name in sets:
            cells = []
            for dtype in ("FP32", "FP16"):
                for letter in "FBW":
                    ratios = [r["ratio_best"] for (ly, d, dr), (_, r) in rows.items()
                              if ly.split("-")[0] == name and d == dtype and dr == letter]
                    cells.append(f"{harness.geomean(ratios):.2f} ({max(ratios):.2f})"
                                 if ratios else "-")
            layers = len({ly for ly, _, _ in rows if ly.split("-")[0] == name})
            lines.append(f"| {name} | {layers} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--budget-s", type=float, default=270)
    ap.add_argument("--parts", default="probe,accuracy,timing")
    ap.add_argument("--variants", type=int, default=6)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--accuracy-s", type=float, default=120)
    ap.add_argument("--report", nargs="+", help="print a markdown table of these result files and exit (the "
                    "results page: python -m benchmarks.report)")
    ap.add_argument("--sets", default="", help="time these layer sets (alexnet,boda,resnet50,vgg16) at their "
                    "benchmark batch sizes instead of the four default layers; --variants 1 times defaults only")
    ap.add_argument("--dry-run", action="store_true", help="list the timing problems and default params; run nothing")
    ap.add_argument("--directions", default="FBW", help="timing: directions in this order (F, B, W)")
    ap.add_argument("--verify", action="store_true", help="check every timed variant against the float64 bound")
    ap.add_argument("--ptx", action="store_true", help="write the PTX of the default forward kernels to --out")
    ap.add_argument("--samples", type=int, default=1, help="grid points checked beside the defaults")
    ap.add_argument("--find", action="store_true", help="timing: also run find in the row's mode (TF32 math mode / "
                    "fp16 data, every solver it allows) and time its pick beside cuDNN (ratio_find)")
    ap.add_argument("--worse-than", default="", help="RATIO:JSON: time only the rows whose best / cuDNN passed "
                    "RATIO in that earlier result file")
    args = ap.parse_args(argv)
    if args.report:
        print(report([(Path(p).name, harness.read_json(p)) for p in args.report]))
        return 0
    deadline = time.monotonic() + args.budget_s
    started = time.monotonic()
    handle = miopy.Handle()
    record = harness.new_record(handle, ptx_mma=handle.info.ptx_mma, handle_s=time.monotonic() - started)
    out = Path(args.out) / f"tensor-cores-{handle.info.name.replace(' ', '_')}.json"

    def save() -> None:
        summarize(record)
        harness.write_json(out, record)

    parts = args.parts.split(",")
    if args.dry_run:
        for shape in set_layers(args.sets) if args.sets else LAYERS:
            for letter in args.directions:
                for dtype in ("FP32", "FP16"):
                    problem = make(DIRECTIONS[letter], dtype, shape)
                    print(shape[0], letter, dtype, problem.key(), SOLVER.default_params(problem, handle.info))
        return 0
    if "probe" in parts:
        ptx_probe._MEMO.clear()
        record["probe"] = {}
        for name in ptx_probe._PROBES:
            t0 = time.monotonic()
            ok = ptx_probe._compiles(handle.device, ptx_probe.probe_source(name))
            record["probe"][name] = {"compiles": ok, "s": time.monotonic() - t0}
        save()
    if args.ptx:
        for dtype in ("FP32", "FP16"):
            problem = make(Direction.FORWARD, dtype, LAYERS[0])
            params = dict(SOLVER.default_params(problem, handle.info), LDMATRIX=True)
            spec = SOLVER.solution(problem, params).launches[-1].spec
            try:
                program = handle.kernels._compile(spec)
                (Path(args.out) / f"conv_mma-{dtype}.ptx").write_bytes(program.binaries[0])
            except Exception as exc:  # noqa: BLE001
                record.setdefault("ptx_errors", {})[dtype] = str(exc)[:3000]
    if "accuracy" in parts:
        accuracy(handle, record, save, min(deadline, time.monotonic() + args.accuracy_s), args.samples)
    if "timing" in parts:
        layers = set_layers(args.sets) if args.sets else LAYERS
        only = None
        if args.worse_than:
            limit, _, path = args.worse_than.partition(":")
            only = {(r["layer"], r["dtype"], r["direction"]) for r in json.loads(Path(path).read_text())["timing"]
                    if r.get("ratio_best", 0.0) > float(limit)}
        timing(handle, record, save, deadline, args.variants, args.iters, args.verify, args.directions, layers,
               args.find, only)
    record["elapsed_s"] = time.monotonic() - started
    save()
    print(json.dumps(record.get("summary", {}), indent=1))
    return 0


# -- the results page (docs/results/tensor-cores.md) ----------------------------------------------------------------
def page(sources: list[harness.Source], out: Path) -> list[str]:
    """docs/results/tensor-cores.md: the four layer sets in every direction, TF32 and fp16, beside cuDNN."""
    lines = harness.page_head(
        "Tensor cores against cuDNN: TF32 and fp16", sources,
        "`ConvImplicitGemmMma` (mma.sync / WGMMA through inline or patched PTX) on the layers of AlexNet, Boda's "
        "convolutions, ResNet-50 and VGG-16 at their benchmark batch sizes, in every direction, beside cuDNN through "
        "PyTorch in the same run (`cudnn.benchmark`; `allow_tf32` for fp32 data, fp16 tensors for fp16). miopy's "
        "time is its default params' (`--variants 1`), checked for NaNs; times are medians of profiled runs (OpenCL "
        "events for miopy, CUDA events for cuDNN). % of peak: against the dense tensor-core peak of an H100 SXM "
        f"({PEAK_TFLOPS['FP32']:.0f} TFLOP/s TF32, {PEAK_TFLOPS['FP16']:.0f} fp16). Ratio: miopy / cuDNN (lower "
        "is better).")
    return lines + report([(s.name, s.data) for s in sources]).splitlines() + [""]


def device_page(sources: list[harness.Source], out: Path) -> list[str]:
    """docs/results/tensor-cores-<device>.md: the four layer sets on one more device beside cuDNN, and (from a file
    named "*-before-*") the same rows timed by an earlier tree on that device: how the times moved."""
    before = [s for s in sources if "-before-" in s.name]
    after = [s for s in sources if s not in before]
    device = after[0].meta.get("device", "?") if after else "?"
    lines = harness.page_head(
        f"Tensor cores against cuDNN on an {device}", sources,
        "The run of [tensor-cores.md](tensor-cores.md) on another device: the same layers, directions, data types "
        "and method, its perf-DB records tuned elsewhere (defaults and the time models rule here).")
    lines += report([(s.name, s.data) for s in after]).splitlines() + [""]
    for base in before:
        for new in after:
            lines += compare(base, new)
    return lines


def compare(base: harness.Source, new: harness.Source) -> list[str]:
    """How the rows of new moved from base's (the same layers timed by two trees on one device): the ratio
    new / base of miopy's default time and of cuDNN's (its run-to-run spread), per data type and direction."""
    old = {(r["layer"], r["dtype"], r["direction"]): r for r in base.data.get("timing", []) if r.get("default_ms")}
    pairs = [(r, old[k]) for r in new.data.get("timing", []) if r.get("default_ms")
             and (k := (r["layer"], r["dtype"], r["direction"])) in old]
    same = sum(1 for r, b in pairs if r["best_params"] == b["best_params"])
    lines = [f"## {new.name} against {base.name}", "",
             f"{len(pairs)} layer-directions in both, {same} with the same params. Ratios are {new.name}'s time over "
             f"{base.name}'s (geometric mean, [lowest, highest]); cuDNN's column shows how much the same cuDNN "
             "kernels moved between the two runs.", "",
             "| data | dir | rows | miopy new / before | cuDNN new / before |", "|---|---|---|---|---|"]
    groups = [(d, letters) for d in ("FP32", "FP16") for letters in ("F", "B", "W", "FBW")]
    for dtype, letters in groups + [("any", "FBW")]:
        chosen = [(r, b) for r, b in pairs if (dtype == "any" or r["dtype"] == dtype) and r["direction"] in letters]
        if not chosen:
            continue
        ours = [r["default_ms"] / b["default_ms"] for r, b in chosen]
        theirs = [r["cudnn_ms"] / b["cudnn_ms"] for r, b in chosen]
        name = {"FP32": "TF32", "FP16": "fp16", "any": "both"}[dtype]
        lines.append(f"| {name} | {letters} | {len(chosen)} | {harness.geomean(ours):.3f} [{min(ours):.2f}, "
                     f"{max(ours):.2f}] | {harness.geomean(theirs):.3f} [{min(theirs):.2f}, {max(theirs):.2f}] |")
    big = [r["default_ms"] / b["default_ms"] for r, b in pairs if b["default_ms"] >= 0.1]
    if big:
        lines += ["", f"Rows of 0.1 ms or more ({len(big)}): geometric mean {harness.geomean(big):.3f}, highest "
                  f"{max(big):.3f}."]
    return lines + [""]


if __name__ == "__main__":
    sys.exit(main())
