"""Child processes of the reliability suite: `python -m tests.reliability.worker COMMAND 'JSON'`.

Commands:
  workload  build the given tagged specs, then find and run convolutions (all given directions) on the
            given problems, checking each result against the float64 reference; both lists are visited
            from a rotated start so processes overlap.
  compile   build scale.cl specs tagged with the given numbers (cheap, distinct programs).
  hang      build one tagged spec and stop dead at a point of the cache write ("compiling", "mid-write",
            "before-rename"), printing HANG, so the parent can SIGKILL the process there.
  cli       run miopy-driver or miopy-tune (their console-script entry points, `main(argv)`) in this
            process, so that what they write to the DBs is reported like the other commands' writes.
  db-writes a loop of user DB writes (a find ranking, a perf record, a tuning point per step) on a made-up
            device, printing WROTE <i> after each step, for the parent to SIGKILL at random moments.
  db-hang   write one whole find ranking, then stop dead halfway through the next write's transaction,
            printing HANG, so the parent can SIGKILL the process inside it.

Progress lines go to stdout (READY after the handle exists, DONE <tag> per compile); the last line is
``RESULT {json}``: kernel cache counts, calls made, failures, every warning miopy logged and every DB record
written (``written``: what PerfDb, FindDb and TuningLog put successfully). With "barrier" set, work starts
only once that file exists, so several processes start together; with "list_dir" set, the result maps the
files under that directory at the end to their sizes (for stores that vanish with the child's mount
namespace).
"""
from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import miopy
from miopy import db, kernel_cache
from miopy.accuracy import max_error
from miopy.cli import driver, tune
from miopy.conv import api, reference
from miopy.conv.problem import Direction
from miopy.kernel_cache import KernelCache, KernelSpec

TOLERANCE = 1e-3
DB_DEVICE = "reliability|made-up device|0|1CU"  # the device of db-writes' records
RANKING = 16  # records per find ranking that db-writes and db-hang write (one transaction each)


class WarningLog(logging.Handler):
    """Keeps the message of every WARNING or worse that miopy logs."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def tagged_spec(tag: int) -> KernelSpec:
    return KernelSpec.make("scale.cl", "fill", {"MIOPY_TEST_TAG": tag})


def say(line: str) -> None:
    print(line, flush=True)


def wait_for(barrier: str | None) -> None:
    while barrier and not Path(barrier).exists():
        time.sleep(0.005)


def descriptors(problem: list[int]):
    n, c, h, w, k, r, s, pad, stride, dil, groups = problem
    x = miopy.TensorDesc("FP32", (n, c, h, w))
    wd = miopy.TensorDesc("FP32", (k, c // groups, r, s))
    conv = miopy.ConvDesc(pad, stride, dil, groups)
    return x, wd, conv, conv.output_desc(x, wd)


def run_checked(handle, problem: list[int], direction: Direction, seed: int,
                mode: str | None = None) -> miopy.FindResult:
    """Find (in mode), run the fastest record once, and compare with the reference (AssertionError if wrong)."""
    xd, wd, conv, _ = descriptors(problem)
    found = api.find_convolution(handle, xd, wd, conv, direction, mode=mode)
    check_record(handle, problem, direction, found[0], seed)
    return found


def check_record(handle, problem: list[int], direction: Direction, record: miopy.ConvAlgoPerf, seed: int) -> None:
    """Run one find record on random inputs and compare with the reference (AssertionError if wrong)."""
    xd, wd, conv, yd = descriptors(problem)
    rng = np.random.default_rng(seed)
    x, w, y = (rng.standard_normal(d.dims).astype(np.float32) for d in (xd, wd, yd))
    geo = dict(pad=conv.pad, stride=conv.stride, dilation=conv.dilation, groups=conv.groups)
    dev = {name: handle.to_device(a) for name, a in (("x", x), ("w", w), ("y", y))}
    if direction is Direction.FORWARD:
        api.convolution_forward(handle, xd, dev["x"], wd, dev["w"], conv, yd, dev["y"], algo=record)
        got, want = dev["y"], reference.conv_forward(x, w, **geo)
    elif direction is Direction.BACKWARD_DATA:
        api.convolution_backward_data(handle, yd, dev["y"], wd, dev["w"], conv, xd, dev["x"], algo=record)
        got, want = dev["x"], reference.conv_backward_data(y, w, xd.dims, **geo)
    else:
        api.convolution_backward_weights(handle, yd, dev["y"], xd, dev["x"], conv, wd, dev["w"], algo=record)
        got, want = dev["w"], reference.conv_backward_weights(x, y, wd.dims, **geo)
    err = max_error(handle.to_host(got), want)
    assert err <= TOLERANCE, f"{record.solver_id} error {err:.2e}"


def rotated(items: list, start: int) -> list:
    start = start % len(items) if items else 0
    return items[start:] + items[:start]


def workload(handle, args: dict) -> dict:
    built = compile_tags(handle, {"tags": rotated(args.get("tags", []), args.get("rotate", 0))})
    failures, calls = built["failures"], built["calls"]
    for i, problem in enumerate(rotated(args["problems"], args.get("rotate", 0))):
        for direction in map(Direction, args.get("directions", [1, 2, 4])):
            calls += 1
            try:
                run_checked(handle, problem, direction, seed=i)
            except Exception as exc:  # every failure is data for the parent
                failures.append(f"{problem} {direction.name}: {type(exc).__name__}: {exc}")
    return {"calls": calls, "failures": failures}


def compile_tags(handle, args: dict) -> dict:
    if "lock_timeout" in args:   # a lock still held then fails fast, with a warning, instead of after 120 s
        kernel_cache.LOCK_TIMEOUT_S = args["lock_timeout"]
    failures = []
    for tag in args["tags"]:
        try:
            handle.kernels.kernel(tagged_spec(tag))
        except Exception as exc:
            failures.append(f"tag {tag}: {type(exc).__name__}: {exc}")
        say(f"DONE {tag}")
    return {"calls": len(args["tags"]), "failures": failures}


def hang(handle, args: dict) -> dict:
    """Stop forever at args["at"] while building one spec (under its entry lock)."""
    def stop(*_, **__):
        say("HANG")
        time.sleep(600)

    at = args["at"]
    if at == "compiling":
        KernelCache._compile = stop
    elif at == "before-rename":
        os.replace = stop
    elif at == "mid-write":
        real_fdopen = os.fdopen
        os.fdopen = lambda fd, mode: _HalfWriter(real_fdopen(fd, mode), stop)
    handle.kernels.kernel(tagged_spec(args["tag"]))
    return {"calls": 1, "failures": ["did not hang"]}


class _HalfWriter:
    """A file that writes the first half of what it is given, flushes it to disk, then stops."""

    def __init__(self, file, stop):
        self.file, self.stop = file, stop

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    def write(self, data: bytes) -> None:
        self.file.write(data[:len(data) // 2])
        self.file.flush()
        os.fsync(self.file.fileno())
        self.stop()


def run_cli(handle, args: dict) -> dict:
    """miopy-driver (args["program"] == "driver") or miopy-tune, with args["argv"]; its stdout is kept."""
    program = driver if args["program"] == "driver" else tune
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = program.main(args["argv"])
    text = out.getvalue()
    if program is driver:  # a call per direction: found, run and verified
        calls, ok = text.count("Convolution: solver"), text.count("Verifies OK") == text.count("Convolution: solver")
    else:  # a call per problem: tuned, with a verified winner stored
        calls, ok = text.count("(miopy-driver conv"), "not stored" not in text
    failures = [] if status == 0 and ok and calls else [f"{args['program']} exited {status}:\n{text}"]
    return {"calls": calls, "failures": failures, "stdout": text}


def ranking(i: int) -> list[db.FindRecord]:
    return [db.FindRecord(f"Solver{r}", "naive", 0.5 + r, 64 * r, {"STEP": i, "R": r}) for r in range(RANKING)]


def db_writes(handle, args: dict) -> dict:
    """Steps start .. start+count-1: each writes a find ranking, a perf record and a tuning point."""
    failures = []
    for i in range(args["start"], args["start"] + args["count"]):
        problem, params = f"problem-{i}", {"WG": (64, 128, 256)[i % 3]}
        done = [db.find_db().put(DB_DEVICE, problem, ranking(i)),
                db.user_perf_db().put(DB_DEVICE, problem, "ConvDirectNaive", params, 1.0 + i),
                db.tuning_log().put(DB_DEVICE, problem, "ConvDirectNaive", db.TuningPoint(params, 1.0 + i, None))]
        if not all(done):
            failures.append(f"step {i}: writes {done}")
        say(f"WROTE {i}")
    return {"calls": 3 * args["count"], "failures": failures}


def db_hang(handle, args: dict) -> dict:
    """A whole ranking for problem "before", then stop halfway through the transaction of "killed"'s."""
    db.find_db().put(DB_DEVICE, "before", ranking(0))

    def stop_halfway(conn, statements):
        conn.execute("BEGIN IMMEDIATE")
        for sql, values in statements[:len(statements) // 2]:
            conn.execute(sql, values)
        say("HANG")
        time.sleep(600)

    db.store._transaction = stop_halfway
    db.find_db().put(DB_DEVICE, "killed", ranking(1))
    return {"calls": 2, "failures": ["did not hang"]}


WRITE_ENTRIES = {  # what a successful put reports, from its arguments (params as db.params_key)
    db.PerfDb: lambda device, problem, solver, params, time_ms: ["perf", device, problem, solver,
                                                                 db.params_key(params)],
    db.FindDb: lambda device, problem, records: ["find", device, problem,
                                                 [[r.solver_id, db.params_key(r.params)] for r in records]],
    db.TuningLog: lambda device, problem, solver, point: [
        "tuning", device, problem, solver, db.params_key(point.params),
        point.time_ms if math.isfinite(point.time_ms) else None, point.error],
}


def record_db_writes() -> list[list]:
    """Every successful PerfDb, FindDb and TuningLog put of this process lands in the returned list, as
    WRITE_ENTRIES describes it. (Every caller passes FindDb.put a list, which can be read twice.)"""
    written: list[list] = []
    for cls, entry in WRITE_ENTRIES.items():
        def put(self, *args, _put=cls.put, _entry=entry):
            ok = _put(self, *args)
            if ok:
                written.append(_entry(*args))
            return ok
        cls.put = put
    return written


def count_kernel_caches() -> list[KernelCache]:
    """Every KernelCache this process makes (a CLI's handle among them) lands in the returned list."""
    made: list[KernelCache] = []
    original = KernelCache.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self)

    KernelCache.__init__ = init
    return made


COMMANDS = {"workload": workload, "compile": compile_tags, "hang": hang, "cli": run_cli, "db-writes": db_writes,
            "db-hang": db_hang}


def main(argv: list[str]) -> int:
    command, args = argv[0], json.loads(argv[1]) if len(argv) > 1 else {}
    warnings = WarningLog()
    logging.getLogger("miopy").addHandler(warnings)
    caches, written = count_kernel_caches(), record_db_writes()
    try:
        handle = miopy.Handle()
        say("READY")
        wait_for(args.get("barrier"))
        result = COMMANDS[command](handle, args)
        result.update({k: sum(c.stats[k] for c in caches) for k in caches[0].stats})
    except Exception:
        result = {"calls": 0, "failures": [traceback.format_exc()]}
    result["warnings"] = warnings.messages
    result["written"] = written
    if args.get("list_dir"):
        root = Path(args["list_dir"])
        found = root.rglob("*") if root.is_dir() else ()
        result["files"] = {str(p.relative_to(root)): p.stat().st_size for p in sorted(found) if p.is_file()}
    say("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
