"""Regenerate docs/benchmarks.md (tables + charts) from the suite's recorded JSON results.

    python benchmarks/report.py benchmarks/results/h200-forward.json [more.json ...]
"""
from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SET_TITLES = {"alexnet": "AlexNet, N=128 (Tsai et al., Table 2)", "boda": "Boda's 43 convolutions, batch 5",
              "resnet50": "ResNet-50 conv layers, N=32", "vgg16": "VGG-16 conv layers, N=32"}
DIR_NAMES = {"F": "forward", "B": "backward-data", "W": "backward-weights"}


def write_section(path: Path, name: str, lines: list[str]) -> None:
    """Replace the text between `<!-- name:begin -->` and `<!-- name:end -->` in path with lines (generated
    sections of hand-written docs pages)."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = path.read_text()
    start, stop = text.index(begin) + len(begin), text.index(end)
    path.write_text(text[:start] + "\n" + "\n".join(lines) + "\n" + text[stop:])
    print(f"wrote the {name} section of {path}")


def geomean(values) -> float:
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def layer_table(rows: list[dict]) -> list[str]:
    out = ["| layer | shape | solver | miopy ms | GFLOP/s | % peak | cuDNN fp32 ms | ratio fp32 | cuDNN TF32 ms | "
           "ratio TF32 | max err | cuDNN fp32 max err |", "|" + "---|" * 12]
    for r in rows:
        if "miopy" not in r:
            out.append(f"| {r['layer']} | `{r['shape']}` | error: {r.get('error', '?')} |" + " |" * 9)
            continue
        m = r["miopy"]
        cud = (f"{r['cudnn_fp32_ms']:.3f} | {r['ratio_fp32']:.2f} | {r['cudnn_tf32_ms']:.3f} | {r['ratio_tf32']:.2f} | "
               f"{r['max_err']:.1e} | {r['cudnn_fp32_max_err']:.1e}") if "cudnn_fp32_ms" in r else "| | | | |"
        out.append(f"| {r['layer']} | `{r['shape']}` | {m['solver']} | {m['time_ms']:.3f} | {m['gflops']:.0f} | "
                   f"{m['pct_peak']:.1f} | {cud} |")
    return out


def solver_efficiency(rows: list[dict], peak: float) -> list[str]:
    """Per solver: layers where it ran, median and best % of peak over those layers (from find's times)."""
    pct = defaultdict(list)
    for r in rows:
        for sid, ms in r.get("miopy", {}).get("all", {}).items():
            if ms and math.isfinite(ms):
                pct[sid].append(100 * r["flops"] / ms / 1e6 / peak)
    out = ["| solver | layers run | median % peak | best % peak | times chosen |", "|---|---|---|---|---|"]
    for sid, values in sorted(pct.items()):
        chosen = sum(1 for r in rows if r.get("miopy", {}).get("solver") == sid)
        values.sort()
        out.append(f"| {sid} | {len(values)} | {values[len(values) // 2]:.1f} | {values[-1]:.1f} | {chosen} |")
    return out


def chart(groups: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def targets(rows: list[dict], peak: float) -> list[str]:
    """The first performance pass's three targets, each checked from the recorded numbers."""
    fwd = [r for r in rows if r["direction"] == "F" and "miopy" in r]
    direct = [(r["layer"], 100 * r["flops"] / r["miopy"]["all"]["ConvDirectLocal"] / 1e6 / peak) for r in fwd
              if r["set"] == "alexnet" and r["layer"] != "conv1" and "ConvDirectLocal" in r["miopy"]["all"]]
    wino_rows = [r for r in fwd if "ConvWinograd3x3F4" in r["miopy"]["all"] and _c_k_at_least(r, 64)]
    wino_wins = [r for r in wino_rows if r["miopy"]["algorithm"] == "winograd"]
    worst = {d: max((r for r in rows if r["set"] in ("resnet50", "vgg16") and r["direction"] == d and "ratio_fp32" in r),
                    key=lambda r: r["ratio_fp32"], default=None) for d in "FBW"}
    out = ["| target | measured | met |", "|---|---|---|",
           "| ConvDirectLocal >= 60% of peak, AlexNet L2-L5 forward | "
           + ", ".join(f"{name} {pct:.1f}%" for name, pct in direct) + f" | {_yes(all(p >= 60 for _, p in direct))} |",
           f"| Winograd beats every non-Winograd solver, 3x3 stride-1 layers with C, K >= 64 (forward) | "
           f"won {len(wino_wins)} of {len(wino_rows)} | {_yes(len(wino_wins) == len(wino_rows))} |"]
    for d, r in worst.items():
        if r is not None:
            out.append(f"| nothing slower than 3x cuDNN fp32, ResNet-50 / VGG-16, {DIR_NAMES[d]} | worst "
                       f"{r['ratio_fp32']:.2f}x ({r['set']} {r['layer']}) | {_yes(r['ratio_fp32'] <= 3)} |")
    return out


def _c_k_at_least(r: dict, size: int) -> bool:
    flags = dict(zip(r["shape"].split()[::2], r["shape"].split()[1::2]))
    return (int(flags["-c"]) >= size and int(flags["-k"]) >= size and flags["-y"] == "3" and flags["-u"] == "1")


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def fusion_section(fusion: dict) -> list[str]:
    out = ["## Fusion: conv + bias + ReLU, fused versus unfused", "",
           f"`benchmarks/fusion.py` on {fusion['device']}, batch {fusion['batch']}: one FusionPlan against the "
           "fastest found convolution followed by separate bias and ReLU kernels.", "",
           "| net | layer | fused ms | unfused ms | conv alone ms | speedup | fused solver |", "|---|---|---|---|---|---|---|"]
    for r in fusion["rows"]:
        out.append(f"| {r['net']} | {r['name']} | {r['fused_ms']:.3f} | {r['unfused_ms']:.3f} | {r['conv_only_ms']:.3f} | "
                   f"{r['speedup']:.2f}x | {r['fused_solver']} |")
    out += ["", f"Geometric-mean speedup: {geomean(r['speedup'] for r in fusion['rows']):.2f}x.", ""]
    return out


def cold_section(cold: dict) -> list[str]:
    out = ["## Cold versus warm find", "", f"`benchmarks/cold_find.py`: {cold['set']} layer {cold['layer']}, each "
           "line a new process.", "", "| process | find s | compiled | disk hits | from find DB | chosen |",
           "|---|---|---|---|---|---|"]
    for r in cold["runs"]:
        out.append(f"| {r['process']} | {r['find_s']:.3f} | {r['compiled']} | {r['disk_hits']} | {r['from_find_db']} | "
                   f"{r['solver']} |")
    return out + [""]


def render(results: list[dict], sources: list[str], extras: list[dict] = ()) -> str:
    head = results[0]
    rows = [r for res in results for r in res["layers"]]
    groups = defaultdict(list)
    for r in rows:
        groups[(r["set"], r["direction"])].append(r)
    lines = ["# Benchmarks", "", "Generated by `python benchmarks/report.py " + " ".join(sources) + "` from the JSON "
             "that `benchmarks/suite.py` recorded; do not edit by hand.", "",
             f"Device: **{head['device']}** (`{head['device_id']}`), recorded {head['date']}. Measured in the same run: "
             f"fp32 FMA peak **{head['peak_gflops']:.0f} GFLOP/s**, copy bandwidth **{head['copy_gbs']:.0f} GB/s** "
             "(benchmarks/microbench.py).", "",
             "GFLOP/s count useful FLOPs only (2*N*K*P*Q*C*R*S/groups). Times are medians of profiled runs after "
             "warm-up: OpenCL profiling events for miopy, CUDA events for cuDNN (PyTorch, `cudnn.benchmark=True`; "
             "fp32 = `allow_tf32=False`, TF32 = default tensor-core math). Ratio = miopy time / cuDNN time (lower "
             "is better). Max err is Boda's hybrid |a-e|/(1+|e|) against a float64 reference computed on the GPU, for "
             "miopy's output and for cuDNN's strict-fp32 output.",
             "", "Commands: " + "; ".join(f"`{r['command']}`" for r in results), "", "## Summary", "",
             "| set | direction | layers | geomean ratio vs cuDNN fp32 | geomean ratio vs cuDNN TF32 | median % peak |",
             "|---|---|---|---|---|---|"]
    for (s, d), rs in groups.items():
        pcts = sorted(r["miopy"]["pct_peak"] for r in rs if "miopy" in r)
        lines.append(f"| {s} | {DIR_NAMES[d]} | {len(rs)} | {geomean(r.get('ratio_fp32') for r in rs):.2f} | "
                     f"{geomean(r.get('ratio_tf32') for r in rs):.2f} | {pcts[len(pcts) // 2] if pcts else float('nan'):.1f} |")
    lines += ["", f"Over all {len(rows)} layer-directions: geometric-mean ratio **{geomean(r.get('ratio_fp32') for r in rows):.2f}** "
              f"vs cuDNN fp32 and **{geomean(r.get('ratio_tf32') for r in rows):.2f}** vs cuDNN TF32 (the long-term goal: <= 1.0 "
              "vs fp32). Forward only: "
              f"{geomean(r.get('ratio_fp32') for r in rows if r['direction'] == 'F'):.2f} vs fp32."]
    lines += ["", "## Performance targets", ""] + targets(rows, head["peak_gflops"])
    lines += ["", "![miopy / cuDNN time per layer](benchmarks.png)", "", "## Efficiency of each solver", "",
              "Over every layer where find ran it (all directions):", ""]
    lines += solver_efficiency(rows, head["peak_gflops"])
    for extra in extras:
        lines += [""] + (fusion_section(extra) if "rows" in extra else cold_section(extra))
    for (s, d), rs in groups.items():
        lines += ["", f"## {SET_TITLES.get(s, s)}, {DIR_NAMES[d]}", ""] + layer_table(rs)
    chart(dict(groups), ROOT / "docs" / "benchmarks.png")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", help="suite JSON files; fusion.py and cold_find.py JSON files too")
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    args = ap.parse_args(argv)
    loaded = [json.loads(Path(p).read_text()) for p in args.results]
    results = [r for r in loaded if "layers" in r]
    extras = [r for r in loaded if "layers" not in r]
    Path(args.out).write_text(render(results, args.results, extras))


if __name__ == "__main__":
    main()
