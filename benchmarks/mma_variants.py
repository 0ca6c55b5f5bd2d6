"""ConvImplicitGemmMma's data-movement variants (CP_ASYNC, STAGES) beside its defaults and cuDNN, in one run.

    python benchmarks/mma_variants.py --out DIR [--budget-s 220] [--iters 20] [--jobs 12]
                                      [--layers NAME,...] [--dtypes FP32,FP16] [--directions FBW] [--dry-run]
    python benchmarks/mma_variants.py --report DIR/mma-variants-<device>.json

For each layer of benchmarks/tensor_cores.py's LAYERS (ResNet-50 3x3-256 and 1x1-64-256, VGG-16 3x3-128,
AlexNet conv2 5x5; N=32), both data types (fp32 under TF32, fp16) and each direction: cuDNN through PyTorch
(cudnn.benchmark; allow_tf32 for TF32, fp16 tensors for fp16), miopy's default params, and the VARIANTS below
made from the defaults (each repaired to the largest tile / slice that is valid, local memory included; the
params that ran are recorded). Every kernel of every variant is built first, in parallel (--jobs worker
processes of miopy.compile_pool on NVIDIA, whose compiler does not run in parallel within a process; threads
elsewhere); a build failure is recorded with the first 40 lines of its log and printed, never fatal. Each
built variant runs once on NaN-poisoned outputs and is checked against the float64 bound of
docs/tensor_cores.md before it is timed: a wrong one is reported (worst error as a fraction of the bound, NaN
count) and not timed. A crash is recorded and the run goes on.

DIR receives mma-variants-<device>.json, rewritten after every row (a timeout keeps what was done). The
table printed at the end gives each row's cuDNN and default times and each variant's time as a ratio to the
default (< 1 is faster), then the geomean per data type of default / cuDNN and best / cuDNN.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import json
import math
import pickle
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import miopy  # noqa: E402
from miopy import compile_pool, ptx_probe  # noqa: E402
from miopy.conv.solvers.mma import _TILES, CP_ASYNC_PROBE, mma_k  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tensor_cores import DIRECTIONS, LAYERS, SOLVER, bound, buffers, cudnn_ms, kernel_info, make, run_once, tensors  # noqa: E402

LOG_LINES = 40
BUILT_BY_WORKERS: list = []
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
}


def _variant(problem, info, base: dict, overrides: dict) -> tuple[dict | None, str | None]:
    """The default params with overrides; where that is invalid, the first valid point of: smaller slices,
    then smaller tiles (largest first; "*tile_first": the other way round), VECTOR_A on where it can be (fp16
    cp.async needs it), "*vector_b": the widest valid VECTOR_B. (params, None) or (None, why the first try was
    invalid)."""
    wanted = {k: v for k, v in overrides.items() if not k.startswith("*")}
    first = dict(base, **wanted)
    k_min = mma_k(problem.dtype)
    k_blks = [k for k in SOLVER.grid["K_BLK"] if k_min <= k <= base["K_BLK"]][::-1]
    if overrides.get("*deeper"):
        k_blks = [k for k in SOLVER.grid["K_BLK"] if k > base["K_BLK"]]
    tiles = [(base["M_BLK"], base["N_BLK"], base["WARPS_M"], base["WARPS_N"])]
    tiles += [t for t in _TILES if t[0] * t[1] <= base["M_BLK"] * base["N_BLK"] and t not in tiles]
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
    layers = [s for s in LAYERS if not args.layers or s[0] in args.layers.split(",")]
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


def build_all(handle, rows: list[dict], jobs: int) -> dict:
    """Build every kernel of every variant; spec -> None (built) or the error text. On NVIDIA's OpenCL (whose
    compiler does not run in parallel within a process) in miopy.compile_pool's worker processes, the calling
    thread building from the other end of the list; elsewhere in threads."""
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
    if not compile_pool.wanted(handle):
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            for spec, error in zip(list(specs), pool.map(here, list(specs))):
                specs[spec] = error
        return specs
    workers = compile_pool.pool_for(handle, jobs)._start()
    todo, take = collections.deque(specs), threading.Lock()

    def drive(worker) -> None:
        with worker.lock:
            if not worker.wait_ready(todo):
                return
            while True:
                with take:
                    if not todo:
                        return
                    spec = todo.popleft()
                try:
                    error, binary = worker.build(spec)
                except (EOFError, OSError, pickle.UnpicklingError):
                    worker.ready = False   # the spec is built here at the end
                    return
                if error is None:
                    try:
                        if handle.kernels.store_binaries:
                            handle.kernels.adopt(spec, binary)
                        else:
                            handle.kernels.kernel(spec)
                    except Exception as exc:  # noqa: BLE001
                        error = f"{type(exc).__name__}: {exc}"
                specs[spec] = error
                BUILT_BY_WORKERS.append(spec)
    threads = [threading.Thread(target=drive, args=(w,), daemon=True) for w in workers]
    for thread in threads:
        thread.start()
    while True:
        with take:
            if not todo:
                break
            spec = todo.pop()
        specs[spec] = here(spec)
    for thread in threads:
        thread.join()
    for spec, error in specs.items():
        if error is None and not handle.kernels.is_built(spec):   # a worker died with it, or its binary failed
            specs[spec] = here(spec)
    compile_pool.pool_for(handle, jobs).close()
    return specs


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
    t = tensors(problem, 0)
    bufs = buffers(handle, t)
    try:
        out["cudnn_ms"] = cudnn_ms(problem, t, iters)
    except Exception as exc:  # noqa: BLE001
        out["cudnn_error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
    exact, limit = bound(problem, t)
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
        try:
            got, call = run_once(handle, problem, v["params"], t, bufs)
            got64 = got.astype(np.float64)
            entry["nan"] = int(np.isnan(got64).sum())
            entry["worst_vs_bound"] = float(np.nanmax(np.abs(got64 - exact) / limit)) if entry["nan"] < got.size \
                else float("nan")
            if entry["nan"] or not entry["worst_vs_bound"] <= 1.0:
                entry["wrong"] = True
                continue
            entry["ms"] = handle.time_ms(call, warmup=2, iters=iters)
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
    for key, mark in (("same_as", "="), ("invalid", "inv"), ("build_error", "BUILD"), ("wrong", "WRONG"),
                      ("error", "CRASH"), ("skipped", "-")):
        if key in entry:
            return mark
    return "?"


def table(record: dict) -> str:
    names = ["default"] + list(VARIANTS)
    lines = ["layer dtype dir | cuDNN ms | default ms | " + " | ".join(names[1:]) + " | best/cuDNN",
             "(variant columns: ms / default ms; = same params as another column, inv invalid, BUILD failed to "
             "build, WRONG outside the bound, CRASH, - not reached)"]
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
                geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--budget-s", type=float, default=220, help="stop timing new variants after this (builds "
                    "and the row in progress finish)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=12, help="parallel kernel builds (worker processes on NVIDIA)")
    ap.add_argument("--layers", default="", help="comma-separated names from tensor_cores.LAYERS (default: all)")
    ap.add_argument("--dtypes", default="FP32,FP16")
    ap.add_argument("--directions", default="FBW")
    ap.add_argument("--report", help="print the table of a result file (e.g. one cut short by a timeout) and exit")
    ap.add_argument("--dry-run", action="store_true", help="list rows and variant params; build and run nothing "
                    "(off NVIDIA: as on a device with every PTX probe, 48 KiB local memory)")
    args = ap.parse_args(argv)
    if args.report:
        print(table(json.loads(Path(args.report).read_text())))
        return 0
    started = time.monotonic()
    deadline = started + args.budget_s
    handle = miopy.Handle()
    record: dict = {"device": handle.info.name, "device_id": handle.info.device_id, "ptx_mma": handle.info.ptx_mma,
                    "command": " ".join(sys.argv), "variants": VARIANTS, "rows": []}
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
    out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        out.write_text(json.dumps(record, indent=1, default=str))
    probe(handle, record)
    if CP_ASYNC_PROBE not in handle.info.ptx_mma:
        print("cp.async not supported here: every CP_ASYNC variant is invalid (see the probe log above)", flush=True)
    t0 = time.monotonic()
    built = build_all(handle, rows, args.jobs)
    record["build"] = {"kernels": len(built), "failed": sum(1 for e in built.values() if e),
                       "s": time.monotonic() - t0, "by_workers": len(BUILT_BY_WORKERS)}
    print(f"built {len(built)} kernels in {record['build']['s']:.1f} s ({len(BUILT_BY_WORKERS)} by worker "
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
