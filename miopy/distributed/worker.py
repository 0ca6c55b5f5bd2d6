"""What runs inside a Dask worker: one Handle per worker process on its device, a private user DB, jobs.

A worker never writes the cluster's user DB: it tunes and finds against a private DB file of its own
(so tuning resumes inside a job as usual) and sends every record back as values; the client is the single
writer. Compiled kernels go into the worker's own kernel cache (on its own host), never across hosts.

Device choice, first that applies: the environment variable MIOPY_DEVICE_INDEX (an index into the
devices of the first platform that has GPUs, else the CPU devices), the index the client assigned with
``assign_device`` (a local cluster gives worker i device i when there are enough GPUs), else Handle()'s
default.
"""
from __future__ import annotations

import multiprocessing.util
import os
import shutil
import tempfile
import time
import traceback
from pathlib import Path

from .. import db
from ..errors import MiopyError, NotApplicable
from ..find import find_problem
from ..handle import Handle
from ..tuning import Compiler, tune_solver
from .jobs import FIND, Job, JobResult, PerfRow

_HANDLE: Handle | None = None
_COMPILER: Compiler | None = None
_ASSIGNED: int | None = None
_DB_DIR: str | None = None


def assign_device(index: int | None) -> int | None:
    """Called on a worker (client.run) before its first job: the device index it should open."""
    global _ASSIGNED
    _ASSIGNED = index
    return index


def worker_handle() -> Handle:
    """This worker process's Handle, opened on first use."""
    global _HANDLE
    if _HANDLE is None:
        index = os.environ.get("MIOPY_DEVICE_INDEX")
        chosen = int(index) if index not in (None, "") else _ASSIGNED
        _HANDLE = Handle(device=_device(chosen)) if chosen is not None else Handle()
        _private_db()
    return _HANDLE


def close_worker() -> None:
    """Shut this worker's compile pool (its processes must not outlive the worker)."""
    global _COMPILER
    if _COMPILER is not None:
        _COMPILER.close()
        _COMPILER = None


def device_id() -> str:
    """The device id this worker's records are keyed by (opens the handle)."""
    return worker_handle().info.device_id


def gpu_count() -> int:
    """GPUs of the first platform that has any (what a local cluster divides among its workers)."""
    import pyopencl as cl
    for platform in cl.get_platforms():
        gpus = [d for d in platform.get_devices() if d.type & cl.device_type.GPU]
        if gpus:
            return len(gpus)
    return 0


def _device(index: int):
    import pyopencl as cl
    platforms = cl.get_platforms()
    for platform in platforms:
        gpus = [d for d in platform.get_devices() if d.type & cl.device_type.GPU]
        if gpus:
            return gpus[index % len(gpus)]
    devices = [d for p in platforms for d in p.get_devices()]
    return devices[index % len(devices)]


def _private_db() -> None:
    """Point this process's user DB at a private file (the client holds the real one)."""
    global _DB_DIR
    _DB_DIR = tempfile.mkdtemp(prefix=f"miopy-worker-{os.getpid()}-")
    # Removed at exit (its records went to the client already): multiprocessing's finalizers run in worker
    # processes, where atexit handlers do not.
    multiprocessing.util.Finalize(None, shutil.rmtree, args=(_DB_DIR,), kwargs={"ignore_errors": True},
                                  exitpriority=0)
    os.environ["MIOPY_USER_DB_PATH"] = str(Path(_DB_DIR) / "worker.db")


def run_job(job: Job, tuned: list[JobResult] | None = None) -> JobResult:
    """Run one job on this worker's device and return its records (or its error: failures are data).

    tuned: results of tuning jobs this find job waits for; their perf records are put in the private DB
    first, so find times the tuned params."""
    from distributed import get_worker
    try:
        worker = get_worker().address
    except ValueError:
        worker = f"pid-{os.getpid()}"
    start = time.perf_counter()
    handle = worker_handle()
    result = JobResult(job, handle.info.device_id, worker, 0.0)
    try:
        if job.kind == FIND:
            _seed_perf(handle, tuned or [])
            _find(handle, job, result)
        else:
            _tune(handle, job, result)
    except NotApplicable as exc:   # tune_solver judges it on this worker's device: not a failure
        result.not_applicable = str(exc)
    except MiopyError as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # a job's failure is data; the worker lives on for the next one
        result.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"
    result.seconds = time.perf_counter() - start
    return result


def _tune(handle: Handle, job: Job, result: JobResult) -> None:
    assert job.solver_id is not None
    solver = job.problem.registry.get(job.solver_id)
    outcome = tune_solver(handle, job.problem, solver, strategy_name=job.strategy, options=job.options,
                          timer=job.timer, compiler=_compiler(handle))
    device, key = handle.info.device_id, job.problem.key()
    record = db.user_perf_db().get(device, key, solver.id) if outcome.stored else None
    if record is not None:
        result.perf.append(PerfRow(solver.id, dict(record.params), record.time_ms))
    result.tuning[solver.id] = list(db.tuning_log().get(device, key, solver.id).values())
    result.summary = {"default_ms": outcome.default_ms, "best_ms": outcome.best_ms, "speedup": outcome.speedup,
                      "measured": outcome.measured, "failed": outcome.failed, "stored": outcome.stored}


def _compiler(handle: Handle) -> Compiler:
    """This worker's compile pool, kept across jobs (MIOPY_COMPILE_JOBS sets its size; 0: in-process)."""
    global _COMPILER
    if _COMPILER is None:
        jobs = os.environ.get("MIOPY_COMPILE_JOBS")
        _COMPILER = Compiler(handle, int(jobs) if jobs not in (None, "") else None)
    return _COMPILER


def _find(handle: Handle, job: Job, result: JobResult) -> None:
    found = find_problem(handle, job.problem, mode="normal", timer=job.timer, store=True)
    result.find = db.find_db().get(handle.info.device_id, job.problem.key())
    result.summary = {"best": found[0].solver_id, "best_ms": found[0].time_ms, "ranked": len(found),
                      "stored": bool(result.find)}


def _seed_perf(handle: Handle, tuned: list[JobResult]) -> None:
    perf = db.user_perf_db()
    for done in tuned:
        if done.device_id == handle.info.device_id:
            for row in done.perf:
                perf.put(done.device_id, done.job.problem.key(), row.solver_id, row.params, row.time_ms)
