"""Render docs/reliability.md from the reliability suite's own measurements.

    python3 tests/reliability/report.py                 # run tests/reliability, then write docs/reliability.md
    python3 tests/reliability/report.py --json F.json   # render a summary an earlier run wrote

The suite writes its summary where MIOPY_RELIABILITY_REPORT points (tests/reliability/faults.py: Report);
every number in the table comes from there, none is typed by hand.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reliability.md"

INTRO = """# Reliability: faults tried and what miopy did

Users of MIOpen report corrupted cache databases when several jobs share a cache, lock failures, read-only
or network home directories, and invalid tuning values. The suite in `tests/reliability/` provokes each of
these against miopy's two stores, the kernel binary cache and the user DB (perf records, find records and
the tuning log in one SQLite file), and checks that no call fails, no result is wrong, no record written
is lost and no stored entry is left corrupt. It runs in CI with the rest of the tests. This page is generated from the suite's own counts by
`python3 tests/reliability/report.py`; do not edit it by hand.

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
- **User DB** (`miopy/db.py`, SQLite in WAL mode): every write is one transaction, so a writer killed
  inside one leaves nothing of it; SQLite's locks die with their holder; a lock held by a live process is
  waited out (busy timeout, a few retries with backoff), then the write is a miss with one warning. A file
  is checked when a process opens it (SQLite `quick_check`, schema version, the columns of every table):
  one that fails is moved aside byte for byte as `<name>.corrupt-<time>-<pid>` under a file lock, with one
  warning, and a new DB is built. Every row is parsed by type as it is read (params a JSON object, times
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
  beta) raises a `MiopyError` subclass naming the field before anything is enqueued; every buffer passed
  in is left as it was.
- **Broken solvers**: a kernel that fails to build or launch is recorded in `FindResult.skipped` with its
  reason and find goes on; tuning logs such a point with its reason and time inf and stores one that works;
  an explicit record of such a configuration raises a `MiopyError`.
"""


def run_suite(summary: Path) -> int:
    """Run tests/reliability with MIOPY_RELIABILITY_REPORT set; returns pytest's exit status."""
    env = dict(os.environ, MIOPY_RELIABILITY_REPORT=str(summary))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "tests/reliability"], cwd=ROOT, env=env).returncode


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(data: dict) -> str:
    """The markdown page for a summary."""
    outcomes = data["outcomes"]
    processes = sum(o["processes"] for o in outcomes)
    failed = sum(o["failed_calls"] for o in outcomes)
    bad = sum(o["bad_entries"] for o in outcomes)
    lines = [INTRO, "## Results", "",
             f"Device: {data['device']}. {len(outcomes)} faults, {processes} processes in all, "
             f"{data['seconds']} s for the suite. Failed or wrong calls: **{failed}**. "
             f"Corrupt entries left: **{bad}**.", "",
             "| fault | store | runs (processes x repetitions) | what happened | failed calls | corrupt entries left |",
             "|---|---|---|---|---|---|"]
    for o in outcomes:
        lines.append(f"| {_cell(o['fault'])} | {_cell(o['store'])} | {o['processes']} x {o['repetitions']} | "
                     f"{_cell(o['happened'])} | {o['failed_calls']} | {o['bad_entries']} |")
    return "\n".join(lines) + "\n" + HOW


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, help="render this summary instead of running the suite")
    ap.add_argument("--out", type=Path, default=DOC, help=f"where to write the page (default {DOC})")
    args = ap.parse_args(argv)
    if args.json is not None:
        data = json.loads(args.json.read_text())
    else:
        with tempfile.TemporaryDirectory(prefix="miopy-reliability-") as tmp:
            summary = Path(tmp) / "summary.json"
            status = run_suite(summary)
            if status != 0:
                print(f"report: the reliability suite failed (pytest status {status}); page not written",
                      file=sys.stderr)
                return status
            data = json.loads(summary.read_text())
    args.out.write_text(render(data))
    print(f"report: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
