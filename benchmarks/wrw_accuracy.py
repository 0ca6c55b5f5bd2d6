"""Backward-weights accuracy against float64 on long reductions (issue 16), on the default OpenCL device.

Every applicable backward-weights solver of the registry runs with this device's default params, with the
params the default rule gives on the H100 and with the shipped system perf DB's H100 record where one exists
(duplicates dropped, each checked valid here), on the same random normal inputs, its output NaN-poisoned
first (weak_families.run_candidate). Each row records Boda's hybrid error |a-e|/(1+|e|) (issue 16's target:
<= 1e-3 on reductions of 1-10 million terms), the error relative to the largest gradient, `sum_units` =
rms(a-e) / (u sqrt(L)) with u = 2^-24 and L the terms per weight (scale-free and much steadier than the
hybrid error, which is set by the few gradients near zero: sums that round like running sums of B terms give
about sqrt(B/6), a pairwise sum about 2.7 at 10 million terms), and the kernel time; where torch has a GPU,
cuDNN's strict fp32 error and time on the same inputs. The JSON is rewritten after each case, so a run cut
short by a timeout keeps the cases it finished.

Cases: issue 16's 16->32 channels, 3x3, pad 1, N=2 at 1024x2048 (4.2 million terms per weight) and 2048x2560
(10.5 million), AlexNet conv3 (192->384, 13x13, N=128) and AlexNet-v2 conv2 (64->192, 5x5 at 27x27, N=128),
where the Winograd transforms' rounding shows, a 1M-term 5x5 case and a depthwise one (16 channels at
1024x2048). --quick (for slow devices such as PoCL on two cores): 4->8
channels at the two long sizes (hybrid errors then lower, since 288 gradients include fewer near zero:
compare sum_units) and the AlexNet layers at N=16.

    python -m benchmarks.wrw_accuracy --out benchmarks/results/h100-wrw-accuracy.json
    python -m benchmarks.wrw_accuracy --quick --out benchmarks/results/pocl-wrw-accuracy.json

The results page is docs/results/wrw-accuracy.md (`python -m benchmarks.report`).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

import miopy
from benchmarks import harness
from benchmarks.torch_conv import cudnn_ms, device_buffers, float64_reference
from benchmarks.weak_families import problem_of, run_candidate
from miopy import db
from miopy.conv import registry
from miopy.conv.problem import Direction
from miopy.conv.solvers.winograd_wrw import accuracy_reason
from miopy.device import DeviceInfo

W = Direction.BACKWARD_WEIGHTS
UNIT = 2.0 ** -24   # fp32 unit roundoff
# name: (N, C, H, W, K, filter, pad[, groups])
FULL = {"acc4m": (2, 16, 1024, 2048, 32, 3, 1), "acc10m": (2, 16, 2048, 2560, 32, 3, 1),
        "alexnet.conv3": (128, 192, 13, 13, 384, 3, 1), "alexnet-v2.conv2": (128, 64, 27, 27, 192, 5, 2),
        "acc1m.5x5": (2, 16, 512, 1024, 32, 5, 2), "acc4m.dw16": (2, 16, 1024, 2048, 16, 3, 1, 16)}
QUICK = {"acc4m.c4k8": (2, 4, 1024, 2048, 8, 3, 1), "acc10m.c4k8": (2, 4, 2048, 2560, 8, 3, 1),
         "alexnet.conv3.n16": (16, 192, 13, 13, 384, 3, 1), "alexnet-v2.conv2.n16": (16, 64, 27, 27, 192, 5, 2),
         "acc1m.5x5.c4k8": (2, 4, 512, 1024, 8, 5, 2), "acc4m.dw16": (2, 16, 1024, 2048, 16, 3, 1, 16)}
# The H100 the shipped system perf DB was tuned on (its device id keys those records).
H100 = DeviceInfo(platform="NVIDIA CUDA", vendor="NVIDIA Corporation", name="NVIDIA H100 80GB HBM3",
                  driver_version="580.159.04", device_type="GPU", compute_units=132, local_mem_bytes=48 * 1024,
                  max_work_group_size=1024, max_work_item_sizes=(1024, 1024, 64), global_mem_bytes=80 << 30,
                  fp16=False, max_alloc_bytes=20 << 30)


def param_sets(solver, problem, dev) -> list[tuple[str, dict]]:
    """(source, params): this device's default, the H100's default and the system DB's H100 record, each once."""
    h100 = dataclasses.replace(H100, ptx_mma=dev.ptx_mma)
    record = db.system_perf_db().get(H100.device_id, problem.key(), solver.id)
    sets = [("default", solver.default_params(problem, dev))]
    if solver.is_applicable(problem, h100):
        sets.append(("h100-default", solver.default_params(problem, h100)))
    if record is not None:
        sets.append(("h100-system-db", dict(record.params)))
    out: list[tuple[str, dict]] = []
    for source, params in sets:
        if all(params != p for _, p in out):
            out.append((source, params))
    return out


def measure_case(handle, name, dims, solvers, iters) -> dict:
    n, c, h, w, k, r, pad, *groups = dims
    problem = problem_of(W, n, c, h, k, r, pad, groups=groups[0] if groups else 1, w=w)
    rng = np.random.default_rng(0)
    t = {role: rng.standard_normal(d.dims, dtype=np.float32)
         for role, d in (("x", problem.x), ("w", problem.w), ("y", problem.y))}
    start = time.perf_counter()
    exact = float64_reference(problem, t)
    length = problem.reduction_length()
    rec = {"name": name, "key": problem.key(), "reduction": length, "weights": int(exact.size),
           "reference_s": round(time.perf_counter() - start, 2), "solvers": []}
    rec.update(_cudnn(problem, t, exact, max(iters, 1)))
    bufs = device_buffers(handle, t)
    for solver in solvers:
        if not solver.is_applicable(problem, handle.info):
            continue
        for source, params in param_sets(solver, problem, handle.info):
            start = time.perf_counter()
            try:
                row = run_candidate(handle, problem, bufs, exact, solver.id, params, iters)
            except Exception as exc:   # noqa: BLE001 - a failed candidate is data
                row = {"solver": solver.id, "params": params, "error": f"{type(exc).__name__}: {exc}"[:300]}
            row.update(source=source, wall_s=round(time.perf_counter() - start, 2))
            if "rms_err" in row:
                row["sum_units"] = row["rms_err"] / (UNIT * math.sqrt(length))
            rec["solvers"].append(row)
            _print(name, row)
    return rec


def _cudnn(problem, t, exact, iters) -> dict:
    """cuDNN strict fp32 (torch) on the same inputs, where torch has a GPU: its time and errors."""
    if harness.load_torch() is None:
        return {}
    try:
        ms, got = cudnn_ms(problem, t, False, iters)
    except Exception as exc:   # noqa: BLE001 - recorded, not fatal
        return {"cudnn_error": f"{type(exc).__name__}: {exc}"[:300]}
    rms = float(np.sqrt(np.mean(np.square(got - exact))))
    out = {"cudnn_fp32_ms": ms, "cudnn_fp32_err": harness.max_error(got, exact),
           "cudnn_fp32_sum_units": rms / (UNIT * math.sqrt(problem.reduction_length()))}
    print(f"{'':22s} cuDNN strict fp32       hybrid {out['cudnn_fp32_err']:.2e} sum_units "
          f"{out['cudnn_fp32_sum_units']:6.1f} {ms:9.2f} ms", flush=True)
    return out


def _print(case: str, row: dict) -> None:
    if "max_err" not in row:
        print(f"{case:22s} {row['solver']:22s} {row.get('source', ''):15s} {row.get('skipped') or row.get('error')}")
        return
    print(f"{case:22s} {row['solver']:22s} {row['source']:15s} hybrid {row['max_err']:.2e} "
          f"rel {row['rel_err']:.2e} sum_units {row['sum_units']:6.1f} {row['time_ms']:9.2f} ms "
          f"{json.dumps(row['params'], sort_keys=True)}", flush=True)


def page(sources: list[harness.Source], out: Path) -> list[str]:
    """docs/results/wrw-accuracy.md: each run's table."""
    lines = harness.page_head(
        "Backward-weights accuracy on long reductions", sources,
        "Every applicable backward-weights solver with this device's default params, on random normal inputs, its "
        "output NaN-poisoned first: Boda's hybrid error |a-e|/(1+|e|) against float64 (target: <= 1e-3 on reductions "
        "of 1-10 million terms per weight), and cuDNN's strict fp32 error on the same inputs where the run had a GPU. "
        "\"refused\": the solver's accuracy rule keeps find from it on that case (measured with `--unrefused`).")
    for s in sources:
        lines += [f"## {s.meta.get('device')}: {s.name}", ""] + report(s.data) + [""]
    return lines


def report(data: dict) -> list[str]:
    """A markdown table of a result: each case's hybrid error per solver (this device's default params), marked
    where the solver's accuracy rule refuses the case, and cuDNN's."""
    solvers = list(dict.fromkeys(r["solver"] for c in data["cases"] for r in c["solvers"] if "max_err" in r))
    lines = ["| case | terms per weight | " + " | ".join(solvers) + " | cuDNN strict fp32 |",
             "|---|---|" + "---|" * (len(solvers) + 1)]
    for case in data["cases"]:
        cells = []
        for sid in solvers:
            row = next((r for r in case["solvers"] if r["solver"] == sid and r.get("source") == "default"
                        and "max_err" in r), None)
            units = getattr(registry.get(sid), "rounding_units", None)
            refused = units is not None and accuracy_reason(case["reduction"], units) is not None
            cells.append("-" if row is None else f"{row['max_err']:.1e}" + (" (refused)" if refused else ""))
        cudnn = f"{case['cudnn_fp32_err']:.1e}" if "cudnn_fp32_err" in case else "-"
        lines.append(f"| {case['name']} | {case['reduction']} | " + " | ".join(cells) + f" | {cudnn} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", help="print the table of a result file and exit")
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true", help="smaller cases for slow devices (see the docstring)")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all of the set)")
    ap.add_argument("--solvers", default="", help="comma-separated solver ids (default: every backward-weights one)")
    ap.add_argument("--iters", type=int, default=None, help="timed runs after one warm-up (default 3; --quick 0: "
                                                             "the checked run's own time)")
    ap.add_argument("--unrefused", action="store_true", help="run the Winograd weight gradients also where their "
                    "predicted error refuses them (rounding_units set to 0), to measure what they would give")
    args = ap.parse_args(argv)
    if args.report:
        print("\n".join(report(harness.read_json(args.report))))
        return 0
    if not args.out:
        ap.error("--out is required (unless --report)")
    cases = QUICK if args.quick else FULL
    names = args.cases.split(",") if args.cases else list(cases)
    iters = args.iters if args.iters is not None else (0 if args.quick else 3)
    solvers = ([registry.get(s) for s in args.solvers.split(",")] if args.solvers
               else [s for s in registry.ALL if W in s.directions])
    if args.unrefused:
        for solver in solvers:
            if hasattr(solver, "rounding_units"):
                solver.rounding_units = 0.0   # type: ignore[attr-defined]
    handle = miopy.Handle()
    result = harness.new_record(handle, unrefused=args.unrefused, cases=[])
    for name in names:
        result["cases"].append(measure_case(handle, name, {**FULL, **QUICK}[name], solvers, iters))
        harness.write_json(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
