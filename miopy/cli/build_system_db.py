"""Build the system DB: find records (--find) or tuned perf records of named layer sets on this device.

    python -m miopy.cli.build_system_db --find --out miopy/data/system_perf.db \\
        --networks alexnet,resnet50,vgg16,googlenet,mobilenet,boda -F 0 [-n N] [--deadline S] [--jobs J]
    python -m miopy.cli.build_system_db --out miopy/data/system_perf.db --networks alexnet,resnet50 \\
        -n 1 --budget 4 [-F 1] [-S SOLVER] [--limit LAYERS] [--layers NAME,...] [--merge]

--find runs a normal find (accuracy-checked) of every layer in each direction and writes its ranking into
OUT's find table, one transaction per problem, skipping problems OUT already holds for this device and
miopy version (unless a solver that applies now is missing from the record, a solver added since, or one
in it applies no more, a rule changed since): a build stopped by --deadline, a timeout or a kill resumes
where it stopped. -n 0 (the default with --find) takes each set's usual batch
(miopy.conv.networks.DEFAULT_BATCH). Kernels of the
next problems are compiled ahead in --jobs worker processes while the current one is timed.

Tuning runs against a temporary user DB, so the machine's own user DB is left alone; only the perf records
go into OUT, which uses a rollback journal so it can ship inside the package and be opened read-only. OUT is
rewritten after every problem, so a stopped build keeps what it tuned. --merge keeps OUT's existing records of
other devices or problems (tune on each device, one file) and skips the problems OUT already holds for every
solver it would tune: a stopped build resumes where it stopped.
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from .. import db
from ..conv import networks, registry
from ..conv.problem import directions
from ..errors import MiopyError
from ..find import find_problem, params_for
from ..handle import Handle
from ..plan import checked_solution
from ..tuning import Compiler, TuneOptions, tunable, tune_problem


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m miopy.cli.build_system_db", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="DB file to write")
    ap.add_argument("--networks", default="alexnet,resnet50", help="comma-separated layer sets")
    ap.add_argument("-n", "--batchsize", type=int, default=None, help="batch (0: each set's usual; default "
                                                                       "1 when tuning, 0 with --find)")
    ap.add_argument("-F", "--forw", type=int, default=1, choices=(0, 1, 2, 4),
                    help="1 fwd, 2 bwd-data, 4 bwd-weights, 0 all")
    ap.add_argument("-S", "--solver", default=None, help="tune only this solver")
    ap.add_argument("--limit", type=int, default=None, help="tune only the first LIMIT layers of each network")
    ap.add_argument("--strategy", default="fast", help="search strategy (default fast; see miopy-tune)")
    ap.add_argument("--time-budget", type=float, default=None, help="seconds per problem, shared among its solvers")
    ap.add_argument("--file", type=Path, default=None,
                    help="tuning: the problems of these miopy-driver lines instead of --networks' layers")
    ap.add_argument("--layers", default="", help="comma-separated layer names to tune (default: all)")
    ap.add_argument("--budget", type=int, default=4, help="most points per solver and problem")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--merge", action="store_true", help="keep OUT's existing records not tuned again")
    ap.add_argument("--json", type=Path, default=None,
                    help="tuning: append each tuned record (default and tuned time, speedup, params) to this JSON")
    ap.add_argument("--find", action="store_true", help="write find records (resumable) instead of tuning")
    ap.add_argument("--deadline", type=float, default=None, help="--find: start no problem after this many s")
    ap.add_argument("--ahead", type=int, default=None, help="--find: problems compiled ahead (default 2 x jobs)")
    return ap


def find_problems(args: argparse.Namespace) -> list:
    """The problems of --networks, each layer in every direction of -F, at -n (0: each set's usual batch),
    taking the sets' layers in turn (a partial build covers every set)."""
    per_set = []
    for name in args.networks.split(","):
        batch = args.batchsize or networks.DEFAULT_BATCH[name]
        per_set.append([[layer.problem(batch, d) for d in directions(args.forw)]
                        for layer in networks.layer_set(name)[:args.limit]
                        if not args.layers or layer.name in args.layers.split(",")])
    turns = itertools.zip_longest(*per_set)
    return [p for turn in turns for layer in turn if layer is not None for p in layer]


def build_find(args: argparse.Namespace) -> int:
    """Find every problem OUT lacks and write its records; returns how many problems were found now."""
    handle = Handle()
    device, out = handle.info.device_id, db.BuildDb(args.out)
    start, done, failed = time.perf_counter(), 0, 0
    try:
        have = out.find_solvers(device)
        todo, keys, stale = [], set(), 0
        known = {s.id for s in registry.solvers()}
        for p in find_problems(args):
            if p.key() in keys:
                continue
            ranked = have.get(p.key())
            applicable = {s.id for s in registry.solvers() if s.is_applicable(p, handle.info)}
            # stale: a solver that applies now is missing, or one in the record applies no more (find's
            # _from_find_db would not serve it either)
            outdated = ranked is not None and bool(applicable - ranked or (ranked & known) - applicable)
            if ranked is None or outdated:
                todo.append(p)
                keys.add(p.key())
                stale += outdated
        print(f"{len(have)} problems in {args.out} already, {len(todo)} to find on {handle.info.name} "
              f"({stale} of them again: a solver that applies now is missing from their record, or one in it "
              f"applies no more)", flush=True)
        with Compiler(handle, args.jobs) as compiler:
            ahead = args.ahead if args.ahead is not None else 2 * compiler.jobs
            submitted = 0
            for i, problem in enumerate(todo):
                if args.deadline is not None and time.perf_counter() - start > args.deadline:
                    print(f"deadline: stopping with {len(todo) - i} problems left", flush=True)
                    break
                if ahead and submitted < min(len(todo), i + ahead + 1):
                    _compile_ahead(handle, compiler, todo[max(submitted, i + 1):i + ahead + 1])
                    submitted = i + ahead + 1
                t0 = time.perf_counter()
                try:
                    result = find_problem(handle, problem, mode="normal", store=False)
                except MiopyError as exc:
                    failed += 1
                    print(f"[{i + 1}/{len(todo)}] {problem.key()}: {type(exc).__name__}: {exc}", flush=True)
                    continue
                out.put_find(device, problem.key(), [db.FindRecord(r.solver_id, r.algorithm, r.time_ms,
                                                                   r.workspace_bytes, r.params) for r in result])
                done += 1
                rejected = f" rejected {result.rejected}" if result.rejected else ""
                print(f"[{i + 1}/{len(todo)}] {problem.key()} {time.perf_counter() - t0:.2f} s: "
                      + ", ".join(f"{r.solver_id} {r.time_ms:.3f}" for r in result[:3]) + rejected, flush=True)
    finally:
        out.close()
    print(f"found {done} problems ({failed} failed) in {time.perf_counter() - start:.0f} s", flush=True)
    return done


def _compile_ahead(handle: Handle, compiler: Compiler, problems: list) -> None:
    """Start compiling the default candidates of problems in the workers (failures show in find)."""
    solutions = []
    for problem in problems:
        for solver in registry.solvers():
            if solver.is_applicable(problem, handle.info):
                with contextlib.suppress(MiopyError):
                    params = params_for(solver, problem, handle)[0]
                    solutions.append(checked_solution(handle, problem, solver.id, params))
    compiler.prefetch(solutions)


def build(args: argparse.Namespace) -> int:
    """Tune and write OUT; returns the number of records written."""
    if args.file is not None:
        from .tune import file_problems
        problems, skipped = file_problems(args.file)
        for message in skipped:
            print(f"build_system_db: {message}", file=sys.stderr)
    else:
        problems = [layer.problem(args.batchsize, d) for name in args.networks.split(",")
                    for layer in networks.layer_set(name)[:args.limit]
                    if not args.layers or layer.name in args.layers.split(",") for d in directions(args.forw)]
    handle = Handle()
    solvers = [registry.get(args.solver)] if args.solver else None
    device = handle.info.device_id
    held = {tuple(row[:3]) for row in _existing(args.out)} if args.merge and args.out.exists() else set()
    count, wrote = len(held), False
    with Compiler(handle, args.jobs) as compiler:
        for i, problem in enumerate(problems, 1):
            wanted = [s.id for s in tunable(handle, problem, solvers)]
            if wanted and all((device, problem.key(), s) in held for s in wanted):
                print(f"[{i}/{len(problems)}] {problem.key()}: in {args.out} already", flush=True)
                continue
            start = time.perf_counter()
            results = tune_problem(handle, problem, solvers=solvers, strategy_name=args.strategy,
                                   options=TuneOptions(budget=args.budget, time_budget_s=args.time_budget),
                                   compiler=compiler)
            print(f"[{i}/{len(problems)}] {problem.key()} tuned in {time.perf_counter() - start:.1f} s: "
                  + ", ".join(f"{r.solver_id} {r.best_ms:.3f} ms" for r in results), flush=True)
            if args.json is not None:
                _append_json(args.json, device, problem.key(), results, time.perf_counter() - start)
            # OUT after every problem (the first write replaces it unless --merge): a run stopped by a timeout or
            # a kill keeps what it tuned, and one resumed with --merge skips it
            count, wrote = _write_perf(args.out, merge=args.merge or wrote), True
            held = {tuple(row[:3]) for row in _existing(args.out)}
    return count if wrote or held else _write_perf(args.out, merge=args.merge)


def _write_perf(out: Path, merge: bool) -> int:
    """Rewrite OUT's perf table from the tuning user DB's records (with merge, over OUT's own, the faster of two
    kept), keeping OUT's find rows; returns the records written."""
    rows = {tuple(row[:3]): row for row in _existing(out)} if merge and out.exists() else {}
    for row in db.user_perf_db().rows():
        rows[tuple(row[:3])] = faster(rows.get(tuple(row[:3])), row)
    db.write_perf_file(out, rows.values(), find_rows=_existing_find(out))
    return len(rows)


def _append_json(path: Path, device: str, problem: str, results, seconds: float) -> None:
    """Add one problem's tuning results to path's list (rewritten whole: a killed run keeps what it wrote)."""
    try:
        rows = json.loads(path.read_text()) if path.exists() else []
    except ValueError:
        rows = []
    rows += [{"device": device, "problem": problem, "solver": r.solver_id, "default_ms": r.default_ms,
              "best_ms": r.best_ms, "speedup": r.speedup, "params": r.best_params, "seconds": seconds}
             for r in results]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rows, indent=1, default=str))
    tmp.replace(path)


def faster(kept: tuple | None, new: tuple) -> tuple:
    """The record to keep for one (device, problem, solver): the faster one (rows end with time_ms,
    miopy_version, date), so re-tuning with a smaller budget or an unlucky search never makes it worse."""
    return new if kept is None or new[-3] <= kept[-3] else kept


def _existing(path: Path) -> list[tuple]:
    return db.PerfDb(db.Store(path, readonly=True), "existing DB").rows()


def _existing_find(path: Path) -> list[tuple]:
    """OUT's find rows as stored (tuning rewrites OUT's perf table and must keep them: --merge or not)."""
    if not path.exists():
        return []
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        try:
            return conn.execute("SELECT * FROM find").fetchall()
        except sqlite3.DatabaseError:
            return []


@contextlib.contextmanager
def _scratch_user_db():
    """Point MIOPY_USER_DB_PATH at a temporary file for the duration, so the real user DB stays out of it."""
    previous = os.environ.get("MIOPY_USER_DB_PATH")
    with tempfile.TemporaryDirectory(prefix="miopy-system-db-") as tmp:
        os.environ["MIOPY_USER_DB_PATH"] = str(Path(tmp) / "tuning.db")
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("MIOPY_USER_DB_PATH")
            else:
                os.environ["MIOPY_USER_DB_PATH"] = previous


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.batchsize is None:
        args.batchsize = 0 if args.find else 1
    with _scratch_user_db():
        try:
            if args.find:
                build_find(args)
                return 0
            count = build(args)
        except MiopyError as exc:
            print(f"build_system_db: error: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
    print(f"wrote {count} perf records to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
