"""Tuning speed: the old way (local search with its budget of points) against the new one (the fast strategy
with a budget of seconds, early timing cut, builds ahead of timing) on AlexNet layers, one solver family at a
time, each run from cold caches.

Every run is a new process with an empty kernel cache (MIOPY_CACHE_DIR), an empty CUDA_CACHE_PATH (or, with
--cuda-cache off, CUDA_CACHE_DISABLE=1) and an empty POCL_CACHE_DIR, and no system DB (nothing
known about the device); the runs of one way share a user DB across layers, as `miopy-tune --network
alexnet` would (so the fast strategy's priors are what the earlier layers of the same session measured;
--isolated gives every run its own). A run's wall time covers
tune_problem (compile workers' start, compiling, timing, the float64 check of the winner), not the process's
import and device opening. At the end this process times every run's winner again, the old and the new one
alternately (3 x median of 5), so the kernel times compared come from one process.

    python -m benchmarks.tune_speed --layers conv1,conv2,conv3 --families ConvDirectLocal,ConvWinograd \\
        --old-budget 16 --time-budget 8 --jobs 12 --deadline 280 --out benchmarks/results/h100-tune-speed.json
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import harness

ROOT = harness.ROOT
FAMILIES = ("ConvDirectLocal", "ConvWinograd", "ConvIm2colGemm")
CHILD = """
import json, sys, time
import miopy
from miopy.conv import networks
from miopy.conv.problem import Direction
from miopy.tuning import Compiler, SearchSpace, TuneOptions, tunable, tune_problem
spec = json.loads(sys.argv[1])
handle = miopy.Handle()
layer = next(l for l in networks.layer_set(spec["set"]) if l.name == spec["layer"])
problem = layer.problem(spec["n"], Direction(spec["direction"]))
solvers = [s for s in tunable(handle, problem) if s.id.startswith(spec["family"])]
strategy, options = spec["strategy"], {"budget": spec["budget"]}
sizes = [len(SearchSpace.of(s, problem, handle.info)) for s in solvers]
if solvers and max(sizes) <= spec["exhaustive_max"]:
    strategy, options = "exhaustive", {}
if spec["time_budget"] is not None:
    options["time_budget_s"] = spec["time_budget"]
start = time.perf_counter()
with Compiler(handle, spec["jobs"]) as compiler:
    results = tune_problem(handle, problem, solvers=solvers, strategy_name=strategy,
                           options=TuneOptions(**options), compiler=compiler) if solvers else []
wall = time.perf_counter() - start
print(json.dumps({"device": handle.info.device_id, "problem": problem.key(), "wall_s": wall,
                  "strategy": strategy, "options": options, "space_sizes": sizes, "solvers": [
    {"solver": r.solver_id, "default_ms": r.default_ms, "best_ms": r.best_ms, "params": r.best_params,
     "stored": r.stored, "measured": r.measured, "failed": r.failed, "cut": getattr(r, "cut", None),
     "seconds": getattr(r, "seconds", None)} for r in results]}), flush=True)
"""


def child(spec: dict, env: dict, timeout: float, root: Path) -> dict:
    """One cold tuning run in a new process; its JSON line, or {"error": ...}."""
    env = dict(env, PYTHONPATH=f"{root}:{os.environ.get('PYTHONPATH', '')}")
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], env=env, capture_output=True,
                              text=True, cwd=root, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-600:]}"}
    return json.loads(lines[-1])


def cold_env(tmp: Path, db: Path, cuda_cache: str) -> dict:
    """Empty caches for one run: miopy's kernel cache, PoCL's, and NVIDIA's JIT cache (off, or a new empty
    directory: the driver then caches what the compile workers JIT-compiled, and this process's loads of
    their PTX find it there)."""
    for sub in ("cache", "pocl", "nv"):
        (tmp / sub).mkdir(parents=True, exist_ok=True)
    nvidia = {"CUDA_CACHE_DISABLE": "1"} if cuda_cache == "off" else {"CUDA_CACHE_PATH": str(tmp / "nv")}
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_CACHE_DISABLE", "CUDA_CACHE_PATH")}
    return dict(env, **nvidia, MIOPY_CACHE_DIR=str(tmp / "cache"), POCL_CACHE_DIR=str(tmp / "pocl"),
                MIOPY_USER_DB_PATH=str(db), MIOPY_SYSTEM_DB_PATH=str(tmp / "no-system.db"))


def retime(set_name: str, pairs: list[dict], n: int, direction: int, rounds: int = 3) -> None:
    """Time each pair's old and new winner in this process, alternately; adds old_ms / new_ms (min over rounds
    of the median of 5) to each pair."""
    import miopy
    from miopy.conv import networks, registry
    from miopy.conv.problem import Direction
    from miopy.find import random_buffers
    from miopy.plan import plan_of
    handle = miopy.Handle()
    layers = {layer.name: layer for layer in networks.layer_set(set_name)}
    for pair in pairs:
        problem = layers[pair["layer"]].problem(n, Direction(direction))
        plans, buffers = {}, None
        for way in ("old", "new"):
            win = pair.get(f"{way}_winner")
            if win is None:
                continue
            solver = registry.get(win["solver"])
            plans[way] = plan_of(handle, problem, solver.solution(problem, win["params"]))
            size = solver.workspace_bytes(problem)
            if buffers is None or size > buffers[1]:
                buffers = (random_buffers(handle, problem, size), size)
        times: dict[str, list[float]] = {way: [] for way in plans}
        for _ in range(rounds):
            for way, plan in plans.items():
                times[way].append(harness.device_ms(handle, lambda p=plan, b=buffers[0]: p.enqueue(b), 2, 5))
        for way, samples in times.items():
            pair[f"{way}_ms"] = min(samples)


def winner(run: dict) -> dict | None:
    """The fastest stored solver of a run (a family may hold several solvers, Winograd's F2 and F4)."""
    stored = [s for s in run.get("solvers", ()) if s["stored"] and math.isfinite(s["best_ms"])]
    return min(stored, key=lambda s: s["best_ms"]) if stored else None


def _cell(pair: dict, key: str, fmt: str) -> str:
    value = pair.get(key)
    return format(value, fmt) if isinstance(value, (int, float)) else "-".rjust(len(format(0.0, fmt)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="alexnet", help="layer set (miopy.conv.networks)")
    ap.add_argument("--layers", default="conv1,conv2,conv3,conv4,conv5")
    ap.add_argument("--families", default=",".join(FAMILIES), help="solver id prefixes, one family per run")
    ap.add_argument("-n", "--batch", type=int, default=None, help="batch (default: the set's usual, AlexNet 128)")
    ap.add_argument("-F", "--direction", type=int, default=1, choices=(1, 2, 4))
    ap.add_argument("--old-strategy", default="local")
    ap.add_argument("--old-budget", type=int, default=16, help="the old way's points per solver (tune_gpu.sh: 16)")
    ap.add_argument("--old-exhaustive-max", type=int, default=0,
                    help="the old way measures every point (exhaustive, no budget) of a family whose spaces all "
                         "hold at most this many points (Winograd's: 72), the best there is to compare with")
    ap.add_argument("--strategy", default="fast")
    ap.add_argument("--budget", type=int, default=128, help="the new way's point cap per solver")
    ap.add_argument("--time-budget", type=float, default=10.0, help="the new way's seconds per layer and family")
    ap.add_argument("--jobs", type=int, default=None, help="compile workers (default min(4, CPUs))")
    ap.add_argument("--isolated", action="store_true", help="every run its own user DB (no priors at all)")
    ap.add_argument("--cuda-cache", choices=("off", "fresh"), default="fresh",
                    help="NVIDIA's JIT cache per run: a fresh empty directory (default: cold, as a new user's, and "
                         "as cold_find_sweep.py measures) or off (CUDA_CACHE_DISABLE=1: the main process then "
                         "JIT-compiles every worker's PTX again)")
    ap.add_argument("--before", type=Path, default=None, help="run the old way with this older checkout's code")
    ap.add_argument("--timeout", type=float, default=120.0, help="per run, s")
    ap.add_argument("--deadline", type=float, default=280.0, help="start no run after this many s")
    ap.add_argument("--no-retime", action="store_true", help="skip timing the winners again side by side")
    ap.add_argument("--out", type=Path, default=None, help="JSON file to write")
    args = ap.parse_args(argv)
    from miopy.conv import networks
    n = args.batch or networks.DEFAULT_BATCH.get(args.set, 1)
    layers = [name for name in args.layers.split(",") if name]
    families = [f for f in args.families.split(",") if f]
    began = time.perf_counter()
    pairs: list[dict] = []
    device = None
    with tempfile.TemporaryDirectory() as tmp_root:
        tmp = Path(tmp_root)
        for layer in layers:
            for family in families:
                pair: dict = {"layer": layer, "family": family}
                for way, strategy, budget, seconds, full, root in (
                        ("old", args.old_strategy, args.old_budget, None, args.old_exhaustive_max, args.before or ROOT),
                        ("new", args.strategy, args.budget, args.time_budget, 0, ROOT)):
                    left = args.deadline - (time.perf_counter() - began)
                    if left <= 5:
                        pair[f"{way}_error"] = "not run: --deadline reached"
                        continue
                    run_dir = tmp / f"{way}-{layer}-{family}"
                    db = (run_dir if args.isolated else tmp / way) / "user.db"
                    db.parent.mkdir(parents=True, exist_ok=True)
                    spec = {"set": args.set, "layer": layer, "n": n, "direction": args.direction, "family": family,
                            "strategy": strategy, "budget": budget, "time_budget": seconds, "jobs": args.jobs,
                            "exhaustive_max": full}
                    run = child(spec, cold_env(run_dir, db, args.cuda_cache), min(args.timeout, left), root)
                    device = device or run.get("device")
                    pair[way] = run
                    if "error" in run:
                        pair[f"{way}_error"] = run["error"]
                    else:
                        pair[f"{way}_s"] = run["wall_s"]
                        pair[f"{way}_winner"] = winner(run)
                if pair.get("old") and not pair["old"].get("solvers") and "old_error" not in pair:
                    pair["note"] = "no solver of this family applies"
                pairs.append(pair)
                errors = "".join(f"; {w}: {pair[w + '_error']}" for w in ("old", "new") if w + "_error" in pair)
                print(f"{layer} {family}: old {pair.get('old_s', math.nan):.1f} s, "
                      f"new {pair.get('new_s', math.nan):.1f} s{errors}", file=sys.stderr, flush=True)
        if not args.no_retime:
            os.environ.update(MIOPY_CACHE_DIR=str(tmp / "retime-cache"))
            retime(args.set, [p for p in pairs if p.get("old_winner") or p.get("new_winner")], n, args.direction)
    for p in pairs:
        for way in ("old", "new"):
            if f"{way}_ms" not in p and p.get(f"{way}_winner"):
                p[f"{way}_ms"] = p[f"{way}_winner"]["best_ms"]   # --no-retime: the run's own measurement
        if p.get("old_winner") and p.get("new_winner"):
            p["speedup"] = p["old_s"] / p["new_s"]
        if p.get("old_ms") and p.get("new_ms"):
            p["quality"] = p["new_ms"] / p["old_ms"]   # <= 1: the new way's kernel is as fast or faster
    done = [p for p in pairs if "speedup" in p and "quality" in p]
    summary = {"pairs": len(done),
               "old_s_total": sum(p["old_s"] for p in done), "new_s_total": sum(p["new_s"] for p in done),
               "geomean_speedup": harness.geomean(p["speedup"] for p in done) if done else None,
               "geomean_quality": harness.geomean(p["quality"] for p in done) if done else None,
               "worst_quality": max((p["quality"] for p in done), default=None)}
    print(f"\n{'layer':<7}{'family':<17}{'old s':>7}{'new s':>7}{'speedup':>9}{'old ms':>9}{'new ms':>9}{'new/old':>9}")
    for p in pairs:
        print(f"{p['layer']:<7}{p['family']:<17}{_cell(p, 'old_s', '7.1f')}{_cell(p, 'new_s', '7.1f')}"
              f"{_cell(p, 'speedup', '8.2f')}x{_cell(p, 'old_ms', '9.3f')}{_cell(p, 'new_ms', '9.3f')}"
              f"{_cell(p, 'quality', '9.3f')}" + (f"  {p['note']}" if "note" in p else ""))
    if done:
        print(f"{len(done)} pairs: old {summary['old_s_total']:.1f} s, new {summary['new_s_total']:.1f} s "
              f"(geomean {summary['geomean_speedup']:.2f}x faster); kernel new/old geomean "
              f"{summary['geomean_quality']:.3f}, worst {summary['worst_quality']:.3f}")
    record = harness.new_record(None, batch=n, args=vars(args), summary=summary, pairs=pairs)
    record["meta"]["device_id"] = device   # the children's (this process opens a device only to retime)
    record["meta"]["device"] = device.split("|")[1] if device else None
    harness.write_json(args.out, record)
    return 0



# -- results pages (docs/results/find.md) ---------------------------------------------------------------------------
def section(source: harness.Source) -> list[str]:
    """One tune_speed run: each (layer, family) pair's seconds and best kernel the old way and the fast way."""
    data, s = source.data, source.data["summary"]
    rows = [[p["layer"], p["family"], f"{p['old_s']:.1f}", f"{p['new_s']:.1f}", f"{p['old_ms']:.3f}",
             f"{p['new_ms']:.3f}", f"{p['quality']:.3f}"]
            for p in data["pairs"] if p.get("old_ms") and p.get("new_ms") and "old_s" in p and "new_s" in p]
    return ([f"### {source.name}", "", f"{source.meta.get('device')}, batch {data['batch']}: "
             f"`{source.meta.get('command', '-')}`.", ""]
            + harness.md_table(["layer", "family", "old s", "fast s", "old best ms", "fast best ms",
                                "fast / old kernel"], rows)
            + ["", f"{s['pairs']} pairs: old {s['old_s_total']:.1f} s, fast {s['new_s_total']:.1f} s; kernel time fast "
               f"/ old geomean {harness.fmt(s['geomean_quality'], '.3f')}, worst "
               f"{harness.fmt(s['worst_quality'], '.3f')}.", ""])


FAMILY_PREFIXES = ("ConvWinograd", "ConvDirectLocal", "ConvIm2colGemm", "ConvGemm", "ConvDirectNaive",
                   "ConvDepthwise", "ConvImplicitGemmMma")


def records_section(source: harness.Source) -> list[str]:
    """Records of `miopy.cli.build_system_db --json`: each tuned record's speedup over its solver's default params,
    the median gain per solver family and the seconds per layer."""
    rows = source.data
    table = harness.md_table(["problem", "solver", "default ms", "tuned ms", "speedup", "layer tuned in s"],
                             [[f"`{r['problem']}`", r["solver"], f"{r['default_ms']:.3f}", f"{r['best_ms']:.3f}",
                               f"{r['speedup']:.2f}x", f"{r['seconds']:.1f}"] for r in rows])
    by_family: dict[str, list[float]] = {}
    for r in rows:
        family = next((f for f in FAMILY_PREFIXES if r["solver"].startswith(f)), r["solver"])
        by_family.setdefault(family, []).append(r["speedup"])
    families = harness.md_table(["family", "records", "median speedup", "best"],
                                [[name, len(v), f"{harness.median(v):.2f}x", f"{max(v):.2f}x"] for name, v in
                                 sorted(by_family.items(), key=lambda kv: -harness.median(kv[1]))])
    layers = {r["problem"]: r["seconds"] for r in rows}
    return ([f"### {source.name}", "", f"{source.meta.get('device')}: `{source.meta.get('command', '-')}`.", ""]
            + table + [""] + families
            + ["", f"Every solver of a layer tuned in {min(layers.values()):.1f}-{max(layers.values()):.1f} s per "
               f"layer ({len(layers)} layers); geomean speedup {harness.geomean(r['speedup'] for r in rows):.3f}.",
               ""])

if __name__ == "__main__":
    sys.exit(main())
