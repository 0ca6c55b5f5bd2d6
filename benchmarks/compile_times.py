"""Cold compile time of each kernel a find of one layer builds (miopy.find.find_specs: every applicable
solver's default or perf-DB params, the naive reference and the device-side check), one at a time in this
process, then all at once through the compile pool (processes) and through threads: which kernels make a
cold find slow, and whether compiling them side by side helps. Each mode starts from empty caches (miopy's,
and NVIDIA's JIT cache through CUDA_CACHE_PATH), so run it as a fresh process per mode.

    python -m benchmarks.compile_times --set vgg16 --layer conv1 -F 4 [--modes serial,processes,threads] \
        [--dtype FP16] [--math tf32] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import harness

ROOT = harness.ROOT


def child(set_name: str, layer_name: str, direction: int, mode: str, jobs: int, dtype: str, math: str) -> dict:
    import concurrent.futures as cf

    import miopy
    from miopy import find_compile_pool
    from miopy.conv import networks
    from miopy.conv.problem import Direction
    from miopy.find import _candidates, find_specs
    handle = miopy.Handle()
    layer = next(x for x in networks.layer_set(set_name) if x.name == layer_name)
    problem = layer.problem(networks.DEFAULT_BATCH[set_name], Direction(direction), dtype, math or None)
    specs = find_specs(handle, problem, _candidates(handle, problem, None, None)[0], with_reference=True)
    out: dict = {"device": handle.info.name, "problem": problem.key(), "mode": mode, "kernels": len(specs)}
    start = time.perf_counter()
    if mode == "serial":
        rows = []
        for spec, sid in specs.items():
            t = time.perf_counter()
            handle.kernels.kernel(spec)
            rows.append({"s": time.perf_counter() - t, "solver": sid, "file": spec.file, "kernel": spec.name})
        out["builds"] = sorted(rows, key=lambda r: -r["s"])
    elif mode == "processes":
        pool = find_compile_pool.pool_for(handle, jobs)
        out["workers_ready"] = pool.start(wait=True)
        out["start_s"] = time.perf_counter() - start
        start = time.perf_counter()
        pool.build(list(specs))
        out["builds"] = [{"s": s, "kernel": label[:160], "by": who} for s, label, who in pool.slowest(8)]
    else:
        with cf.ThreadPoolExecutor(jobs) as ex:
            list(ex.map(handle.kernels.kernel, specs))
    out["total_s"] = time.perf_counter() - start
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", default="vgg16")
    ap.add_argument("--layer", default="conv1")
    ap.add_argument("-F", type=int, default=4, choices=(1, 2, 4))
    ap.add_argument("--modes", default="serial,processes,threads")
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--dtype", default="FP32", choices=("FP32", "FP16"))
    ap.add_argument("--math", default="", help="math mode (tf32: the tensor-core solver's kernels too)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.set, args.layer, args.F, args.child, args.jobs, args.dtype, args.math)))
        return 0
    results = []
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, MIOPY_CACHE_DIR=f"{tmp}/cache", CUDA_CACHE_PATH=f"{tmp}/nv",
                       PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}")
            done = subprocess.run([sys.executable, "-m", "benchmarks.compile_times", "--set", args.set, "--layer",
                                   args.layer, "-F",
                                   str(args.F), "--jobs", str(args.jobs), "--dtype", args.dtype, "--math", args.math,
                                   "--child", mode],
                                  env=env, capture_output=True, text=True, cwd=ROOT)
            if done.returncode:
                results.append({"mode": mode, "error": done.stderr[-2000:]})
            else:
                results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        r = results[-1]
        print(f"{mode}: {r.get('kernels')} kernels in {r.get('total_s', float('nan')):.2f} s"
              + (f" (workers ready after {r['start_s']:.2f} s)" if "start_s" in r else ""), flush=True)
        for b in r.get("builds", [])[:8]:
            name = f"{b['file']}:{b['kernel']}" if "file" in b else b["kernel"]
            print(f"   {b['s']:6.2f} s {b.get('solver', b.get('by', ''))} {name}")
        if "error" in r:
            print(r["error"])
    record = harness.new_record(None, layer=f"{args.set} {args.layer} F{args.F}", results=results)
    record["meta"]["device"] = next((r.pop("device") for r in results if "device" in r), None)   # the children's
    harness.write_json(args.json, record)
    return 0



def section(source: harness.Source) -> list[str]:
    """The results pages' table of one run: each mode's kernels and seconds, and the slowest builds."""
    rows = []
    for r in source.data["results"]:
        slowest = "; ".join(f"{b['s']:.2f} s {b.get('solver') or b.get('by', '')} "
                            f"{b['file'] + ':' + b['kernel'] if 'file' in b else b['kernel'].split(' ')[0]}"
                            for b in r.get("builds", [])[:3])
        rows.append([r["mode"], r.get("kernels", "-"), harness.fmt(r.get("total_s"), ".2f"),
                     harness.fmt(r.get("start_s"), ".2f"), r.get("error", "")[:80] or slowest or "-"])
    problem = next((r["problem"] for r in source.data["results"] if "problem" in r), "-")
    return ([f"### {source.name}", "", f"{source.meta.get('device')}, {source.data['layer']} (`{problem}`): "
             f"`{source.meta.get('command', '-')}`.", ""]
            + harness.md_table(["mode", "kernels", "total s", "workers ready after s", "slowest builds"], rows)
            + [""])

if __name__ == "__main__":
    sys.exit(main())
