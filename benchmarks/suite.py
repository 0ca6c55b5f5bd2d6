"""The GPU benchmark suite: miopy's find against cuDNN (through PyTorch) in one run.

For each layer set and direction: miopy's find (system perf DB params) picks a solver; we record its time,
useful GFLOP/s (2*N*K*P*Q*C*R*S/groups), percent of the fp32 peak measured in the same run, every other
solver's time, and cuDNN's time with cudnn.benchmark=True in strict fp32 and in default TF32, with ratios.
miopy's output and cuDNN's strict-fp32 output are both checked against a float64 reference computed on
the GPU (Boda's hybrid error |a-e|/(1+|e|)).

    python -m benchmarks.suite --sets alexnet,boda,resnet50,vgg16 --directions F --out benchmarks/results/x.json
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

import miopy
from benchmarks import harness
from benchmarks.torch_conv import LETTERS, cudnn_ms, device_buffers, float64_reference, host_tensors, max_workspace
from miopy.conv import networks, reference, registry
from miopy.conv.problem import OUTPUT_ROLE
from miopy.find import find_problem
from miopy.plan import solution_plan


def miopy_layer(handle, problem, tensors, iters: int) -> dict:
    """find, then time the winner over iters runs and return its output for the cross-check."""
    import pyopencl as cl
    bufs = device_buffers(handle, tensors)
    t0 = time.perf_counter()
    found = find_problem(handle, problem, buffers={**bufs, "workspace": handle.alloc(max_workspace(problem, handle))})
    find_s = time.perf_counter() - t0
    best = found[0]
    prepared = solution_plan(handle, problem, best.solver_id, best.params)
    ws = handle.alloc(prepared.solution.workspace_bytes)
    run = lambda: prepared.enqueue({**bufs, "workspace": ws})
    ms = harness.device_ms(handle, run, iters=iters)
    out = np.empty_like(tensors[OUTPUT_ROLE[problem.direction]])
    cl.enqueue_copy(handle.queue, out, bufs[OUTPUT_ROLE[problem.direction]])
    handle.finish()
    return {"solver": best.solver_id, "algorithm": best.algorithm, "time_ms": ms, "params": best.params,
            "params_source": best.params_source, "find_s": find_s,
            "all": {r.solver_id: r.time_ms for r in found}, "skipped": found.skipped}, out


def run_layer(handle, set_name, layer, n, direction, peak, iters) -> dict:
    problem = layer.problem(n, direction)
    tensors = host_tensors(problem, 0)
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
               ratio_tf32=mi["time_ms"] / tf32_ms, max_err=harness.max_error(out, exact),
               cudnn_fp32_max_err=harness.max_error(expect, exact),
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
    peak, bw = harness.fp32_peak_gflops(handle), harness.copy_bandwidth_gbs(handle)
    print(f"device {handle.info.name}: fp32 peak {peak:.0f} GFLOP/s, copy {bw:.0f} GB/s", flush=True)
    result = harness.new_record(handle, peak_gflops=peak, copy_gbs=bw, layers=[])
    for set_name in args.sets.split(","):
        layers = networks.layer_set(set_name)[: args.limit or None]
        for letter in args.directions.split(","):
            for layer in layers:
                rec = run_layer(handle, set_name, layer, networks.DEFAULT_BATCH[set_name], LETTERS[letter], peak,
                                args.iters)
                result["layers"].append(rec)
                _print(rec)
                harness.write_json(args.out, result)
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


# -- the results page (docs/results/conv-fp32.md) -------------------------------------------------------------------
SET_TITLES = {"alexnet": "AlexNet, N=128 (Tsai et al., Table 2)", "boda": "Boda's 43 convolutions, batch 5",
              "resnet50": "ResNet-50 conv layers, N=32", "vgg16": "VGG-16 conv layers, N=32"}
DIR_NAMES = {"F": "forward", "B": "backward-data", "W": "backward-weights"}
INTRO = ("GFLOP/s count useful FLOPs only (2*N*K*P*Q*C*R*S/groups). Times are medians of profiled runs after "
         "warm-up: OpenCL profiling events for miopy (find's pick, system perf DB params), CUDA events for cuDNN "
         "(PyTorch, `cudnn.benchmark=True`; fp32 = `allow_tf32=False`, TF32 = default tensor-core math). Ratio = "
         "miopy time / cuDNN time (lower is better). % peak is against the fp32 FMA peak measured in the same run. "
         "Max err is Boda's hybrid |a-e|/(1+|e|) against a float64 reference computed on the GPU, for miopy's "
         "output and for cuDNN's strict-fp32 output.")


def page(sources: list[harness.Source], out: Path) -> list[str]:
    """docs/results/conv-fp32.md: per device, the suite's summary, targets, chart, solver efficiency and per-layer
    tables; then cold against warm find (benchmarks.cold_find's results)."""
    from benchmarks import cold_find
    lines = harness.page_head("Convolutions against cuDNN, strict fp32", sources, INTRO)
    by_device: dict[str, list[harness.Source]] = defaultdict(list)
    for s in sources:
        if "layers" in s.data:
            by_device[s.meta["device"]].append(s)
    for device, runs in by_device.items():
        lines += device_section(device, runs, out)
    for s in sources:
        if "runs" in s.data:
            lines += cold_find.section(s)
    return lines


def device_section(device: str, runs: list[harness.Source], out: Path) -> list[str]:
    head = runs[0].data
    rows = [r for run in runs for r in run.data["layers"]]
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["set"], r["direction"])].append(r)
    chart_name = f"conv-fp32-{_slug(device)}.png"
    lines = [f"## {device}", "", f"From {', '.join(s.link() for s in runs)}. Measured in the same run: fp32 FMA "
             f"peak **{head['peak_gflops']:.0f} GFLOP/s**, copy bandwidth **{head['copy_gbs']:.0f} GB/s**.", "",
             "### Summary", ""]
    lines += harness.md_table(
        ["set", "direction", "layers", "geomean ratio vs cuDNN fp32", "geomean ratio vs cuDNN TF32", "median % peak"],
        [[s, DIR_NAMES[d], len(rs), f"{harness.geomean(r.get('ratio_fp32') for r in rs):.2f}",
          f"{harness.geomean(r.get('ratio_tf32') for r in rs):.2f}",
          f"{harness.median(r['miopy']['pct_peak'] for r in rs if 'miopy' in r):.1f}"]
         for (s, d), rs in groups.items()])
    lines += ["", f"Over all {len(rows)} layer-directions: geometric-mean ratio "
              f"**{harness.geomean(r.get('ratio_fp32') for r in rows):.2f}** vs cuDNN fp32 and "
              f"**{harness.geomean(r.get('ratio_tf32') for r in rows):.2f}** vs cuDNN TF32. Forward only: "
              f"{harness.geomean(r.get('ratio_fp32') for r in rows if r['direction'] == 'F'):.2f} vs fp32.", "",
              "### Performance targets", ""]
    lines += targets(rows, head["peak_gflops"])
    chart(dict(groups), out / chart_name)
    lines += ["", f"![miopy / cuDNN time per layer]({chart_name})", "", "### Efficiency of each solver", "",
              "Over every layer where find ran it (all directions):", ""]
    lines += solver_efficiency(rows, head["peak_gflops"])
    for (s, d), rs in groups.items():
        lines += ["", f"### {SET_TITLES.get(s, s)}, {DIR_NAMES[d]}", ""] + layer_table(rs)
    return lines + [""]


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in text.lower()).split())


def layer_table(rows: list[dict]) -> list[str]:
    table = []
    for r in rows:
        if "miopy" not in r:
            table.append([r["layer"], f"`{r['shape']}`", f"error: {r.get('error', '?')}"] + [""] * 9)
            continue
        m = r["miopy"]
        cudnn = ([f"{r['cudnn_fp32_ms']:.3f}", f"{r['ratio_fp32']:.2f}", f"{r['cudnn_tf32_ms']:.3f}",
                  f"{r['ratio_tf32']:.2f}", f"{r['max_err']:.1e}", f"{r['cudnn_fp32_max_err']:.1e}"]
                 if "cudnn_fp32_ms" in r else [""] * 6)
        table.append([r["layer"], f"`{r['shape']}`", m["solver"], f"{m['time_ms']:.3f}", f"{m['gflops']:.0f}",
                      f"{m['pct_peak']:.1f}", *cudnn])
    return harness.md_table(["layer", "shape", "solver", "miopy ms", "GFLOP/s", "% peak", "cuDNN fp32 ms",
                             "ratio fp32", "cuDNN TF32 ms", "ratio TF32", "max err", "cuDNN fp32 max err"], table)


def solver_efficiency(rows: list[dict], peak: float) -> list[str]:
    """Per solver: layers where it ran, median and best % of peak over those layers (from find's times)."""
    pct: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        for sid, ms in r.get("miopy", {}).get("all", {}).items():
            if ms and math.isfinite(ms):
                pct[sid].append(100 * r["flops"] / ms / 1e6 / peak)
    table = []
    for sid, values in sorted(pct.items()):
        chosen = sum(1 for r in rows if r.get("miopy", {}).get("solver") == sid)
        table.append([sid, len(values), f"{harness.median(values):.1f}", f"{max(values):.1f}", chosen])
    return harness.md_table(["solver", "layers run", "median % peak", "best % peak", "times chosen"], table)


def targets(rows: list[dict], peak: float) -> list[str]:
    """The first performance pass's three targets, each checked from the recorded numbers."""
    fwd = [r for r in rows if r["direction"] == "F" and "miopy" in r]
    direct = [(r["layer"], 100 * r["flops"] / r["miopy"]["all"]["ConvDirectLocal"] / 1e6 / peak) for r in fwd
              if r["set"] == "alexnet" and r["layer"] != "conv1" and "ConvDirectLocal" in r["miopy"]["all"]]
    wino_rows = [r for r in fwd if "ConvWinograd3x3F4" in r["miopy"]["all"] and _c_k_at_least(r, 64)]
    wino_wins = [r for r in wino_rows if r["miopy"]["algorithm"] == "winograd"]
    table = [["ConvDirectLocal >= 60% of peak, AlexNet L2-L5 forward",
              ", ".join(f"{name} {pct:.1f}%" for name, pct in direct), _yes(all(p >= 60 for _, p in direct))],
             ["Winograd beats every non-Winograd solver, 3x3 stride-1 layers with C, K >= 64 (forward)",
              f"won {len(wino_wins)} of {len(wino_rows)}", _yes(len(wino_wins) == len(wino_rows))]]
    for d in "FBW":
        worst = max((r for r in rows if r["set"] in ("resnet50", "vgg16") and r["direction"] == d
                     and "ratio_fp32" in r), key=lambda r: r["ratio_fp32"], default=None)
        if worst is not None:
            table.append([f"nothing slower than 3x cuDNN fp32, ResNet-50 / VGG-16, {DIR_NAMES[d]}",
                          f"worst {worst['ratio_fp32']:.2f}x ({worst['set']} {worst['layer']})",
                          _yes(worst["ratio_fp32"] <= 3)])
    return harness.md_table(["target", "measured", "met"], table)


def _c_k_at_least(r: dict, size: int) -> bool:
    flags = dict(zip(r["shape"].split()[::2], r["shape"].split()[1::2]))
    return int(flags["-c"]) >= size and int(flags["-k"]) >= size and flags["-y"] == "3" and flags["-u"] == "1"


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def chart(groups: dict, path: Path) -> None:
    """miopy / cuDNN time per layer, one panel per set and direction (nothing without matplotlib)."""
    plt = harness.pyplot()
    if plt is None:
        return
    keys = list(groups)
    fig, axes = plt.subplots(len(keys), 1, figsize=(12, 2.6 * len(keys)), squeeze=False)
    for ax, key in zip(axes[:, 0], keys):
        rows = [r for r in groups[key] if "ratio_fp32" in r]
        ax.bar(range(len(rows)), [r["ratio_fp32"] for r in rows], color="tab:blue", label="vs cuDNN fp32")
        ax.plot(range(len(rows)), [r["ratio_tf32"] for r in rows], "o", color="tab:orange", ms=3, label="vs cuDNN TF32")
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(rows)), [r["layer"] for r in rows], rotation=90, fontsize=6)
        ax.set_title(f"{SET_TITLES.get(key[0], key[0])}, {DIR_NAMES[key[1]]}: miopy time / cuDNN time", fontsize=9)
        ax.legend(fontsize=7)
    harness.save_figure(fig, path)


if __name__ == "__main__":
    sys.exit(main())
