"""Cold versus warm find: the first find of one layer in a new process with empty caches, then again in a
second process with the caches the first one left (kernel binaries, find DB, NVIDIA's JIT cache).

    python benchmarks/cold_find.py --set resnet50 --layer l1.b --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import sys, time
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
print(f"{t1 - t0:.3f} {t2 - t1:.3f} {found[0].solver_id} {int(found.from_db)} {s['compiled']} {s['disk_hits']}")
"""


def run(set_name: str, layer: str, mode: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, set_name, layer, mode], env=env, capture_output=True,
                         text=True, check=True, cwd=ROOT).stdout.split()
    return {"mode": mode, "startup_s": float(out[0]), "find_s": float(out[1]), "solver": out[2],
            "from_find_db": bool(int(out[3])), "compiled": int(out[4]), "disk_hits": int(out[5])}


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
    if args.json:
        Path(args.json).write_text(json.dumps({"set": args.set, "layer": args.layer, "runs": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
