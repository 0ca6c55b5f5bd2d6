"""Write the results pages, docs/results/*.md (and their plots), from the recorded results in benchmarks/results/.

    python -m benchmarks.report                   # every page, and docs/results/index.md
    python -m benchmarks.report --pages cpu,find  # some pages (and the index)
    python -m benchmarks.report --check           # exit 1 when a page differs from what the results give

benchmarks/results/catalog.json is the one list: which result files each page shows ("pages", in order), and
what is known of every kept file ("files": what it is, its former name, device, date, command and commit where
the file itself does not record them, and the hand-written docs that cited it). A page renderer lives beside the
benchmark that records its data (`page(sources, out_dir) -> lines`); this module only loads, dispatches and
writes. Plots need matplotlib (the `bench` extra); without it the pages are written the same and the PNGs kept.
"""
from __future__ import annotations

import argparse
import difflib
import importlib
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks import harness

DOCS = harness.ROOT / "docs" / "results"
CATALOG = harness.RESULTS / "catalog.json"


def find_page(sources: list[harness.Source], out: Path) -> list[str]:
    """docs/results/find.md: cold find, compile times, find's accuracy check, the immediate-mode model, tuning."""
    from benchmarks import cold_find_sweep, compile_times, find_check_cost, heuristic_eval, tune_speed
    parts: list[tuple[str, str, Callable[[harness.Source], list[str]], str]] = [
        ("cold-find-sweep", "Cold find per layer",
         cold_find_sweep.section, "Each configuration in a new process with empty caches (kernel binaries, the "
         "driver's JIT cache, user DB), one tiny find first to pay the process's one-time costs, then every sampled "
         "layer found once in normal mode."),
        ("compile-times", "Cold compile of one find's kernels", compile_times.section,
         "Each kernel of one layer's find built from empty caches: one at a time in the process (serial), through "
         "the compile pool's worker processes, and in threads."),
        ("find-check-cost", "What find's accuracy check costs", find_check_cost.section,
         "The same find with its accuracy check on and off, every kernel compiled already."),
        ("heuristic-eval", "Immediate mode against find", heuristic_eval.section,
         "How often the shape rule's and the trained model's first choice is within 1.1x / 1.3x of find's best, on "
         "the find records of the system DB (the model on held-out layers)."),
        ("tune-speed", "Tuning speed: the old way against the fast strategy", tune_speed.section,
         "Each (layer, solver family) tuned from cold caches the old way (local search, a budget of points) and "
         "the new (the fast strategy, a budget of seconds); the winners timed again side by side."),
        ("tuned-records", "The system perf DB's tuned records", tune_speed.records_section,
         "Each record `miopy.cli.build_system_db --json` wrote: its solver's default and tuned time."),
    ]
    lines = harness.page_head("Find and tuning: cold find, compile times, checks, immediate mode, tuning speed",
                              sources)
    for key, title, section, intro in parts:
        chosen = [s for s in sources if key in s.name]
        if chosen:
            lines += [f"## {title}", "", intro, ""]
            for s in chosen:
                lines += section(s)
    return lines


PAGES: dict[str, tuple[str, str]] = {   # page -> (module, function) that renders it
    "conv-fp32": ("benchmarks.suite", "page"),
    "tensor-cores": ("benchmarks.tensor_cores", "page"),
    "tensor-cores-h200": ("benchmarks.tensor_cores", "device_page"),
    "tensor-core-variants": ("benchmarks.mma_variants", "page"),
    "conv-families": ("benchmarks.weak_families", "page"),
    "fc-layers": ("benchmarks.fc_layers", "page"),
    "wrw-accuracy": ("benchmarks.wrw_accuracy", "page"),
    "networks": ("benchmarks.networks", "page"),
    "overhead": ("benchmarks.overhead", "page"),
    "primitives": ("benchmarks.primitives", "page"),
    "fusion": ("benchmarks.fusion", "page"),
    "cpu": ("benchmarks.cpu", "page"),
    "distributed": ("benchmarks.distributed_scaling", "page"),
    "find": ("benchmarks.report", "find_page"),
    "reliability": ("benchmarks.reliability", "page"),
}
DESCRIPTIONS = {
    "conv-fp32": "the convolution suite against cuDNN in strict fp32: AlexNet, Boda, ResNet-50, VGG-16 in every "
                 "direction, each solver's efficiency, cold against warm find",
    "tensor-cores": "the tensor-core solver (TF32, fp16) against cuDNN on the four layer sets, every direction",
    "tensor-cores-h200": "the same on an H200, and how its times moved from the tree before the solver's split",
    "tensor-core-variants": "the tensor-core solver's data-movement and split variants beside its defaults",
    "conv-families": "depthwise, 5x5, backward-weights and small-C 1x1 layers against cuDNN strict fp32",
    "fc-layers": "AlexNet's fully connected layers against PyTorch",
    "wrw-accuracy": "backward-weights error against float64 on reductions of 1-10 million terms",
    "networks": "whole torchvision networks through miopy.onnx against PyTorch",
    "overhead": "host time per call and whole convolution passes against PyTorch",
    "primitives": "pooling, softmax, LRN, batch norm, tensor ops and dropout against PyTorch on the GPU",
    "fusion": "conv + bias + ReLU fused against unfused",
    "cpu": "the CPU solvers on PoCL against PyTorch's CPU convolutions; the kernel cache at process start",
    "distributed": "tuning on 1 and 2 GPUs with Dask",
    "find": "cold find, compile times, find's accuracy check, immediate mode, tuning speed, tuned records",
    "reliability": "the fault suite's outcomes on each device",
}


def load_catalog(path: Path = CATALOG) -> dict:
    return harness.read_json(path)


def sources_of(catalog: dict, page: str, results: Path = harness.RESULTS) -> list[harness.Source]:
    files = catalog["files"]
    return [harness.Source.load(results / name, _known(files.get(name, {}))) for name in catalog["pages"][page]]


def _known(entry: dict) -> dict:
    """What the catalog records of a file's provenance (used where the file does not record it itself)."""
    return {k: entry[k] for k in ("device", "date", "command", "commit") if entry.get(k)}


def render(page: str, catalog: dict, out: Path) -> str:
    module, function = PAGES[page]
    renderer = getattr(importlib.import_module(module), function)
    return "\n".join(renderer(sources_of(catalog, page), out)).rstrip("\n") + "\n"


def index(catalog: dict) -> str:
    """docs/results/index.md: the pages, how to regenerate them, and every kept result file with what it serves."""
    lines = ["# Results", "", "Every number on these pages is generated by `python -m benchmarks.report` from the "
             "result files recorded in `benchmarks/results/` (named in `benchmarks/results/catalog.json`); each page "
             "says which device, commit, date and command produced its files. Do not edit these pages by hand: "
             "rerun the benchmark (`python -m benchmarks.<name> ...`, from the repository root), add its file to the "
             "catalog, and regenerate.", "", "## Pages", ""]
    lines += harness.md_table(["page", "what", "result files"],
                              [[f"[{p}]({p}.md)", DESCRIPTIONS[p], len(catalog["pages"][p])] for p in PAGES])
    lines += ["", "## Result files", "", "Each kept file, what recorded it, and the page that shows it; \"-\": no page "
              "shows it (kept for the engineering notes, or a candidate for deletion). \"Cited by\": the hand-written "
              "docs that named the file when the catalog was made; \"was\": its name before the rename to "
              "device-benchmark-purpose names.", ""]
    rows = [[f"[`{name}`](../../benchmarks/results/{name})", e.get("what", "-"),
             f"[{e['page']}]({e['page']}.md)" if e.get("page") else "-", ", ".join(e.get("cited_by", [])) or "-",
             f"`{e['was']}`" if e.get("was") else ""] for name, e in catalog["files"].items()]
    return "\n".join(lines + harness.md_table(["file", "what", "page", "cited by", "was"], rows)) + "\n"


def generate(out: Path, pages: list[str], catalog: dict) -> dict[Path, str]:
    """The pages' markdown by path (their plots written into out as a side effect)."""
    texts = {out / f"{page}.md": render(page, catalog, out) for page in pages}
    texts[out / "index.md"] = index(catalog)
    return texts


def check(pages: list[str], catalog: dict, out: Path = DOCS) -> list[str]:
    """The differences between the committed pages and what the results give (empty: none)."""
    with tempfile.TemporaryDirectory() as tmp:
        texts = generate(Path(tmp), pages, catalog)
    problems = []
    for path, text in texts.items():
        committed = out / path.name
        old = committed.read_text() if committed.is_file() else ""
        if old != text:
            problems += [f"{committed} differs from its results:"] + list(difflib.unified_diff(
                old.splitlines(), text.splitlines(), "committed", "regenerated", lineterm="", n=1))[:40]
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", default=",".join(PAGES), help=f"comma-separated, of {', '.join(PAGES)}")
    ap.add_argument("--out", type=Path, default=DOCS, help="where the pages go (default docs/results)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page differs from its results")
    args = ap.parse_args(argv)
    pages = [p for p in args.pages.split(",") if p]
    unknown = sorted(set(pages) - set(PAGES))
    if unknown:
        ap.error(f"unknown pages {unknown}; known: {', '.join(PAGES)}")
    catalog = load_catalog()
    if args.check:
        problems = check(pages, catalog, args.out)
        print("\n".join(problems) or f"{len(pages)} pages and the index match their results")
        return 1 if problems else 0
    args.out.mkdir(parents=True, exist_ok=True)
    if harness.pyplot() is None:
        print("report: matplotlib is not installed (pip install -e '.[bench]'): plots not regenerated", file=sys.stderr)
    for path, text in generate(args.out, pages, catalog).items():
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
