"""The whole test suite, the fault suite's report, the big-memory tensors and the slow fuzzing, on one device.

    python -m benchmarks.gpu_tests --out DIR [--parts suite,bigmem,slow] [--workers 12]

Each part is one pytest run on the default device (NVIDIA's OpenCL on the GPU machine, through
benchmarks/gpu_tests.sh; PoCL here):
  suite   the whole test suite as CI runs it (-m "not slow and not bigmem"), the fault suite included
  suite-mma, suite-rest   the same in two runs: tests/solvers/test_mma.py, and everything else (each fits a
          device call where the whole suite no longer does)
  bigmem  tensors past 2^31 elements in every direction (-m bigmem; serially: each holds ~20 GB)
  slow    fuzzing at scale: 1000 bad inputs per public call (-m slow)
Every part writes the fault suite's rows (MIOPY_RELIABILITY_REPORT) and its counts. DIR receives
gpu-tests-<device>.json (device, per part: passed / failed / skipped / deselected, seconds, the failed tests,
the command) and reliability-<device>.json (the fault table's column of docs/results/reliability.md:
benchmarks.reliability), merged with what earlier runs of other parts left there, and each part's pytest log.
Exit status: 0 when every part run passed. The tests run as pytest subprocesses; nothing here imports tests/.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import harness
from benchmarks import reliability as report

ROOT = harness.ROOT

SUITE = ["-m", "not slow and not bigmem"]
MMA_TESTS = "tests/solvers/test_mma.py"
PARTS = {   # name -> (pytest arguments, parallel)
    "suite": ([*SUITE, "tests"], True),
    # the suite in two calls (one outgrew a 600 s device call on an H100): the tensor-core tests, the rest
    "suite-mma": ([*SUITE, MMA_TESTS], True),
    "suite-rest": ([*SUITE, f"--ignore={MMA_TESTS}", "tests"], True),
    "bigmem": (["-m", "bigmem", "tests"], False),
    "slow": (["-m", "slow", "tests"], True),
}
COUNTS = ("passed", "failed", "skipped", "deselected", "errors", "xfailed", "xpassed")


def device() -> dict:
    """The default device as miopy picks it."""
    code = ("import json, miopy; h = miopy.Handle(); "
            "print(json.dumps({'name': h.info.name, 'platform': h.info.platform, 'device_id': h.info.device_id, "
            "'is_gpu': h.info.is_gpu, 'global_mem_bytes': h.info.global_mem_bytes, "
            "'max_alloc_bytes': h.info.max_alloc_bytes}))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_part(name: str, workers: int, out: Path, summary: Path, timeout: int) -> dict:
    """One pytest run; its counts, time, failed tests and command (its log kept as OUT/gpu-tests-<part>.log)."""
    arguments, parallel = PARTS[name]
    # -v names each result as it happens, so a run cut short by its timeout still says what failed
    command = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", *arguments]
    env = dict(os.environ, MIOPY_RELIABILITY_REPORT=str(summary))
    if parallel and workers > 1:
        command += ["-n", str(workers)]
        # (find compiles in threads in the tests: tests/conftest.py; the pool's own tests ask for processes)
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        output, status = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:   # its captured output is bytes whatever text= says
        output, status = f"{_text(exc.stdout)}\n{_text(exc.stderr)}\ntimed out after {timeout} s", -1
    seconds = round(time.monotonic() - started, 1)
    (out / f"gpu-tests-{name}.log").write_text(output)
    counts, complete = counts_of(output)
    failed = sorted({m.group(1) for m in re.finditer(r"(?:^|\] )(?:FAILED|ERROR) (tests/\S+)", output, re.M)})
    shown = " ".join(["python3 -m pytest", *command[3:]])
    return {**counts, "seconds": seconds, "status": status, "failed_tests": failed, "command": shown,
            **({} if complete else {"note": "cut short: counts of the tests that reported before the stop"})}


def _text(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data or ""


# one -v result line, as pytest prints it alone ("tests/a.py::t PASSED [ 4%]") or under xdist ("[gw3] [ 4%] PASSED
# tests/a.py::t")
# (parametrize ids may hold spaces: an id runs to the end of the line, or to its result word)
RESULT = re.compile(r"^(?:\[gw\d+\] \[\s*\d+%\] (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS) (tests/.+?)\s*$"
                    r"|(tests/.+?) (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)(?: +\[\s*\d+%\])?\s*$)", re.M)
RESULT_KEYS = {"PASSED": "passed", "FAILED": "failed", "SKIPPED": "skipped", "ERROR": "errors", "XFAIL": "xfailed",
               "XPASS": "xpassed"}


def counts_of(output: str) -> tuple[dict, bool]:
    """The counts of pytest's closing line ("== 3 passed, 4 skipped in 2.8s ==", whatever counts it has: a part
    whose tests all skip has no "passed"), and True; a run cut short has none: then the -v result lines that
    reported, each test once (its last word), and False."""
    summary_line = r"\d+ (passed|failed|errors?|skipped|deselected|xfailed|xpassed)\b.* in [\d.]+s"
    last = next((line for line in reversed(output.splitlines()) if re.search(summary_line, line)), "")
    counts = {key: 0 for key in COUNTS}
    if last:
        for number, key in re.findall(r"(\d+) (passed|failed|skipped|deselected|errors?|xfailed|xpassed)", last):
            counts["errors" if key.startswith("error") else key] = int(number)
        return counts, True
    outcome = {}
    for m in RESULT.finditer(output):
        word, test = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        outcome[test] = word
    for word in outcome.values():
        counts[RESULT_KEYS[word]] += 1
    return counts, False


def merge(path: Path, new: dict) -> dict:
    """new's parts over those an earlier run left in path."""
    if path.is_file():
        old = json.loads(path.read_text())
        new = {**old, **new, "parts": {**old.get("parts", {}), **new["parts"]}}
    harness.write_json(path, new)
    return new


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--parts", default="suite,bigmem,slow", help=f"comma-separated, of {sorted(PARTS)}")
    ap.add_argument("--workers", type=int, default=min(12, os.cpu_count() or 1), help="pytest-xdist workers")
    ap.add_argument("--timeout", type=int, default=540, help="seconds allowed to each part")
    args = ap.parse_args(argv)
    parts = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        ap.error(f"unknown parts {unknown}; known: {sorted(PARTS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    dev = device()
    label = f"{dev['name']} ({dev['platform']})"
    print(f"gpu_tests: device {label}; parts {parts}", flush=True)
    results, summaries = {}, {}
    with tempfile.TemporaryDirectory(prefix="miopy-gpu-tests-") as tmp:
        for name in parts:
            summary = Path(tmp) / f"{name}.json"
            results[name] = run_part(name, args.workers, args.out, summary, args.timeout)
            r = results[name]
            print(f"gpu_tests: {name}: {r['passed']} passed, {r['failed']} failed, {r['errors']} errors, "
                  f"{r['skipped']} skipped, {r['deselected']} deselected in {r['seconds']} s", flush=True)
            try:
                summaries[name] = report.load_summary(summary)
            except FileNotFoundError:
                print(f"gpu_tests: {name} wrote no fault-suite rows", flush=True)
    meta = {**harness.run_meta(), "device": label, "device_id": dev["device_id"]}
    record = merge(args.out / f"gpu-tests-{report.slug(label)}.json",
                   {"meta": meta, "device": label, "device_info": dev, "parts": results})
    if summaries:
        reliability = args.out / f"reliability-{report.slug(label)}.json"
        earlier = json.loads(reliability.read_text()) if reliability.is_file() else None
        # the fault suite's seconds per part, this run's replacing an earlier run's of the same part
        part_seconds = {**(earlier or {}).get("part_seconds", {}),
                        **{name: s["seconds"] for name, s in summaries.items()}}
        data = {"meta": meta, "device": label, "seconds": round(sum(part_seconds.values()), 1),
                "part_seconds": part_seconds,
                "outcomes": report.merge_runs([earlier, *summaries.values()] if earlier else list(summaries.values())),
                "runs": record["parts"]}
        harness.write_json(reliability, data)
        print(f"gpu_tests: wrote {reliability}")
    ok = all(r["status"] == 0 for r in results.values())
    print(f"gpu_tests: {'all parts passed' if ok else 'FAILURES: see the logs in ' + str(args.out)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
