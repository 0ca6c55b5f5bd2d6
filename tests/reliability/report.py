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
these against miopy and checks that no call fails, no result is wrong and no stored entry is left corrupt.
It runs in CI with the rest of the tests. This page is generated from the suite's own counts by
`python3 tests/reliability/report.py`; do not edit it by hand.

Real faults where the machine allows them: several OS processes at once, SIGKILL, a read-only bind mount
and a full tmpfs made in a private mount namespace (`unshare -rm`, skipped where user namespaces are off;
root ignores permission bits, so `chmod` would prove nothing), a path through a regular file, a `HOME`
that leads nowhere. Only the in-process read-only case is simulated (EROFS from every call that creates a
file), to assert its single warning with pytest's `caplog`.
"""

HOW = """
## How miopy survives them

- **Kernel binary cache** (`miopy/kernel_cache.py`): an entry is written to a temporary file and renamed
  into place under a per-entry `filelock` lock (flock: released when its holder dies, so a stale lock file
  blocks no one; a live holder that hangs is waited out for 120 s, then the kernel is built in memory). Its header holds a SHA-256 of the program key and the binary, so a truncated, altered or
  misplaced entry (one copied under another spec's or another device's key) is a miss; a binary that does
  not load or lacks the wanted kernel is a miss too. A miss is rebuilt. The lock holder removes temporary
  files that a killed writer of the same entry left. A cache directory that cannot be created or written
  (read-only, full, a path through a file) leaves miopy working from memory. Every fault is logged once
  per kind and cache directory (`miopy.log.warn_once`), never once per entry or call.
- **No usable home**: PoCL lists no device and pyopencl fails its first kernel when their caches under
  `XDG_CACHE_HOME` / `~/.cache` cannot be made. `Handle()` then points `XDG_CACHE_HOME` at a private
  temporary directory for the process (removed at exit), with one warning.
- **Bad input** (descriptors, channels / groups, dtypes, y descriptor, buffers, tuning values, alpha /
  beta) raises a `MiopyError` subclass naming the field before anything is enqueued; every buffer passed
  in is left as it was.
- **Broken solvers**: a kernel that fails to build or launch is recorded in `FindResult.skipped` with its
  reason and find goes on; an explicit record of such a configuration raises a `MiopyError`.
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
