"""What miopy's own disk kernel cache adds and costs, next to the driver's cache, on the default device.

Each run is a fresh process that finds one small 3x3 convolution in all three directions (normal find:
every applicable solver's kernels are built and launched), with the kernel cache storing program binaries
(MIOPY_CACHE_BINARIES=1) or only markers while the driver keeps the binaries (=0). Three situations, each
repeated with new directories, medians reported:

- cold: miopy's cache and the driver's (POCL_CACHE_DIR, CUDA_CACHE_PATH) both empty;
- warm: both as the cold run left them (a user's second run);
- miopy cold, driver warm: a new miopy cache over the driver cache the cold run left (a test session).

    python -m benchmarks.cache_start --repeat 3 --json benchmarks/results/pocl-cache-start.json

Writes the per-situation times, the programs compiled and served from disk, and the entry bytes on disk.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import harness

ROOT = harness.ROOT
CHILD = """
import json, time
t0 = time.perf_counter()
import miopy
from miopy.conv.problem import ConvDesc, ConvProblem, Direction
from miopy.find import find_problem
from miopy.tensor import TensorDesc
handle = miopy.Handle()
t1 = time.perf_counter()
x, w = TensorDesc("FP32", (1, 16, 14, 14)), TensorDesc("FP32", (16, 16, 3, 3))
for direction in Direction:
    find_problem(handle, ConvProblem.create(direction, x, w, ConvDesc(1)), mode="normal", store=False)
t2 = time.perf_counter()
print(json.dumps({"startup_s": t1 - t0, "find_s": t2 - t1, **handle.cache_stats(),
                  "device": handle.info.device_id, "binaries": handle.kernels.store_binaries}))
"""
SITUATIONS = ("cold", "warm", "miopy cold, driver warm")


def run_child(env: dict) -> dict:
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout
    return {**json.loads(out.splitlines()[-1]), "process_s": time.perf_counter() - started}


def one_round(binaries: bool) -> dict[str, dict]:
    """The three situations once, in new directories."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, MIOPY_CACHE_BINARIES="1" if binaries else "0", MIOPY_CACHE_DIR=f"{tmp}/miopy",
                   MIOPY_USER_DB_PATH=f"{tmp}/user.db", POCL_CACHE_DIR=f"{tmp}/pocl", CUDA_CACHE_PATH=f"{tmp}/nv",
                   PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}")
        rows = {"cold": run_child(env), "warm": run_child(env)}
        rows["warm"]["entry_bytes"] = sum(p.stat().st_size for p in Path(f"{tmp}/miopy").rglob("*.bin"))
        rows["miopy cold, driver warm"] = run_child(dict(env, MIOPY_CACHE_DIR=f"{tmp}/miopy2"))
    return rows


def median_rows(rounds: list[dict[str, dict]]) -> dict[str, dict]:
    out = {}
    for situation in SITUATIONS:
        runs = [r[situation] for r in rounds]
        out[situation] = {key: statistics.median(run[key] for run in runs) for key in runs[0]
                          if isinstance(runs[0][key], (int, float)) and not isinstance(runs[0][key], bool)}
        out[situation]["find_s_all"] = [round(run["find_s"], 3) for run in runs]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    result = harness.new_record(None, load_before=os.getloadavg(), modes={})
    for label, binaries in (("binaries", True), ("markers", False)):
        rounds = [one_round(binaries) for _ in range(args.repeat)]
        result["meta"]["device_id"] = rounds[0]["cold"]["device"]   # the children's device (this process opens none)
        result["meta"]["device"] = result["meta"]["device_id"].split("|")[1]
        result["modes"][label] = median_rows(rounds)
        for situation, row in result["modes"][label].items():
            print(f"{label:9s} {situation:24s} find {row['find_s']:7.2f} s  process {row['process_s']:7.2f} s  "
                  f"compiled={row['compiled']:.0f} disk_hits={row['disk_hits']:.0f}", flush=True)
    result["load_after"] = os.getloadavg()
    harness.write_json(args.json, result)
    return 0


def section(source: harness.Source) -> list[str]:
    """The results pages' table of one run: find seconds of a new process in each situation, for binaries and
    markers in miopy's cache (medians of the run's rounds)."""
    modes = source.data["modes"]
    labels = {"cold": "cold: both caches empty", "warm": "warm: both caches as the cold run left them",
              "miopy cold, driver warm": "miopy's cache new, the driver's warm (a test session)"}
    rows = [[labels.get(sit, sit)] + [f"{modes[m][sit]['find_s']:.2f} s" if m in modes else "-"
                                      for m in ("binaries", "markers")] for sit in SITUATIONS]
    rows.append(["bytes miopy stores"] + [f"{modes[m]['warm'].get('entry_bytes', 0):,} B" if m in modes else "-"
                                          for m in ("binaries", "markers")])
    lines = ["## Kernel cache at process start", "", f"`benchmarks.cache_start` ({source.link()}, "
             f"{source.meta.get('device')}): a new process finds one small 3x3 convolution in all three directions "
             "(normal find), with miopy's kernel cache storing program binaries or only markers (the driver keeping "
             "the binaries); find seconds, medians of the run's rounds.", ""]
    return lines + harness.md_table(["situation", "binaries", "markers"], rows) + [""]


if __name__ == "__main__":
    sys.exit(main())
