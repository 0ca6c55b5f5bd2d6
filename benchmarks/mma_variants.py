"""ConvImplicitGemmMma's data-movement variants (CP_ASYNC, STAGES) beside its defaults and cuDNN, in one run.

    python -m benchmarks.mma_variants --out DIR [--budget-s 220] [--iters 20] [--jobs 12]
                                      [--layers NAME,...] [--sets SET,...] [--dtypes FP32,FP16] [--directions FBW]
                                      [--variants NAME,...] [--dry-run]
    python -m benchmarks.mma_variants --report DIR/mma-variants-<device>.json

For each layer of benchmarks.tensor_cores's LAYERS (ResNet-50 3x3-256 and 1x1-64-256, VGG-16 3x3-128,
AlexNet conv2 5x5; N=32), both data types (fp32 under TF32, fp16) and each direction: cuDNN through PyTorch
(cudnn.benchmark; allow_tf32 for TF32, fp16 tensors for fp16), miopy's default params, and the VARIANTS below
made from the defaults (each repaired to the largest tile / slice that is valid, local memory included; the
params that ran are recorded). Every kernel of every variant is built first, in parallel (--jobs worker
processes of miopy.find_compile_pool on NVIDIA, whose compiler does not run in parallel within a process; threads
elsewhere); a build failure is recorded with the first 40 lines of its log and printed, never fatal. Each
built variant runs once on NaN-poisoned outputs and is checked against the float64 bound of
docs/tensor_cores.md before it is timed: a wrong one is reported (worst error as a fraction of the bound, NaN
count) and not timed. A crash is recorded and the run goes on.

DIR receives mma-variants-<device>.json, rewritten after every row (a timeout keeps what was done). The
table printed at the end gives each row's cuDNN and default times and each variant's time as a ratio to the
default (< 1 is faster), then the geomean per data type of default / cuDNN and best / cuDNN. The results page
(docs/results/tensor-core-variants.md, `python -m benchmarks.report`) shows the result files the catalog names.

Runs that fit a 240 s device call (commands for the lead, on the GPU machine). Everything new, all 24 rows
(about 300 kernels; the first run built 362 in 44 s and finished 191 timed variants in 116 s):
    python -m benchmarks.mma_variants --out $OUT --budget-s 180 --variants \
        prev,split-half,split-double,cp2,cp3,cp3-tile,cp2-deep,splitk2,splitk4,cp2-splitk2,cp2-splitk4,deep-splitk2
or in two parts:
    # backward-weights: split-K defaults against the previous ones, fp16 cp.async on odd planes
    python -m benchmarks.mma_variants --out $OUT --directions W \
        --variants prev,split-half,split-double,cp2,cp3,cp3-tile
    # forward / backward-data split-K on the layers with few output tiles
    python -m benchmarks.mma_variants --out $OUT --directions FB --layers resnet50-3x3-256,alexnet-conv2-5x5 \
        --variants cp2,cp2-deep,splitk2,splitk4,cp2-splitk2,cp2-splitk4,deep-splitk2
"""
from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

import miopy
from benchmarks import harness
from benchmarks.tensor_cores import (
    DIRECTIONS,
    LAYERS,
    SOLVER,
    bound,
    cudnn_ms,
    kernel_info,
    limit_for,
    make,
    run_once,
    set_layers,
)
from benchmarks.torch_conv import device_buffers, host_tensors
from miopy import find_compile_pool, ptx_probe
from miopy.conv.solvers import mma
from miopy.conv.solvers.mma import CHOICES, PTX_CP_ASYNC, defaults, measured, mma_k

LOG_LINES = 40
WG_PARAMS = mma.WGMMA_PARAMS   # the wg-* variants; experiments.wgmma_ptxas
WG = {**WG_PARAMS, "*directions": "FB"}
WGW = {**mma.WGMMA_W_PARAMS, "K_BLK": 32, "*pad_odd": True, "*directions": "W"}
WGT = {**mma.WGMMA_W_PARAMS, "TRANSFORM_X": False, "PAD_DY": False, "K_BLK": 16, "*directions": "W"}
# name -> overrides of the default params; "*" keys are instructions to _variant (see there)
VARIANTS = {
    "cp2": {"CP_ASYNC": True, "STAGES": 2},
    "cp3": {"CP_ASYNC": True, "STAGES": 3},
    "cp4": {"CP_ASYNC": True, "STAGES": 4},
    # the same where they do not fit: a smaller tile before a thinner slice
    "cp3-tile": {"CP_ASYNC": True, "STAGES": 3, "*tile_first": True},
    "cp4-tile": {"CP_ASYNC": True, "STAGES": 4, "*tile_first": True},
    # a deeper slice: cp.async frees the registers that capped the fetch at 64 elements a lane
    "cp2-deep": {"CP_ASYNC": True, "STAGES": 2, "*deeper": True},
    # the pipeline without ldmatrix (whose gain was 0-10%)
    "cp3-noldm": {"CP_ASYNC": True, "STAGES": 3, "LDMATRIX": False},
    # B gathered as vectors along output rows (stride-1 layers whose W and Q allow it): widest valid vector
    "vb": {"*vector_b": True},
    "cp3-vb": {"CP_ASYNC": True, "STAGES": 3, "*vector_b": True},
    # backward-weights: the defaults before split-K's cost model (5% a split, SPLIT <= 32), half / twice the splits
    "prev": {"*previous": True, "*directions": "W"},
    "split-half": {"*split_scale": 0.5, "*directions": "W"},
    "split-double": {"*split_scale": 2, "*directions": "W"},
    # forward / backward-data split-K (the reduction a second kernel), on the register path and cp.async
    "splitk2": {"SPLIT": 2, "*directions": "FB"},
    "splitk4": {"SPLIT": 4, "*directions": "FB"},
    "cp2-splitk2": {"CP_ASYNC": True, "STAGES": 2, "SPLIT": 2, "*directions": "FB"},
    "cp2-splitk4": {"CP_ASYNC": True, "STAGES": 2, "SPLIT": 4, "*directions": "FB"},
    "deep-splitk2": {"CP_ASYNC": True, "STAGES": 2, "*deeper": True, "SPLIT": 2, "*directions": "FB"},
    # B from a channel-fastest copy of x / dy (TRANSFORM_X): 16-byte vectors of channels, fp16 by cp.async too
    "tx": {"TRANSFORM_X": True},
    "tx-cp2": {"TRANSFORM_X": True, "CP_ASYNC": True, "STAGES": 2},
    "tx-cp3": {"TRANSFORM_X": True, "CP_ASYNC": True, "STAGES": 3, "*tile_first": True},
    "tx-deep": {"TRANSFORM_X": True, "CP_ASYNC": True, "STAGES": 2, "*deeper": True, "*directions": "FB"},
    # fully-connected layers at small batch (a few GEMM columns, bound by streaming the weights): more splits and
    # taller tiles of one warp column put more weight bytes in flight
    "splitk8": {"SPLIT": 8, "*directions": "FB"},
    "splitk16": {"SPLIT": 16, "*directions": "FB"},
    "m64": {"*tile": (64, 16, 4, 1), "*directions": "FB"},
    "m64-splitk4": {"*tile": (64, 16, 4, 1), "SPLIT": 4, "*directions": "FB"},
    "m64-splitk8": {"*tile": (64, 16, 4, 1), "SPLIT": 8, "*directions": "FB"},
    "m128-splitk4": {"*tile": (128, 16, 4, 1), "SPLIT": 4, "*directions": "FB"},
    "cp4-splitk8": {"CP_ASYNC": True, "STAGES": 4, "SPLIT": 8, "*directions": "FB"},
    "m64-cp4-splitk4": {"*tile": (64, 16, 4, 1), "CP_ASYNC": True, "STAGES": 4, "SPLIT": 4, "*directions": "FB"},
    # fp16 backward-weights before the copy by cp.async over even planes (measured.CHOICES.wgrad_fp16_copy_stages)
    "w16-before": {"*module": {"WGRAD_FP16_COPY_STAGES": 0}, "*directions": "W"},
    # TF32 backward-weights before the split was doubled on halved tiles (measured.CHOICES.halved_tile_split)
    "w32-before": {"*module": {"HALVED_TILE_SPLIT": 1}, "*directions": "W"},
    # the score model's tiles before _narrow (one warp, no split)
    "t16": {"*tile": (16, 16, 1, 1), "SPLIT": 1, "*directions": "FB"},
    "t32": {"*tile": (32, 32, 1, 1), "SPLIT": 1, "*directions": "FB"},
    # backward-data reading the weights in place instead of the transposing copy
    "no-copy": {"TRANSFORM_W": False, "*directions": "B"},
    "no-copy-splitk8": {"TRANSFORM_W": False, "SPLIT": 8, "*directions": "B"},
    # backward-weights on 64x64 warp tiles (128 sums a lane; the defaults stop at 64, which spilled once)
    "w-t128": {"*tile": (128, 128, 2, 2), "*directions": "W"},
    "w-t128-cp2": {"*tile": (128, 128, 2, 2), "CP_ASYNC": True, "STAGES": 2, "*directions": "W"},
    "w-t128-cp3": {"*tile": (128, 128, 2, 2), "CP_ASYNC": True, "STAGES": 3, "*directions": "W"},
    "w-t256": {"*tile": (256, 128, 4, 2), "*directions": "W"},
    "w-t128x256": {"*tile": (128, 256, 2, 4), "*directions": "W"},
    # larger work-group tiles: more flops per byte each work-group reads from L2 (128x128: 64 fp16, 32 fp32)
    "t256x128": {"*tile": (256, 128, 4, 2)},
    "t128x256": {"*tile": (128, 256, 2, 4)},
    "t256x128-cp2": {"*tile": (256, 128, 4, 2), "CP_ASYNC": True, "STAGES": 2},
    "t128x256-cp2": {"*tile": (128, 256, 2, 4), "CP_ASYNC": True, "STAGES": 2},
    # fp16 backward-weights over odd planes: before dy's padded copy (PAD_DY), and that copy on other pipelines
    "pad-before": {"*module": {"WGRAD_FP16_PAD_ODD": False}, "*directions": "W"},
    "pad-cp2": {"PAD_DY": True, "TRANSFORM_X": True, "CP_ASYNC": True, "STAGES": 2, "VECTOR_A": True,
                "*directions": "W"},
    "pad-cp3-tile": {"PAD_DY": True, "TRANSFORM_X": True, "CP_ASYNC": True, "STAGES": 3, "VECTOR_A": True,
                     "*tile_first": True, "*directions": "W"},
    "pad-reg": {"PAD_DY": True, "TRANSFORM_X": True, "CP_ASYNC": False, "STAGES": 2, "VECTOR_A": True,
                "*directions": "W"},
    # backward-data of few input channels before COL2IM (the direct GEMM of C/G rows), and COL2IM's GEMM on other tiles
    # Hopper's wgmma (WGMMA): a warpgroup per 64 rows, both operands from local memory
    "no-wg": {"*module": {"WGMMA_MIN_COLUMNS": 1 << 40}, "*directions": "FB"},   # the mma.sync defaults
    "wg-t128": {**WG, "STAGES": 2, "*tile": (128, 128, 2, 1)},
    "wg-t128-s3": {**WG, "STAGES": 3, "*tile": (128, 128, 2, 1)},
    "wg-t128x256": {**WG, "STAGES": 2, "*tile": (128, 256, 2, 1)},
    "wg-t256x128": {**WG, "STAGES": 2, "*tile": (256, 128, 4, 1)},
    "wg-t128x64-s4": {**WG, "STAGES": 4, "*tile": (128, 64, 2, 1)},
    "wg-t64x128-s4": {**WG, "STAGES": 4, "*tile": (64, 128, 1, 1)},
    "wg-t128-s3-splitk2": {**WG, "STAGES": 3, "SPLIT": 2, "*tile": (128, 128, 2, 1)},
    "wg-t128-s3-splitk4": {**WG, "STAGES": 3, "SPLIT": 4, "*tile": (128, 128, 2, 1)},
    "wg-t128x64-s4-splitk2": {**WG, "STAGES": 4, "SPLIT": 2, "*tile": (128, 64, 2, 1)},
    # fp16 backward-weights on wgmma (B MN-major, wgmma's transposed B), the default's split ("*pad_odd": dy's padded
    # copy over odd planes)
    "wgw-t128-s3": {**WGW, "STAGES": 3, "*tile": (128, 128, 2, 1)},
    "wgw-t128-s4": {**WGW, "STAGES": 4, "*tile": (128, 128, 2, 1)},
    "wgw-t128-s3-split2x": {**WGW, "STAGES": 3, "*tile": (128, 128, 2, 1), "*split_scale": 2},
    "wgw-t128-s3-splithalf": {**WGW, "STAGES": 3, "*tile": (128, 128, 2, 1), "*split_scale": 0.5},
    "wgw-t128x64-s4": {**WGW, "STAGES": 4, "*tile": (128, 64, 2, 1)},
    "wgw-t64x128-s4": {**WGW, "STAGES": 4, "*tile": (64, 128, 1, 1)},
    "wgw-t128x256-s2": {**WGW, "STAGES": 2, "*tile": (128, 256, 2, 1)},
    "wgw-t256x128-s2": {**WGW, "STAGES": 2, "*tile": (256, 128, 4, 1)},
    # ... the defaults' rule (mma.wgmma_defaults) against mma.sync and other split targets
    "wgw-before": {"*module": {"WGMMA_W": False}, "*directions": "W"},
    # TF32 backward-weights on wgmma: B K-major, gathered from x in place (TF32 wgmma reads only K-major operands)
    "wgt-t128-s3": {**WGT, "STAGES": 3, "*tile": (128, 128, 2, 1)},
    "wgt-t128-s3-split2x": {**WGT, "STAGES": 3, "*tile": (128, 128, 2, 1), "*split_scale": 2},
    "wgt-t128-s3-splithalf": {**WGT, "STAGES": 3, "*tile": (128, 128, 2, 1), "*split_scale": 0.5},
    "wgt-t128x64-s4": {**WGT, "STAGES": 4, "*tile": (128, 64, 2, 1)},
    "wgt-t64x128-s4": {**WGT, "STAGES": 4, "*tile": (64, 128, 1, 1)},
    "tx-off": {"TRANSFORM_X": False, "*directions": "W"},
    "col2im-before": {"*module": {"COL2IM_CHANNELS": 0}, "*directions": "B"},
    "col2im-t64": {"*tile": (64, 128, 2, 2), "*directions": "B"},
    "col2im-t128x64": {"*tile": (128, 64, 2, 2), "*directions": "B"},
}


def previous_default(problem, info) -> dict:
    """The default params before split-K's cost model (commit c02cc8e): each split cost a flat 5% and the grid
    stopped at SPLIT=32. Forward / backward-data defaults did not change (SPLIT=1)."""
    saved = defaults._split_cost
    defaults._split_cost = lambda problem, params: 1 + 0.05 * (params["SPLIT"] - 1)
    try:
        valid = [c for c in defaults._candidates(problem, info, SOLVER.is_valid)
                 if c["SPLIT"] <= 32 and SOLVER.is_valid(problem, c, info)]
        best = max(valid, key=lambda c: defaults._score(problem, c, info))
        return defaults._pipelined(problem, best, info, SOLVER.is_valid)
    finally:
        defaults._split_cost = saved


def _variant(problem, info, base: dict, overrides: dict) -> tuple[dict | None, str | None]:
    """The default params with overrides; where that is invalid, the first valid point of: smaller slices,
    then smaller tiles (largest first; "*tile_first": the other way round), VECTOR_A on where it can be (fp16
    cp.async needs it), "*vector_b": the widest valid VECTOR_B, "*tile": (M_BLK, N_BLK, WARPS_M, WARPS_N) instead of
    the default's tile and smaller ones. "*previous": the previous defaults as they are;
    "*split_scale": the default's SPLIT times that; "*module": {NAME: value}: the defaults with mma's measured
    choices (measured.CHOICES.name) set so. (params, None) or (None, why the first try was invalid)."""
    if overrides.get("*previous"):
        return previous_default(problem, info), None
    if "*module" in overrides:    # the defaults with mma's measured choices set so (their names in upper case)
        saved = measured.CHOICES
        measured.CHOICES = dataclasses.replace(saved, **{k.lower(): v for k, v in overrides["*module"].items()})
        try:
            return SOLVER.default_params(problem, info), None
        finally:
            measured.CHOICES = saved
    wanted = {k: v for k, v in overrides.items() if not k.startswith("*")}
    if overrides.get("*pad_odd"):
        wanted["PAD_DY"] = mma.pad_dy_fits(problem)
    if "*split_scale" in overrides:
        wanted["SPLIT"] = max(1, int(base["SPLIT"] * overrides["*split_scale"]))
        if wanted["SPLIT"] == base["SPLIT"]:
            return None, f"SPLIT={base['SPLIT']} already"
    first = dict(base, **wanted)
    k_min = mma_k(problem.dtype)
    k_blks = [k for k in SOLVER.grid["K_BLK"] if k_min <= k <= wanted.get("K_BLK", base["K_BLK"])][::-1]
    if overrides.get("*deeper"):
        k_blks = [k for k in SOLVER.grid["K_BLK"] if k > base["K_BLK"]]
    tiles = [(base["M_BLK"], base["N_BLK"], base["WARPS_M"], base["WARPS_N"])]
    tiles += [t for t in CHOICES.tiles if t[0] * t[1] <= base["M_BLK"] * base["N_BLK"] and t not in tiles]
    if "*tile" in overrides:    # that tile (M_BLK, N_BLK, WARPS_M, WARPS_N) or none
        tiles = [tuple(overrides["*tile"])]
    pairs = [(tile, k) for tile in tiles for k in k_blks]
    if overrides.get("*tile_first"):
        pairs = [(tile, k) for k in k_blks for tile in tiles]
    widths = (8, 4, 2) if overrides.get("*vector_b") else (first["VECTOR_B"],)
    for (m, n, wm, wn), k in pairs:
        for vector in (True, False):
            for width in widths:
                point = dict(first, M_BLK=m, N_BLK=n, WARPS_M=wm, WARPS_N=wn, K_BLK=k, VECTOR_A=vector,
                             VECTOR_B=width)
                if SOLVER.is_valid(problem, point, info):
                    return point, None
    return None, SOLVER.invalid_reason(problem, dict(first, VECTOR_B=widths[-1]), info)


def rows_of(args) -> list[tuple]:
    pool = set_layers(args.sets) if args.sets else LAYERS
    layers = [s for s in pool if not args.layers or s[0] in args.layers.split(",")]
    # layer by layer (a run cut short by its budget loses whole layers, not a whole direction)
    return [(shape, letter, dtype) for shape in layers for letter in args.directions
            for dtype in args.dtypes.split(",")]


def plan_rows(info, args) -> list[dict]:
    """Per row: the problem and its variants (name, params or the reason there is none)."""
    out = []
    for shape, letter, dtype in rows_of(args):
        problem = make(DIRECTIONS[letter], dtype, shape)
        base = SOLVER.default_params(problem, info)
        variants = [{"name": "default", "params": base}]
        for name, overrides in VARIANTS.items():
            if args.variants and name not in args.variants.split(","):
                continue
            if letter not in overrides.get("*directions", "FBW"):
                variants.append({"name": name, "not_for": letter})
                continue
            params, why = _variant(problem, info, base, overrides)
            if params is not None and any(v.get("params") == params for v in variants):
                same = next(v["name"] for v in variants if v.get("params") == params)
                variants.append({"name": name, "same_as": same})
            elif params is None:
                variants.append({"name": name, "invalid": why})
            else:
                variants.append({"name": name, "params": params})
        out.append({"layer": shape[0], "shape": shape, "dtype": dtype, "direction": letter, "problem": problem,
                    "variants": variants})
    return out


def build_all(handle, rows: list[dict], jobs: int) -> tuple[dict, int]:
    """Build every kernel of every variant: (spec -> None (built) or the error text, how many worker processes
    built). On NVIDIA's OpenCL (whose compiler does not run in parallel within a process) in miopy.find_compile_pool's
    worker processes, the calling thread building from the other end of the list; elsewhere in threads."""
    specs: dict = {}
    for row in rows:
        for v in row["variants"]:
            if "params" in v:
                for launch in SOLVER.solution(row["problem"], v["params"]).launches:
                    specs[launch.spec] = None

    def here(spec) -> str | None:
        try:
            handle.kernels.kernel(spec)
            return None
        except Exception as exc:  # noqa: BLE001 -- a failing build is data
            return f"{type(exc).__name__}: {exc}"
    if not find_compile_pool.wanted(handle):
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            for spec, error in zip(list(specs), pool.map(here, list(specs))):
                specs[spec] = error
        return specs, 0
    pool = find_compile_pool.pool_for(handle, jobs)
    specs.update(pool.build(list(specs)))
    pool.close()
    return specs, pool.stats["by_workers"]


def log_head(text: str) -> str:
    return "\n".join(text.splitlines()[:LOG_LINES])


def probe(handle, record) -> None:
    """Which probes compile; for a refused one, the head of its build log."""
    import pyopencl as cl
    record["probe"] = {}
    for name in ptx_probe._PROBES:
        entry: dict = {"supported": name in handle.info.ptx_mma}
        if not entry["supported"]:
            try:
                cl.Program(cl.Context([handle.device]), ptx_probe.probe_source(name)).build()
                entry["rebuild"] = "built now (a stale cache entry?)"
            except Exception as exc:  # noqa: BLE001
                entry["log"] = log_head(str(exc))
                print(f"probe {name} refused:\n{entry['log']}", flush=True)
        record["probe"][name] = entry


def run_row(handle, row: dict, built: dict, iters: int, deadline: float) -> dict:
    problem = row["problem"]
    out = {k: row[k] for k in ("layer", "dtype", "direction")}
    out.update(key=problem.key(), flops=problem.flops(), variants=[])
    t = host_tensors(problem, 0)
    bufs = device_buffers(handle, t)
    try:
        out["cudnn_ms"] = cudnn_ms(problem, t, iters)
    except Exception as exc:  # noqa: BLE001
        out["cudnn_error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
    exact, *limits = bound(problem, t)
    for v in row["variants"]:
        entry = {k: v[k] for k in v}
        out["variants"].append(entry)
        if "params" not in v:
            continue
        if time.monotonic() > deadline:
            entry["skipped"] = "budget"
            continue
        errors = [built.get(launch.spec) for launch in SOLVER.solution(problem, v["params"]).launches]
        errors = [e for e in errors if e]
        if errors:
            entry["build_error"] = log_head(errors[0])
            continue
        limit = limit_for(problem, v["params"], limits)
        try:
            got, call = run_once(handle, problem, v["params"], t, bufs)
            got64 = got.astype(np.float64)
            entry["nan"] = int(np.isnan(got64).sum())
            entry["worst_vs_bound"] = float(np.nanmax(np.abs(got64 - exact) / limit)) if entry["nan"] < got.size \
                else float("nan")
            if entry["nan"] or not entry["worst_vs_bound"] <= 1.0:
                entry["wrong"] = True
                continue
            entry["ms"] = harness.device_ms(handle, call, iters=iters)
            entry.update(kernel_info(handle, SOLVER.solution(problem, v["params"])))
        except Exception as exc:  # noqa: BLE001 -- a crash is data
            entry["error"] = f"{type(exc).__name__}: {log_head(str(exc))}"
    timed = [e for e in out["variants"] if "ms" in e]
    if timed and "cudnn_ms" in out:
        best = min(timed, key=lambda e: e["ms"])
        out.update(best=best["name"], best_ms=best["ms"], ratio_best=best["ms"] / out["cudnn_ms"])
        if timed[0]["name"] == "default":
            out["ratio_default"] = timed[0]["ms"] / out["cudnn_ms"]
    return out


def cell(entry: dict, default_ms: float | None) -> str:
    if "ms" in entry:
        return f"{entry['ms'] / default_ms:.2f}" if default_ms and entry["name"] != "default" else f"{entry['ms']:.3f}"
    for key, mark in (("not_for", "n/a"), ("same_as", "="), ("invalid", "inv"), ("build_error", "BUILD"),
                      ("wrong", "WRONG"), ("error", "CRASH"), ("skipped", "-")):
        if key in entry:
            return mark
    return "?"


def variant_names(record: dict) -> list[str]:
    """The variants the record's rows carry, in the order of the run's VARIANTS (then any the script dropped)."""
    seen = dict.fromkeys(e["name"] for row in record["rows"] for e in row.get("variants", ()))
    order = list(record.get("variants") or VARIANTS)
    return ["default"] + [n for n in order if n in seen] + [n for n in seen if n != "default" and n not in order]


def table(record: dict) -> str:
    names = variant_names(record)
    lines = ["layer dtype dir | cuDNN ms | default ms | " + " | ".join(names[1:]) + " | best/cuDNN",
             "(variant columns: ms / default ms; = same params as another column, inv invalid, n/a not for this "
             "direction, BUILD failed to build, WRONG outside the bound, CRASH, - not reached)"]
    for row in record["rows"]:
        if "row_error" in row:
            lines.append(f"{row['layer']} {row['dtype']} {row['direction']} | ROW FAILED: {row['row_error'][:300]}")
            continue
        by = {e["name"]: e for e in row["variants"]}
        default_ms = by.get("default", {}).get("ms")
        cells = [cell(by[n], default_ms) if n in by else "?" for n in names]
        cudnn = f"{row['cudnn_ms']:.3f}" if "cudnn_ms" in row else "ERR"
        ratio = f"{row['ratio_best']:.2f} ({row['best']})" if "ratio_best" in row else "-"
        lines.append(f"{row['layer']} {row['dtype']} {row['direction']} | {cudnn} | " + " | ".join(cells)
                     + f" | {ratio}")
    for dtype in ("FP32", "FP16"):
        for key in ("ratio_default", "ratio_best"):
            ratios = [r[key] for r in record["rows"] if r["dtype"] == dtype and key in r]
            if ratios:
                geo = harness.geomean(ratios)
                lines.append(f"{'TF32' if dtype == 'FP32' else 'fp16'} geomean {key[6:]} / cuDNN {geo:.2f} over "
                             f"{len(ratios)} rows, worst {max(ratios):.2f}")
    wrong = [(row, e) for row in record["rows"] for e in row["variants"] if e.get("wrong")]
    for row, e in wrong[:8]:
        lines.append(f"WRONG {row['layer']} {row['dtype']} {row['direction']} {e['name']}: "
                     f"{e['worst_vs_bound']:.3g} x the bound, {e['nan']} NaN, params {e['params']}")
    failures = [(row, e) for row in record["rows"] for e in row["variants"] if "build_error" in e or "error" in e]
    for row, e in failures[:3]:
        lines.append(f"--- {row['layer']} {row['dtype']} {row['direction']} {e['name']} {e.get('params')}:\n"
                     + (e.get("build_error") or e.get("error", "")))
    return "\n".join(lines)


PARAM_KEYS = ("M_BLK", "N_BLK", "K_BLK", "WARPS_M", "WARPS_N", "STAGES", "SPLIT")
FLAGS = ("CHANNEL_BLOCKS", "TRANSFORM_W", "LDMATRIX", "VECTOR_A", "CP_ASYNC")


def short_params(params: dict) -> str:
    """M_BLKxN_BLKxK_BLK, warps, stages, split and the flags that are on (the docs table's params column)."""
    text = (f"{params['M_BLK']}x{params['N_BLK']}x{params['K_BLK']} w{params['WARPS_M']}x{params['WARPS_N']} "
            f"s{params['STAGES']}" + (f" split{params['SPLIT']}" if params.get("SPLIT", 1) > 1 else ""))
    flags = [name.lower() for name in FLAGS if params.get(name)]
    if params.get("VECTOR_B"):
        flags.append(f"vb{params['VECTOR_B']}")
    if params.get("TRANSFORM_X"):
        flags.append("tx")
    return text + (" " + ",".join(flags) if flags else "")


def markdown(record: dict, source: str) -> list[str]:
    """One result file as a markdown table (the --report table's cells), its geomeans and the default and best
    params of each row."""
    names = variant_names(record)
    meta = harness.meta_of(record)
    out = [f"From `{source}` ({meta.get('device', '?')}; `{meta.get('command', '?')}`). Variant columns: "
           "time / default time (< 1 faster); `=` same params as another column, `inv` invalid, `n/a` not for "
           "this direction, `-` not reached.", "",
           "| layer | data | dir | cuDNN ms | default ms | " + " | ".join(names[1:]) + " | best / cuDNN | default "
           "params | best params |", "|" + "---|" * (len(names) + 7)]
    for row in record["rows"]:
        data = "TF32" if row["dtype"] == "FP32" else "fp16"
        if "row_error" in row:
            out.append(f"| {row['layer']} | {data} | {row['direction']} | row failed |" + " |" * (len(names) + 3))
            continue
        by = {e["name"]: e for e in row["variants"]}
        default = by.get("default", {})
        cells = [cell(by[n], default.get("ms")) if n in by else "" for n in names]
        best = by.get(row.get("best", ""), {})
        best_params = best.get("params") or by.get(best.get("same_as", ""), {}).get("params")
        cudnn = f"{row['cudnn_ms']:.3f}" if "cudnn_ms" in row else "ERR"
        ratio = f"{row['ratio_best']:.2f} ({row['best']})" if "ratio_best" in row else "-"
        out.append(f"| {row['layer']} | {data} | {row['direction']} | {cudnn} | " + " | ".join(cells) + f" | {ratio} | "
                   + (short_params(default["params"]) if "params" in default else "") + " | "
                   + (short_params(best_params) if best_params else "") + " |")
    out.append("")
    for line in table(record).splitlines():
        if " geomean " in line:
            out.append(f"- {line}")
    return out


def page(sources: list[harness.Source], out: Path) -> list[str]:
    """docs/results/tensor-core-variants.md: each result file's table."""
    lines = harness.page_head(
        "Tensor cores: data-movement and split variants", sources,
        "`benchmarks.mma_variants`: for each layer, data type (fp32 data under TF32, fp16) and direction, cuDNN "
        "through PyTorch, `ConvImplicitGemmMma`'s default params and variants made from them (each repaired to the "
        "largest valid tile, checked against the float64 bound before it is timed). Times are medians of profiled "
        "runs; variant columns are the variant's time / the default's.")
    for s in sources:
        lines += [f"## {s.name}", ""] + markdown(s.data, s.name) + [""]
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--budget-s", type=float, default=220, help="stop timing new variants after this (builds "
                    "and the row in progress finish)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=12, help="parallel kernel builds (worker processes on NVIDIA)")
    ap.add_argument("--layers", default="", help="comma-separated names from tensor_cores.LAYERS (default: all)")
    ap.add_argument("--sets", default="", help="the layers of these sets (miopy.conv.networks) at their benchmark "
                                              "batch sizes instead of LAYERS (--layers picks among them)")
    ap.add_argument("--dtypes", default="FP32,FP16")
    ap.add_argument("--directions", default="FBW")
    ap.add_argument("--variants", default="", help="comma-separated names from VARIANTS (default: all)")
    ap.add_argument("--report", help="print the table of a result file (e.g. one cut short by a timeout) and exit")
    ap.add_argument("--dry-run", action="store_true", help="list rows and variant params; build and run nothing "
                    "(off NVIDIA: as on a device with every PTX probe, 48 KiB local memory)")
    args = ap.parse_args(argv)
    if args.report:
        print(table(harness.read_json(args.report)))
        return 0
    unknown = set(filter(None, args.variants.split(","))) - set(VARIANTS)
    if unknown:
        ap.error(f"unknown variants {sorted(unknown)}; known: {', '.join(VARIANTS)}")
    started = time.monotonic()
    deadline = started + args.budget_s
    handle = miopy.Handle()
    record = harness.new_record(handle, ptx_mma=handle.info.ptx_mma, variants=VARIANTS, rows=[])
    info = handle.info
    if args.dry_run and not info.ptx_mma:   # describe the variants an NVIDIA device with every probe would run
        info = dataclasses.replace(info, ptx_mma=tuple(ptx_probe._PROBES), local_mem_bytes=48 << 10,
                                   compute_units=132, max_work_group_size=1024)
    rows = plan_rows(info, args)
    if args.dry_run:
        for row in rows:
            print(row["layer"], row["dtype"], row["direction"], row["problem"].key())
            for v in row["variants"]:
                print("   ", v["name"], v.get("params") or v.get("same_as") or v.get("invalid"))
        return 0
    out = Path(args.out) / f"mma-variants-{handle.info.name.replace(' ', '_')}.json"

    def save() -> None:
        harness.write_json(out, record)
    probe(handle, record)
    if PTX_CP_ASYNC not in handle.info.ptx_mma:
        print("cp.async not supported here: every CP_ASYNC variant is invalid (see the probe log above)", flush=True)
    t0 = time.monotonic()
    built, by_workers = build_all(handle, rows, args.jobs)
    record["build"] = {"kernels": len(built), "failed": sum(1 for e in built.values() if e),
                       "s": time.monotonic() - t0, "by_workers": by_workers}
    print(f"built {len(built)} kernels in {record['build']['s']:.1f} s ({by_workers} by worker "
          f"processes), {record['build']['failed']} failed", flush=True)
    save()
    for row in rows:
        if time.monotonic() > deadline:
            record["rows"].append({k: row[k] for k in ("layer", "dtype", "direction")}
                                  | {"variants": [dict(v, skipped="budget") for v in row["variants"]]})
            continue
        try:
            result = run_row(handle, row, built, args.iters, deadline)
        except Exception as exc:  # noqa: BLE001 -- e.g. the reference or cuDNN ran out of memory
            result = {k: row[k] for k in ("layer", "dtype", "direction")}
            result.update(row_error=f"{type(exc).__name__}: {log_head(str(exc))}", variants=[])
        record["rows"].append(result)
        print(json.dumps({k: v for k, v in result.items() if k != "variants"}), flush=True)
        save()
    record["elapsed_s"] = time.monotonic() - started
    save()
    print(table(record))
    print(f"wrote {out} ({record['elapsed_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
