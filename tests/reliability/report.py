"""Render docs/notes/reliability.md from the reliability suite's own measurements, one column per device.

    python3 tests/reliability/report.py                # run tests/reliability here, keep its summary, render
    python3 tests/reliability/report.py -n 2           # the same with pytest-xdist workers
    python3 tests/reliability/report.py --json F.json  # keep a summary written elsewhere (the GPU run), render
    python3 tests/reliability/report.py --render       # render the kept summaries only

The suite writes its summary where MIOPY_RELIABILITY_REPORT points (tests/reliability/faults.py: Report; under
pytest-xdist one file per worker, merged here). Summaries are kept as benchmarks/results/reliability-<device>.json,
one per device, and every number in the page comes from them, none typed by hand.
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

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "notes" / "reliability.md"
RESULTS = ROOT / "benchmarks" / "results"

INTRO = """# Reliability: faults tried and what miopy did

Users of MIOpen report corrupted cache databases when several jobs share a cache, lock failures, read-only
or network home directories, and invalid tuning values. The suite in `tests/reliability/` provokes each of
these against miopy's two stores, the kernel binary cache and the user DB (perf records, find records and
the tuning log in one SQLite file), and checks that no call fails, no result is wrong, no record written
is lost and no stored entry is left corrupt. It also feeds the library what a careless or unlucky user
would: arrays whose layout is not their descriptor's, outputs that overlap inputs, tensors the device cannot
hold or allocations that fail, bad arguments by the thousand, tensors past 2^31 elements, 8 threads at
once, and a SIGKILLed parent of worker processes. It runs in CI with the rest of the tests (but for the
`slow` fuzzing at scale and the `bigmem` tensors, which run on the GPU machine: `benchmarks/gpu_tests.sh`).
This page is generated from the suite's own counts by `python3 tests/reliability/report.py`, one column per
device it ran on; do not edit it by hand.

Real faults where the machine allows them: several OS processes at once (find, `miopy-tune` and
`miopy-driver`), SIGKILL (inside a DB transaction too), a read-only bind mount of a directory or of a
single file and a full tmpfs made in a private mount namespace (`unshare -rm`, skipped where user
namespaces are off; root ignores permission bits, so `chmod` would prove nothing), a path through a
regular file, a `HOME` that leads nowhere, DB files and records damaged byte by byte or with SQL. Two
cases are simulated in process: EROFS from every call that creates a cache file (to assert its single
warning with pytest's `caplog`), and a user with no passwd entry (`pwd.getpwuid` raising, `HOME` unset).
"""

HOW = """
## How miopy survives them

- **Kernel binary cache** (`miopy/kernel_cache.py`): an entry is written to a temporary file and renamed
  into place under a per-entry `filelock` lock (flock: released when its holder dies, so a stale lock file
  blocks no one; a live holder that hangs is waited out for 120 s, then the kernel is built in memory). Its header holds a SHA-256 of the program key and the payload, so a truncated, altered or
  misplaced entry (one copied under another spec's or another device's key, or an entry of the other kind)
  is a miss; a binary that does not load or lacks the wanted kernel is a miss too. Where the driver keeps
  its own binary cache (PoCL) the payload is a fixed marker and a hit rebuilds from source through the
  driver's cache, so a stored entry can never supply a kernel; anything but the marker is a miss. Both
  kinds of entry are faulted. A miss is rebuilt. The lock holder removes temporary
  files that a killed writer of the same entry left. A cache directory that cannot be created or written
  (read-only, full, a path through a file) leaves miopy working from memory. Every fault is logged once
  per kind and cache directory (`miopy.log.warn_once`), never once per entry or call.
- **User DB** (`miopy/db/`, SQLite in WAL mode): every write is one transaction, so a writer killed
  inside one leaves nothing of it; SQLite's locks die with their holder; a lock held by a live process is
  waited out (busy timeout, a few retries with backoff), then the write is a miss with one warning. A file
  is checked when a process opens it (SQLite `quick_check`, schema version, the columns of every table):
  one that fails is moved aside byte for byte as `<name>.corrupt-<time>-<pid>` under a file lock, with one
  warning, and a new DB is built, holding every record of the damaged file that could still be read and
  checked (through SQLite, then page by page; the warning counts rows kept and lost). Every row is parsed by type as it is read (params a JSON object, times
  non-negative numbers, ranks 0..n-1): a malformed one is a miss, logged once. Stored params invalid for
  their solver (out of grid, wrong keys, wrong types) are never used: find runs the solver with its default
  params, a find record holding them is found again, tuning does not serve such a point. Records are keyed
  by device id, so another device's are simply not seen. A user DB that cannot be written (read-only file
  or directory, full disk, a path through a file or to a directory, no home directory) is replaced for the
  process by an in-memory copy of what it holds, with one warning, so its tuned params and find records
  still serve. The system perf DB is opened read-only and never touched: missing it is empty, damaged it is
  ignored with one warning. A tuning point that fails to build, launch or verify is logged with its reason
  and time inf, and the search goes on.
- **No usable home**: PoCL lists no device and pyopencl fails its first kernel when their caches under
  `XDG_CACHE_HOME` / `~/.cache` cannot be made (or there is no home at all: `HOME` unset, no passwd entry).
  `Handle()` then points `XDG_CACHE_HOME` at a private temporary directory for the process (removed at
  exit), with one warning; the user DB goes to memory, with one warning of its own.
- **Bad input** (descriptors, channels / groups, dtypes, y descriptor, buffers, tuning values, alpha /
  beta, modes, handles; booleans where integers belong, flags that are not booleans, NaN, out-of-range
  limits and counts) raises a `MiopyError` subclass naming the field before anything is enqueued; every
  buffer passed in is left as it was. Warm paths too: a memo key cannot tell `True` from `1` (equal, with
  one hash), so a key holding a caller's boolean takes the checked cold path (`miopy.tensor.holds_bool`).
  The CLIs (`miopy-driver` and each of its commands, `miopy-tune`, `miopy-run`) print one error line
  naming the flag (a `--file` line: its number) and exit 1, and refuse a tensor the device cannot hold
  before making its data. The ONNX session checks its batch, input shapes and feeds alike.
- **Buffers against descriptors** (`miopy/plan.py`): a pyopencl Array must have its descriptor's layout
  (its dims and strides, or be C-contiguous storage read from its first byte); an output may share no byte
  with another operand (same buffer, or overlapping sub-buffers, found through `CL_MEM_ASSOCIATED_MEMOBJECT`
  and `CL_MEM_OFFSET`), unless the op is in-place safe and the ranges are the same. The checks run when the
  buffers change; a warm loop on the same arrays only compares identities.
- **Device limits**: tensors and workspace are checked against the device's largest allocation and memory
  when a plan is built and before find makes random data; find and tuning skip a solver whose workspace does
  not fit, with the reason; buffers are made resident when allocated, and an allocation or launch failing at
  run time is `OutOfResources`, the output untouched and the handle usable.
- **Big tensors**: the naive solver computes offsets in 64 bits where a tensor spans 2^31 elements or more
  (so find always has a solver); every other solver of every family declares itself not applicable above
  its 32-bit index range, with the reason (`miopy.device.index_reason`), and the plans that have no solver
  (activation, set / scale / transform tensor, the unfused bias, the ONNX epilogue) raise `NotSupported`
  with that reason before anything is allocated.
- **Threads**: a handle's lock keeps each call's launches together on its queue (its scratch buffers are
  shared by its plans); the kernel cache builds each program once under a lock.
- **Worker processes** (`miopy/lifeline.py`): tuning's compile workers exit when their parent dies, however
  it dies (Linux's parent-death signal, and a thread that watches the parent's pid); multiprocessing's
  resource tracker then exits too. What they build comes back as values (program binaries, or on PoCL the
  outcome, the driver's cache serving the rebuild), so no kernel cache directory is shared or needed.
- **Salvage**: a damaged user DB's readable records (through SQLite, then page by page) are copied into the
  new DB before it is used; the warning counts rows kept and lost.
- **Broken solvers**: a kernel that fails to build or launch is recorded in `FindResult.skipped` with its
  reason and find goes on; tuning logs such a point with its reason and time inf and stores one that works;
  an explicit record of such a configuration raises a `MiopyError`.
"""


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
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def kept(results: Path = RESULTS) -> list[dict]:
    """Every kept summary, the CPU (PoCL) ones first."""
    found = [json.loads(p.read_text()) for p in sorted(results.glob("reliability-*.json"))]
    return sorted(found, key=lambda d: ("Portable Computing Language" not in d["device"], d["device"]))


def _column(data: dict) -> str:
    name, _, platform = data["device"].partition(" (")
    return "PoCL (CPU)" if "Portable Computing Language" in platform else name


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


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


def render(summaries: list[dict]) -> str:
    """The markdown page for the kept summaries: one results line and one table column per device."""
    rows: dict[tuple, dict] = {}
    for data in summaries:
        for o in data["outcomes"]:
            rows.setdefault((o["fault"], o["store"]), o)
    cells = [{(o["fault"], o["store"]): o for o in data["outcomes"]} for data in summaries]
    columns = [_column(d) for d in summaries]
    lines = [INTRO, "## Results", "", *(_device_line(d) for d in summaries), "",
             "Each device column: runs (processes x repetitions), failed calls, corrupt entries left; "
             "\"not run\" where that device's run did not include the fault (the big-memory tensors need a GPU's "
             "memory). What happened is told from the first device that ran it.", "",
             "| fault | store | what happened | " + " | ".join(columns) + " |",
             "|---|---|---|" + "---|" * len(columns)]
    for key, o in rows.items():
        per_device = []
        for device in cells:
            c = device.get(key)
            per_device.append("not run" if c is None else
                              f"{c['processes']} x {c['repetitions']}, {c['failed_calls']}, {c['bad_entries']}")
        lines.append(f"| {_cell(o['fault'])} | {_cell(o['store'])} | {_cell(o['happened'])} | "
                     + " | ".join(per_device) + " |")
    return "\n".join(lines) + "\n" + HOW


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, action="append", default=[],
                    help="keep this summary (or its xdist pieces) instead of running the suite; repeatable")
    ap.add_argument("--render", action="store_true", help="only render the kept summaries")
    ap.add_argument("-n", "--workers", type=int, default=0, help="pytest-xdist workers for the suite run")
    ap.add_argument("--results", type=Path, default=RESULTS, help=f"where summaries are kept (default {RESULTS})")
    ap.add_argument("--out", type=Path, default=DOC, help=f"where to write the page (default {DOC})")
    args = ap.parse_args(argv)
    new = [load_summary(path) for path in args.json]
    if not args.json and not args.render:
        with tempfile.TemporaryDirectory(prefix="miopy-reliability-") as tmp:
            summary = Path(tmp) / "summary.json"
            status = run_suite(summary, args.workers)
            if status != 0:
                print(f"report: the reliability suite failed (pytest status {status}); page not written",
                      file=sys.stderr)
                return status
            new.append(load_summary(summary))
    for data in new:
        print(f"report: kept {keep(data, args.results)}")
    args.out.write_text(render(kept(args.results)))
    print(f"report: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
