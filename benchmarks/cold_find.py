"""Cold versus warm find: the first find of one layer in a new process with empty caches, then again in a
second process with the caches the first one left (kernel binaries, find DB, NVIDIA's JIT cache).

    python -m benchmarks.cold_find --set resnet50 --layer l1.b --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from benchmarks import harness

ROOT = harness.ROOT
CHILD = """
import json, sys, time
t0 = time.perf_counter()
import miopy
from miopy.conv import networks
from miopy.find import find_problem
handle = miopy.Handle()
t1 = time.perf_counter()
layer = next(l for l in networks.layer_set(sys.argv[1]) if l.name == sys.argv[2])
found = find_problem(handle, layer.problem(networks.DEFAULT_BATCH[sys.argv[1]]), mode=sys.argv[3])
t2 = time.perf_counter()
s = handle.cache_stats()
print(json.dumps({"device": handle.info.name, "startup_s": t1 - t0, "find_s": t2 - t1, "solver": found[0].solver_id,
                  "from_find_db": bool(found.from_db), "compiled": s["compiled"], "disk_hits": s["disk_hits"]}))
"""


def run(set_name: str, layer: str, mode: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, set_name, layer, mode], env=env, capture_output=True,
                         text=True, check=True, cwd=ROOT).stdout
    return {"mode": mode, **json.loads(out.strip().splitlines()[-1])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="resnet50")
    ap.add_argument("--layer", default="l1.b")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, MIOPY_CACHE_DIR=f"{tmp}/cache", MIOPY_USER_DB_PATH=f"{tmp}/user.db",
                   CUDA_CACHE_PATH=f"{tmp}/nv", PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}")
        rows = [dict(run(args.set, args.layer, "normal", env), process="1: empty caches"),
                dict(run(args.set, args.layer, "normal", env), process="2: warm caches, normal find"),
                dict(run(args.set, args.layer, "hybrid", env), process="3: warm caches, hybrid find (find DB)")]
    for r in rows:
        print(f"{r['process']:40s} find {r['find_s']:7.3f} s (startup {r['startup_s']:.2f} s) compiled={r['compiled']} "
              f"disk_hits={r['disk_hits']} from_find_db={r['from_find_db']} -> {r['solver']}")
    record = harness.new_record(None, set=args.set, layer=args.layer, runs=rows)
    record["meta"]["device"] = [r.pop("device") for r in rows][0]   # the children's device (this process opens none)
    harness.write_json(args.json, record)
    return 0


def section(source: harness.Source) -> list[str]:
    """The results pages' table of one run: each process's find time, what it compiled and where it found it."""
    data = source.data
    lines = ["## Cold versus warm find", "", f"`benchmarks.cold_find` ({source.link()}, {source.meta.get('device')}): "
             f"{data['set']} layer {data['layer']}, each line a new process.", ""]
    lines += harness.md_table(["process", "find s", "compiled", "disk hits", "from find DB", "chosen"],
                              [[r["process"], f"{r['find_s']:.3f}", r["compiled"], r["disk_hits"], r["from_find_db"],
                                r["solver"]] for r in data["runs"]])
    return lines + [""]


if __name__ == "__main__":
    sys.exit(main())
