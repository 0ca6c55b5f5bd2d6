"""Cold find over many layers: each configuration runs in a new process with empty caches (kernel binaries,
NVIDIA's JIT cache, user DB), finding every sampled layer once in normal mode (nothing served from a DB).
A tiny find first pays the process's one-time costs, so each layer's time is its own.

    python -m benchmarks.cold_find_sweep --per-set 4 --directions 1,2,4 --jobs 1,8 --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import harness

ROOT = harness.ROOT
CHILD = """
import json, sys, time
import miopy
from miopy.conv import networks
from miopy.conv.problem import Direction
from miopy.find import find_problem
handle = miopy.Handle()
find_problem(handle, networks.Layer("warm", 2, 5, 5, 2, 1, 1).problem(1), mode="normal", store=False)
for set_name, layer_name, d in json.loads(sys.argv[1]):
    layer = next((l for l in networks.LAYER_SETS.get(set_name, ()) if l.name == layer_name), None)
    if layer is None:   # an older checkout (--root) without this set
        continue
    problem = layer.problem(networks.DEFAULT_BATCH[set_name], Direction(d))
    before = handle.cache_stats()["compiled"]
    t = time.perf_counter()
    found = find_problem(handle, problem, mode="normal", store=False)
    t = time.perf_counter() - t
    print(json.dumps({"device": handle.info.name, "set": set_name, "layer": layer_name, "direction": d,
                      "problem": problem.key(), "find_s": t,
                      "compiled": handle.cache_stats()["compiled"] - before, "winner": found[0].solver_id,
                      "rejected": getattr(found, "rejected", {})}), flush=True)
"""


def sample(per_set: int, sets: list[str], directions: list[int]) -> list[tuple[str, str, int]]:
    from miopy.conv import networks
    out = []
    for name in sets:
        layers = networks.layer_set(name)
        step = max(1, len(layers) // per_set)
        out += [(name, layer.name, d) for layer in layers[::step][:per_set] for d in directions]
    return out


def run(layers, jobs: int, timeout: float, root: Path = ROOT) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, MIOPY_CACHE_DIR=f"{tmp}/cache", MIOPY_USER_DB_PATH=f"{tmp}/user.db",
                   CUDA_CACHE_PATH=f"{tmp}/nv", MIOPY_FIND_JOBS=str(jobs),
                   PYTHONPATH=f"{root}:{os.environ.get('PYTHONPATH', '')}")
        try:
            proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(layers)], env=env, capture_output=True,
                                  text=True, cwd=root, timeout=timeout)
            text, err = proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            text = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err = f"timed out after {timeout} s"
    if err:
        print(err[-2000:], file=sys.stderr)
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="alexnet,resnet50,vgg16,googlenet,mobilenet,boda")
    ap.add_argument("--per-set", type=int, default=3)
    ap.add_argument("--directions", default="1,2,4")
    ap.add_argument("--jobs", default="1,8", help="MIOPY_FIND_JOBS of each configuration")
    ap.add_argument("--before", type=Path, default=None,
                    help="also run an older checkout (e.g. main's tree) first, as the baseline")
    ap.add_argument("--timeout", type=float, default=240, help="per configuration, s")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    layers = sample(args.per_set, args.sets.split(","), [int(d) for d in args.directions.split(",")])
    report = harness.new_record(None, layers=len(layers), configs={})
    configs = [("before", 1, args.before)] if args.before else []
    configs += [(f"jobs={j}", int(j), ROOT) for j in args.jobs.split(",")]
    for name, jobs, root in configs:
        rows = run(layers, jobs, args.timeout, root.resolve())
        for r in rows:   # the children's device (this process opens none)
            report["meta"]["device"] = r.pop("device", None) or report["meta"].get("device")
        times = [r["find_s"] for r in rows]
        summary = {"root": str(root), "finds": len(rows), "median_s": statistics.median(times) if times else None,
                   "worst_s": max(times) if times else None, "total_s": sum(times), "rows": rows}
        report["configs"][name] = summary
        print(f"{name}: {len(rows)}/{len(layers)} finds, median {summary['median_s']} s, worst "
              f"{summary['worst_s']} s, total {summary['total_s']:.1f} s", flush=True)
    harness.write_json(args.json, report)
    return 0



def section(source: harness.Source) -> list[str]:
    """The results pages' table of one sweep: each configuration's median, worst (which layer) and total find time."""
    rows = []
    for name, c in source.data["configs"].items():
        worst = max(c["rows"], key=lambda r: r["find_s"], default=None)
        where = f" ({worst['set']} {worst['layer']} F{worst['direction']})" if worst else ""
        rows.append([name, f"{c['finds']} / {source.data['layers']}", harness.fmt(c["median_s"], ".2f"),
                     harness.fmt(c["worst_s"], ".2f") + where, f"{c['total_s']:.1f}"])
    return ([f"### {source.name}", "", f"{source.meta.get('device')}: `{source.meta.get('command', '-')}`.", ""]
            + harness.md_table(["configuration", "finds", "median s", "worst s", "total s"], rows) + [""])

if __name__ == "__main__":
    sys.exit(main())
