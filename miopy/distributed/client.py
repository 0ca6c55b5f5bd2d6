"""The client side of distributed tuning: plan the jobs, send them to a Dask cluster, write every record.

    with cluster(workers=2) as client:                 # or cluster(scheduler="tcp://host:8786")
        report = run(client, jobs)                     # tuning jobs, then the find jobs that wait on them

The client is the single writer of the user perf DB, find DB and tuning log: workers send records back
as values, so no two processes ever write one DB file. Jobs whose records the DB already holds for a
device are skipped (a run resumes where it stopped); a job whose worker dies is retried on another
worker by the scheduler (up to ``retries`` times more); a job that fails (an error inside miopy) is
reported, its records are not written, and the run goes on.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import db
from ..errors import BadParam, MiopyError
from ..solver import Problem, Solver
from ..tuning import DEFAULT_BUDGET, TuneOptions
from .jobs import FIND, TUNE, Job, JobResult
from .worker import assign_device, close_worker, device_id, gpu_count, run_job

logger = logging.getLogger(__name__)
RETRIES = 2
CONNECT_TIMEOUT_S = 30


def tune_jobs(problems: Sequence[Problem], solvers: Sequence[Solver] | None = None, *, strategy: str = "local",
              options: TuneOptions | None = None, timer=None, find: bool = True) -> list[Job]:
    """A tuning job per (problem, tunable solver) and, with find, a find job per problem.

    solvers: those to tune (default: each problem's registry's solvers with a grid); applicability is judged
    on the worker's device (a job that does not apply there comes back not applicable, with the reason, and
    is counted apart from failures).
    """
    options = options or TuneOptions(budget=DEFAULT_BUDGET)
    jobs = []
    for problem in problems:
        chosen = solvers if solvers is not None else problem.registry.solvers()
        jobs += [Job(TUNE, problem, s.id, strategy, options, timer) for s in chosen if s.grid]
        if find:
            jobs.append(Job(FIND, problem, None, strategy, options, timer))
    return jobs


@contextlib.contextmanager
def cluster(workers: int | None = None, scheduler: str | None = None) -> Iterator[Any]:
    """A Dask client: on an existing scheduler (address), or on a local cluster of `workers` worker
    processes (one thread each: a worker owns one device). On a local cluster with as many GPUs as
    workers, worker i opens GPU i; with fewer GPUs (or none: PoCL) every worker opens the default device."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise MiopyError("distributed tuning needs Dask: pip install 'miopy[distributed]'") from None
    if (workers is None) == (scheduler is None):
        raise BadParam("workers", "give either a number of local workers or a scheduler address")
    if scheduler is not None:
        try:
            connected = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError, ValueError) as exc:   # unreachable, refused, or not an address
            raise MiopyError(f"--scheduler: cannot reach a Dask scheduler at {scheduler!r} ({exc})") from None
        with connected as client:
            client.register_plugin(MiopyWorker(0))   # devices from each worker's MIOPY_DEVICE_INDEX
            yield client
        return
    if workers is None or isinstance(workers, bool) or workers < 1:
        raise BadParam("workers", f"must be a positive number of workers, got {workers!r}")
    import dask
    # Workers are not daemons, so each may start its own compile processes (miopy.tuning.Compiler).
    with dask.config.set({"distributed.worker.daemon": False}), \
            LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as local, \
            Client(local) as client:
        gpus = client.submit(gpu_count, pure=False).result()
        client.register_plugin(MiopyWorker(gpus if gpus >= workers > 1 else 0))
        yield client


try:
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:   # the extra is not installed: cluster() says so when called
    WorkerPlugin = object  # type: ignore[assignment,misc]


class MiopyWorker(WorkerPlugin):
    """Set-up and tear-down of miopy on each worker, restarted ones included: with gpus > 0 worker i
    opens GPU i (local clusters name their workers 0, 1, ...); at tear-down its compile pool is shut."""

    def __init__(self, gpus: int):
        self.gpus = gpus

    def setup(self, worker) -> None:
        if self.gpus:
            try:
                assign_device(int(worker.name) % self.gpus)
            except (TypeError, ValueError):
                pass

    def teardown(self, worker) -> None:
        close_worker()


@dataclass
class Report:
    """What a run did: per job, done / skipped (already in the DB) / not applicable on its device / failed,
    with the results and the wall time."""

    results: list[JobResult] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)   # (device id, job name)
    not_applicable: list[JobResult] = field(default_factory=list)
    failed: list[JobResult] = field(default_factory=list)
    seconds: float = 0.0
    devices: dict[str, list[str]] = field(default_factory=dict)    # device id -> worker addresses

    @property
    def jobs_per_minute(self) -> float:
        return 60.0 * len(self.results) / self.seconds if self.seconds > 0 else 0.0

    def table(self) -> str:
        """A summary table: per device and job kind, jobs done, skipped, failed, seconds; tuned speedups."""
        rows: dict[tuple[str, str], Counter] = defaultdict(Counter)
        seconds: dict[tuple[str, str], float] = defaultdict(float)
        for r in self.results:
            rows[(r.device_id, r.job.kind)]["done"] += 1
            seconds[(r.device_id, r.job.kind)] += r.seconds
        for r in self.failed:
            rows[(r.device_id, r.job.kind)]["failed"] += 1
        for r in self.not_applicable:
            rows[(r.device_id, r.job.kind)]["n/a"] += 1
        for device, name in self.skipped:
            rows[(device, name.split(":", 1)[0])]["skipped"] += 1
        lines = [f"{'device':<48}{'kind':<6}{'done':>6}{'skipped':>9}{'n/a':>6}{'failed':>8}{'job s':>9}"]
        for (device, kind), c in sorted(rows.items()):
            lines.append(f"{device[:47]:<48}{kind:<6}{c['done']:>6}{c['skipped']:>9}{c['n/a']:>6}{c['failed']:>8}"
                         f"{seconds[(device, kind)]:>9.1f}")
        speedups = [r.summary["speedup"] for r in self.results if r.job.kind == TUNE and r.summary.get("stored")]
        lines.append(f"{len(self.results)} jobs in {self.seconds:.1f} s ({self.jobs_per_minute:.1f} jobs/min) on "
                     f"{sum(len(w) for w in self.devices.values())} worker(s), {len(self.devices)} device kind(s)")
        if speedups:
            lines.append(f"tuned records: {len(speedups)}, speedup over defaults: median "
                         f"{sorted(speedups)[len(speedups) // 2]:.2f}x, best {max(speedups):.2f}x")
        for r in self.failed:
            lines.append(f"FAILED {r.job.name} on {r.device_id[:40]}: {str(r.error).splitlines()[0]}")
        return "\n".join(lines)


def run(client, jobs: Sequence[Job], *, progress: bool = True, retries: int = RETRIES) -> Report:
    """Run jobs on every kind of device the cluster's workers have, writing each result as it arrives."""
    start = time.perf_counter()
    report = Report(devices=_devices(client))
    pending: dict = {}   # future -> (job, device)
    for device, workers in report.devices.items():
        pending.update(_submit_device(client, jobs, device, workers, report, retries))
    _collect(pending, report, progress)
    report.seconds = time.perf_counter() - start
    return report


def _devices(client) -> dict[str, list[str]]:
    ids = client.run(device_id)   # worker address -> device id (each worker opens its handle here)
    devices: dict[str, list[str]] = defaultdict(list)
    for address, dev in sorted(ids.items()):
        devices[dev].append(address)
    return dict(devices)


def _submit_device(client, jobs: Sequence[Job], device: str, workers: list[str], report: Report,
                   retries: int) -> dict:
    """Submit the jobs this device still needs; a find job waits for its problem's tuning jobs."""
    tuning: dict[str, list] = defaultdict(list)
    futures = {}
    priority = _priorities(jobs)
    for job in jobs:
        if _already_done(job, device):
            report.skipped.append((device, job.name))
            continue
        key = f"miopy-{job.name}@{device}".replace(" ", "_")
        deps = tuning[job.problem.key()] if job.kind == FIND else []
        future = client.submit(run_job, job, deps or None, key=key, workers=workers, allow_other_workers=False,
                               retries=retries, pure=False, priority=priority[job.problem.key()])
        if job.kind == TUNE:
            tuning[job.problem.key()].append(future)
        futures[future] = (job, device)
    return futures


def _priorities(jobs: Sequence[Job]) -> dict[str, int]:
    """Dask priority per problem (higher runs first): the problems with the most arithmetic first, so the longest
    jobs (their points time longest) start early and the run does not end on one long job with idle workers.
    Ties keep the submission order."""
    problems: dict[str, Any] = {}
    for job in jobs:
        problems.setdefault(job.problem.key(), job.problem)
    def cost(problem) -> float:
        flops = getattr(problem, "flops", None)
        return float(flops()) if callable(flops) else 0.0
    ranked = sorted(problems, key=lambda key: -cost(problems[key]))   # stable: equal costs keep their order
    return {key: len(ranked) - i for i, key in enumerate(ranked)}


def _already_done(job: Job, device: str) -> bool:
    key = job.problem.key()
    if job.kind == TUNE:
        return db.user_perf_db().get(device, key, job.solver_id or "") is not None
    return bool(db.find_db().get(device, key))


def _collect(futures: dict, report: Report, progress: bool) -> None:
    from distributed import as_completed
    bar = _bar(len(futures)) if progress else None
    try:
        for future in as_completed(list(futures)):
            try:
                result = future.result()
            except Exception as exc:   # the task itself failed (its worker died more often than allowed)
                job, device = futures[future]
                logger.warning("job %s could not be run: %s", job.name, exc)
                report.failed.append(JobResult(job, device, "?", 0.0, error=f"{type(exc).__name__}: {exc}"))
            else:
                if result.ok:
                    write(result)
                    report.results.append(result)
                elif result.not_applicable is not None and result.error is None:
                    report.not_applicable.append(result)
                else:
                    report.failed.append(result)
            if bar is not None:
                running = sum(1 for f in futures if f.status == "pending")
                bar.set_postfix(running=running, failed=len(report.failed), refresh=False)
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()


def _bar(total: int):
    from tqdm import tqdm
    return tqdm(total=total, desc="jobs", unit="job", file=sys.stderr)


def write(result: JobResult) -> None:
    """Write a finished job's records into the user DBs (perf, tuning log, find), keyed by its device."""
    key = result.job.problem.key()
    perf, log = db.user_perf_db(), db.tuning_log()
    for row in result.perf:
        perf.put(result.device_id, key, row.solver_id, row.params, row.time_ms)
    for solver_id, points in result.tuning.items():
        for point in points:
            log.put(result.device_id, key, solver_id, point)
    if result.find:
        db.find_db().put(result.device_id, key, result.find)
