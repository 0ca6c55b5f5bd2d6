"""Distributed tuning's scaling (issue 20): the same tuning jobs with `miopy-tune --workers 1` and `--workers W`
on one multi-GPU machine (one Dask worker per GPU), each from an empty user DB and cold kernel caches (miopy's
and the NVIDIA driver's: CUDA_CACHE_DISABLE=1), wall time and jobs per minute, and whether the two runs left
records of the same kind (the same (problem, solver) perf records and the same find problems).

    python -m benchmarks.distributed_scaling --network resnet50 -n 16 --layers 8 --budget 5 \
        --workers 1,2 --out benchmarks/results/h100x2-distributed-scaling.json

Run it on the device tool's nvidia-h100-x2 / nvidia-h200-x2 with .whl carried (dask and distributed travel as
wheels). The jobs are the first --layers unique forward layers of the network, every solver with a tuning
grid, --budget points each (random strategy, fixed seed), then a find job per problem. The results page is
docs/results/distributed.md (`python -m benchmarks.report`).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import harness
from miopy import Direction
from miopy.conv import networks

ROOT = harness.ROOT


def records(db: Path) -> dict:
    if not db.exists():
        return {"perf": [], "find": []}
    with sqlite3.connect(db) as conn:
        perf = sorted({(p, s) for p, s in conn.execute("SELECT problem, solver FROM perf")})
        find = sorted({p for (p,) in conn.execute("SELECT DISTINCT problem FROM find")})
        devices = sorted({d for (d,) in conn.execute("SELECT DISTINCT device FROM perf")})
    return {"perf": perf, "find": find, "devices": devices}


def one_run(workers: int, lines: Path, args, work: Path) -> dict:
    base = work / f"w{workers}"
    base.mkdir()
    env = {**os.environ, "MIOPY_CACHE_DIR": str(base / "cache"), "MIOPY_USER_DB_PATH": str(base / "user.db"),
           "MIOPY_SYSTEM_DB_PATH": str(base / "no-system.db"), "CUDA_CACHE_DISABLE": "1"}
    command = [sys.executable, "-m", "miopy.cli.tune", "--file", str(lines), "-F", "1", "--workers", str(workers),
               "--strategy", "random", "--budget", str(args.budget), "--seed", "0", "--find"]
    print(f"[workers {workers}] {' '.join(command[1:])}", flush=True)
    start = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=args.timeout, cwd=ROOT)
        output, status = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        output, status = f"{exc.stdout or ''}{exc.stderr or ''}\ntimed out after {args.timeout} s", -1
    wall = time.perf_counter() - start
    (Path(args.out).parent / f"distributed-w{workers}.log").write_text(output if isinstance(output, str) else "")
    found = re.search(r"(\d+) jobs in ([\d.]+) s \(([\d.]+) jobs/min\)", output or "")
    result = {"workers": workers, "status": status, "wall_s": wall,
              "jobs": int(found.group(1)) if found else None,
              "report_s": float(found.group(2)) if found else None,
              "jobs_per_min": float(found.group(3)) if found else None,
              **records(base / "user.db")}
    print(f"[workers {workers}] exit {status}, wall {wall:.1f} s, {result['jobs']} jobs, "
          f"{result['jobs_per_min']} jobs/min, {len(result['perf'])} perf records, {len(result['find'])} find",
          flush=True)
    print("\n".join((output or "").splitlines()[-25:]), flush=True)
    return result


def page(sources: list[harness.Source], out: Path) -> list[str]:
    """docs/results/distributed.md: each result file's runs and speedups."""
    lines = harness.page_head(
        "Distributed tuning: scaling over GPUs", sources,
        "The same tuning jobs with `miopy-tune --workers 1` and `--workers W` on one multi-GPU machine (one Dask "
        "worker per GPU), each from an empty user DB and cold kernel caches (miopy's and the driver's), wall time "
        "and jobs per minute, and whether the runs left records of the same kind (the same (problem, solver) perf "
        "records and the same find problems).")
    for s in sources:
        lines += report(s.data)
    return lines


def report(data: dict) -> list[str]:
    """One result's section: each run, and the speedup (bounded from below when the baseline hit its time limit)."""
    out = [f"## {data['network']}, first {data['layers']} forward layers, N={data['n']}, {data['budget']} points "
           "per solver", "",
           "| workers | finished | wall s | jobs done | jobs/min | perf records | find records |",
           "|---|---|---|---|---|---|---|"]
    for r in data["runs"]:
        out.append(f"| {r['workers']} | {'yes' if r['status'] == 0 else 'no: stopped at its time limit'} | "
                   f"{r['wall_s']:.1f} | {r['jobs'] if r['jobs'] is not None else '-'} | "
                   f"{r['jobs_per_min'] if r['jobs_per_min'] is not None else '-'} | {r['perf_records']} | "
                   f"{r['find_records']} |")
    base, *others = data["runs"]
    for r in (r for r in others if r["status"] == 0):
        if base["status"] == 0:
            same = data.get(f"same_records_{r['workers']}_and_{base['workers']}")
            out.append(f"\nSpeedup of {r['workers']} workers over {base['workers']}: "
                       f"{base['wall_s'] / r['wall_s']:.2f}x; same records: {same}.")
            continue
        written = base["perf_records"] + base["find_records"]
        line = (f"\nThe {base['workers']}-worker baseline did not finish, so the speedup of {r['workers']} workers is "
                f"bounded, not measured: at least {base['wall_s'] / r['wall_s']:.2f}x")
        if written and r["jobs"]:
            estimate = base["wall_s"] * r["jobs"] / written / r["wall_s"]
            line += (f"; about {estimate:.2f}x if the baseline's rate ({written} jobs written in "
                     f"{base['wall_s']:.0f} s) held for all {r['jobs']} jobs")
        out.append(line + ". Its records cannot be compared with an unfinished baseline's.")
    return out + [""]


def summarise(network: str, n: int, layers: int, budget: int, runs: list[dict]) -> dict:
    """The JSON of a set of runs: each run (with its record keys), and the speedups over the fewest workers."""
    runs = sorted(runs, key=lambda r: r["workers"])
    counted = [r | {"perf_records": len(r["perf"]), "find_records": len(r["find"])} for r in runs]
    result = harness.new_record(None, network=network, n=n, layers=layers, budget=budget, runs=counted)
    names = sorted({d.split("|")[1] for r in runs for d in r.get("devices", ())})   # the workers' devices
    result["meta"]["device"] = f"{runs[-1]['workers']} x {', '.join(names)}" if names else None
    base = runs[0]
    for r in runs[1:]:
        if base["wall_s"] and r["status"] == 0 and base["status"] == 0:
            result[f"speedup_{r['workers']}_over_{base['workers']}"] = base["wall_s"] / r["wall_s"]
            if base["jobs_per_min"] and r["jobs_per_min"]:
                result[f"jobs_per_min_ratio_{r['workers']}_over_{base['workers']}"] = \
                    r["jobs_per_min"] / base["jobs_per_min"]
            result[f"same_records_{r['workers']}_and_{base['workers']}"] = \
                r["perf"] == base["perf"] and r["find"] == base["find"]
    return result


def merge(paths: list[Path]) -> dict:
    """Runs made in separate calls of this script (one worker count each, the same jobs) as one result."""
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise SystemExit(f"--merge: no such file: {', '.join(missing)}")
    parts = [json.loads(p.read_text()) for p in paths]
    setting = {k: parts[0][k] for k in ("network", "n", "layers", "budget")}
    for part, path in zip(parts, paths):
        if {k: part[k] for k in setting} != setting:
            raise SystemExit(f"{path}: other jobs than {paths[0]} ({setting})")
        if any("perf" not in r for r in part["runs"]):
            raise SystemExit(f"{path}: its runs do not list their records; cannot compare them")
    runs = [{**r, "perf": [tuple(x) for x in r["perf"]]} for part in parts for r in part["runs"]]
    return summarise(setting["network"], setting["n"], setting["layers"], setting["budget"], runs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--network", default="resnet50")
    ap.add_argument("-n", type=int, default=16)
    ap.add_argument("--layers", type=int, default=8, help="first unique forward layers of the network")
    ap.add_argument("--budget", type=int, default=5, help="tuning points per (problem, solver)")
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts, each a separate run")
    ap.add_argument("--timeout", type=int, default=240, help="seconds allowed to each run")
    ap.add_argument("--merge", type=Path, nargs="+", help="combine JSONs of separate calls into --out")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.merge:
        if not args.out:
            ap.error("--merge needs --out")
        result = merge(args.merge)
        harness.write_json(args.out, result)
        print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))
        return 0
    if not args.out:
        ap.error("--out is required (or --merge)")
    problems = networks.problems(args.network, args.n, [Direction.FORWARD])[:args.layers]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        lines = work / "layers.txt"
        lines.write_text("".join(f"miopy-driver {p.driver_command()}\n" for p in problems))
        runs = []
        for w in (int(v) for v in args.workers.split(",")):
            runs.append(one_run(w, lines, args, work))
            result = summarise(args.network, args.n, len(problems), args.budget, runs)
            harness.write_json(args.out, result)
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
