"""The reliability suite's outcomes per device: run it, keep its summary, and the results page built from them.

    python -m benchmarks.reliability                # run tests/reliability (pytest, a subprocess), keep its summary
    python -m benchmarks.reliability -n 2           # the same with pytest-xdist workers
    python -m benchmarks.reliability --json F.json  # keep a summary written elsewhere (the GPU run)

The suite writes its summary where MIOPY_RELIABILITY_REPORT points (tests/reliability/faults.py: Report; under
pytest-xdist one file per worker, merged here). Summaries are kept as benchmarks/results/reliability-<device>.json,
one per device (benchmarks.gpu_tests keeps the GPU machine's), and every number of docs/results/reliability.md
(`python -m benchmarks.report`) comes from them, none typed by hand.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import harness

ROOT = harness.ROOT
RESULTS = harness.RESULTS

def run_suite(summary: Path, workers: int) -> int:
    """Run tests/reliability with MIOPY_RELIABILITY_REPORT set; returns pytest's exit status."""
    env = dict(os.environ, MIOPY_RELIABILITY_REPORT=str(summary))
    command = [sys.executable, "-m", "pytest", "-q", "tests/reliability"] + (["-n", str(workers)] if workers else [])
    return subprocess.run(command, cwd=ROOT, env=env).returncode


def load_summary(path: Path) -> dict:
    """A summary file, or the pieces pytest-xdist workers wrote beside its name, merged."""
    pieces = [path] if path.is_file() else sorted(path.parent.glob(path.name + ".gw*"))
    if not pieces:
        raise FileNotFoundError(f"no summary at {path} (nor {path.name}.gw* beside it)")
    parts = [json.loads(p.read_text()) for p in pieces]
    outcomes = sorted((o for part in parts for o in part["outcomes"]), key=lambda o: (o["test"], o["fault"]))
    merged = _merge_tallies(outcomes)
    return {**parts[0], "seconds": max(p["seconds"] for p in parts), "outcomes": merged}


def _merge_tallies(outcomes: list[dict]) -> list[dict]:
    """Rows of the same fault and store (tallied by several workers) as one, their counts summed."""
    rows: dict[tuple, dict] = {}
    for o in outcomes:
        key = (o["fault"], o["store"])
        if key in rows:
            for count in ("repetitions", "failed_calls", "bad_entries"):
                rows[key][count] += o[count]
        else:
            rows[key] = dict(o)
    return list(rows.values())


def merge_runs(summaries: list[dict]) -> list[dict]:
    """The rows of several runs on one device (parts of a GPU run), a later run's row replacing an earlier
    one of the same fault."""
    rows: dict[tuple, dict] = {}
    for data in summaries:
        for o in data["outcomes"]:
            rows[(o["fault"], o["store"])] = o
    return list(rows.values())


def slug(device: str) -> str:
    """A file-name form of a device description."""
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")[:60]


def keep(data: dict, results: Path = RESULTS) -> Path:
    """Store a summary as the device's kept one; returns its path."""
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"reliability-{slug(data['device'])}.json"
    harness.write_json(path, {"meta": {**harness.run_meta(), "device": data["device"]}, **data})
    return path


def _column(data: dict) -> str:
    name, _, platform = data["device"].partition(" (")
    return "PoCL (CPU)" if "Portable Computing Language" in platform else name


def _cell(text: str) -> str:
    return str(text).replace("\n", " ")


def _device_line(data: dict) -> str:
    outcomes = data["outcomes"]
    failed = sum(o["failed_calls"] for o in outcomes)
    bad = sum(o["bad_entries"] for o in outcomes)
    processes = sum(o["processes"] for o in outcomes)
    line = (f"- **{_column(data)}**: {data['device']}. {len(outcomes)} faults, {processes} processes in all, "
            f"{data['seconds']} s for the suite. Failed or wrong calls: **{failed}**. Corrupt entries left: "
            f"**{bad}**.")
    for part, run in data.get("runs", {}).items():
        line += (f" {RUN_NAMES.get(part, part)}: {run['passed']} passed, {run['failed'] + run.get('errors', 0)} "
                 f"failed, {run['skipped']} skipped in {run['seconds']} s (`{run['command']}`).")
    return line


RUN_NAMES = {"suite": "Whole test suite", "bigmem": "Big-memory tests", "slow": "Slow jobs (fuzzing at scale)"}


def page(sources: list[harness.Source], out: Path) -> list[str]:
    """docs/results/reliability.md: one results line and one table column per device's kept summary."""
    summaries = [s.data for s in sources]
    rows: dict[tuple, dict] = {}
    for data in summaries:
        for o in data["outcomes"]:
            rows.setdefault((o["fault"], o["store"]), o)
    cells = [{(o["fault"], o["store"]): o for o in data["outcomes"]} for data in summaries]
    lines = harness.page_head(
        "Reliability: faults tried and what miopy did", sources,
        "The suite in `tests/reliability/` provokes faults against miopy's stores (the kernel binary cache and the "
        "user DB) and feeds the library bad input, big tensors, threads and killed processes; each test records what "
        "it tried and what happened. Each device column: runs (processes x repetitions), failed calls, corrupt "
        "entries left; \"not run\" where that device's run did not include the fault (the big-memory tensors need "
        "a GPU's memory). What happened is told from the first device that ran it.")
    lines += [*(_device_line(d) for d in summaries), ""]
    table = []
    for key, o in rows.items():
        per_device = []
        for device in cells:
            c = device.get(key)
            per_device.append("not run" if c is None else
                              f"{c['processes']} x {c['repetitions']}, {c['failed_calls']}, {c['bad_entries']}")
        table.append([_cell(o["fault"]), _cell(o["store"]), _cell(o["happened"]), *per_device])
    return lines + harness.md_table(["fault", "store", "what happened", *(_column(d) for d in summaries)], table)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, action="append", default=[],
                    help="keep this summary (or its xdist pieces) instead of running the suite; repeatable")
    ap.add_argument("-n", "--workers", type=int, default=0, help="pytest-xdist workers for the suite run")
    ap.add_argument("--results", type=Path, default=RESULTS, help=f"where summaries are kept (default {RESULTS})")
    args = ap.parse_args(argv)
    new = [load_summary(path) for path in args.json]
    if not args.json:
        with tempfile.TemporaryDirectory(prefix="miopy-reliability-") as tmp:
            summary = Path(tmp) / "summary.json"
            status = run_suite(summary, args.workers)
            if status != 0:
                print(f"reliability: the suite failed (pytest status {status}); nothing kept", file=sys.stderr)
                return status
            new.append(load_summary(summary))
    for data in new:
        print(f"reliability: kept {keep(data, args.results)} (the page: python -m benchmarks.report)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
