"""Tuning's compile-ahead workers: compiling candidates ahead of timing, in parallel worker processes.

Each worker (spawn context) first ties its life to the parent's (miopy.lifeline: it exits when the parent
dies, SIGKILL included), then opens its own Handle on the tuning device, found again by platform and device
index, and builds every launch of a solution with its own kernel cache (in its memory, and on this host's
disk when MIOPY_CACHE_DIR is usable). What it built travels back as a value, never through that directory:
where the parent's cache entries hold program binaries (NVIDIA's PTX, ...) the worker sends each program's
binary and the parent adopts it (into memory, and into its own disk cache when it has one:
KernelCache.adopt); where the driver keeps its own binary cache (PoCL) and asking it for a binary would
compile every kernel again, the worker sends back only whether the build succeeded, and the parent's build
from source is served by the driver's cache on this host (the workers are processes of this machine). So
parallel compiling needs no usable kernel cache directory. With jobs=0 kernels are built in the main process.

``start(solutions)`` pipelines: it hands the builds to the workers and returns at once, one Build per
solution, whose ``wait()`` gives the build's outcome after its binaries were adopted. Adoption runs in a
pool of threads of this process (where a driver loads a binary by compiling it again, NVIDIA's PTX, those
loads overlap each other and the timing of earlier points), so a tuning run times point i while the
workers build the points after it.

Find compiles with another mechanism, miopy.find_compile_pool: long-lived ``python -m`` helper processes per
handle that take single kernels over pipes while the calling thread compiles alongside, with no futures to
pipeline (a find needs every candidate built before it times any) and no spawn (which would re-run an unguarded
user script in each worker). This pool lives for one tuning run (a context manager), builds a grid point's
whole solution per task, overlaps the builds with timing, and falls back to building in this process when its
workers cannot start.
"""
from __future__ import annotations

import concurrent.futures as cf
import functools
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Sequence

from ..errors import check
from ..handle import Handle, handle_at
from ..handle import device_address as address_of
from ..kernel_cache import KernelSpec
from ..lifeline import die_with_parent, parent_token
from ..log import warn_once
from ..solver import Solution
from ..tensor import as_int

logger = logging.getLogger(__name__)

_WORKER_HANDLE: Handle | None = None


def default_jobs() -> int:
    """Compile workers when --jobs is not given: min(4, CPU count)."""
    return min(4, os.cpu_count() or 1)


def device_address(handle: Handle) -> tuple[int, int]:
    """(platform index, device index) of the handle's device, valid in any process on this machine."""
    return address_of(handle.device)


def _open_device(address: tuple[int, int], parent: tuple[int, bool] | None = None) -> None:
    """A worker's initializer: tie its life to the parent's (lifeline), then open its handle."""
    global _WORKER_HANDLE
    if parent is not None:
        die_with_parent(parent)
    _WORKER_HANDLE = handle_at(address)


def _build(specs: tuple[KernelSpec, ...], send_binaries: bool) -> tuple[str | None, tuple[bytes, ...]]:
    """In a worker: build every spec (with the worker's own kernel cache); (the error text or None, the
    programs' binaries in specs' order when send_binaries, else none)."""
    try:
        assert _WORKER_HANDLE is not None, "worker started without its device"
        kernels = _WORKER_HANDLE.kernels
        if send_binaries:
            return None, tuple(kernels.binary(spec) for spec in specs)
        for spec in specs:
            kernels.kernel(spec)
    except Exception as exc:  # failures are data: reported back, never fatal to the worker
        return f"{type(exc).__name__}: {exc}", ()
    return None, ()


class Build:
    """One solution's build under way; ``wait()`` gives the error text or None once its kernels are usable in
    this process (without workers the build happens in wait)."""

    def __init__(self, compiler: Compiler, solution: Solution, worker: cf.Future | None = None,
                 adopted: cf.Future | None = None):
        self.compiler, self.solution, self.worker, self.adopted = compiler, solution, worker, adopted

    def wait(self) -> str | None:
        if self.adopted is None:
            return self.compiler._build_here(self.solution)
        try:
            return self.adopted.result()
        except (cf.process.BrokenProcessPool, cf.CancelledError, RuntimeError) as exc:
            return self.compiler._worker_failed(exc, self.solution)

    def cancel(self) -> None:
        """Drop the build if no worker has started it (a run that stopped early)."""
        if self.worker is not None:
            self.worker.cancel()


class Compiler:
    """Builds solutions' kernels for one handle; use as a context manager so the workers are shut down."""

    def __init__(self, handle: Handle, jobs: int | None = None):
        self.handle = handle
        check(jobs is None or as_int(jobs, "jobs") >= 0, "jobs",
              f"must be >= 0 (0: compile in this process), got {jobs}")
        self.jobs = default_jobs() if jobs is None else int(jobs)
        self._pool: cf.ProcessPoolExecutor | None = None
        self._adopters: cf.ThreadPoolExecutor | None = None
        self.adopt_s = 0.0   # seconds adopter threads spent loading workers' binaries (summed over threads)
        self._adopt_lock = threading.Lock()
        self._worked = False  # some worker has answered: a later crash is a config's, not the pool's

    @property
    def parallel(self) -> bool:
        return self.jobs > 0

    @property
    def batch_size(self) -> int:
        """How many candidates to compile before timing them: enough to keep every worker busy."""
        return 2 * self.jobs if self.parallel else 1

    def __enter__(self) -> Compiler:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
        if self._adopters is not None:
            self._adopters.shutdown(cancel_futures=True)
            self._adopters = None

    def compile(self, solutions: Sequence[Solution]) -> list[str | None]:
        """Build every solution's kernels; per solution, the error text or None. In parallel mode the
        workers' binaries are adopted by this handle's kernel cache (module docstring)."""
        if self.parallel:
            errors = self._build_in_workers(solutions)
            if errors is not None:
                return errors
        return [self._build_here(s) for s in solutions]

    def start(self, solutions: Sequence[Solution]) -> list[Build]:
        """Start building every solution's kernels (in the workers, when there are any) and return at once;
        each Build's wait() gives that solution's error text or None, its binaries adopted by then."""
        if not self.parallel:
            return [Build(self, s) for s in solutions]
        try:
            pool = self._workers()
            if self._adopters is None:
                self._adopters = cf.ThreadPoolExecutor(self.jobs, thread_name_prefix="miopy-adopt")
            send = self.handle.kernels.store_binaries
            builds = []
            for solution in solutions:
                specs = tuple(launch.spec for launch in solution.launches)
                worker = pool.submit(_build, specs, send)
                builds.append(Build(self, solution, worker, self._adopters.submit(self._settle, specs, worker)))
            return builds
        except (cf.process.BrokenProcessPool, RuntimeError) as exc:
            warn_once(logger, f"compile workers unavailable ({exc!r}); compiling in the main process")
            self.close()
            self.jobs = 0
            return [Build(self, s) for s in solutions]

    def _settle(self, specs: tuple[KernelSpec, ...], worker: cf.Future) -> str | None:
        """In an adopter thread: wait for a worker's build, adopt its binaries; its error text or None."""
        error, binaries = worker.result()
        self._worked = True
        start = time.perf_counter()
        for spec, binary in zip(specs, binaries):
            self.handle.kernels.adopt(spec, binary)
        with self._adopt_lock:
            self.adopt_s += time.perf_counter() - start
        return error

    def _worker_failed(self, exc: BaseException, solution: Solution) -> str | None:
        """A Build whose worker (pool) failed: before any worker answered, the workers could not start, so
        compiling moves into this process; after, the crash was this config's."""
        self.close()
        if not self._worked:
            if self.jobs:
                warn_once(logger, f"compile workers could not start ({exc!r}); compiling in the main process "
                                  "(a script that tunes must guard its main code with if __name__ == '__main__')")
            self.jobs = 0
            return self._build_here(solution)
        return f"compile worker died: {exc!r}"

    def prefetch(self, solutions: Sequence[Solution]) -> list[cf.Future]:
        """Start building solutions' kernels in the workers and return at once: each binary is adopted as it
        arrives (a build in this process meanwhile builds it here, or on PoCL is served by the driver's
        cache). Nothing happens without parallel workers."""
        if not self.parallel:
            return []
        try:
            pool = self._workers()
            send = self.handle.kernels.store_binaries
            futures = []
            for solution in solutions:
                specs = tuple(launch.spec for launch in solution.launches)
                future = pool.submit(_build, specs, send)
                future.add_done_callback(functools.partial(self._adopt, specs))
                futures.append(future)
            return futures
        except (cf.process.BrokenProcessPool, RuntimeError) as exc:
            warn_once(logger, f"compile workers unavailable ({exc!r}); not compiling ahead")
            self.close()
            self.jobs = 0
            return []

    def _build_in_workers(self, solutions: Sequence[Solution]) -> list[str | None] | None:
        """Errors per solution; None when the workers could not start at all (compiling moves in-process)."""
        pool = self._workers()
        send = self.handle.kernels.store_binaries
        specs = [tuple(launch.spec for launch in s.launches) for s in solutions]
        futures = [pool.submit(_build, spec_list, send) for spec_list in specs]
        errors = []
        for spec_list, future in zip(specs, futures):
            try:
                error, binaries = future.result()
                self._worked = True
                for spec, binary in zip(spec_list, binaries):
                    self.handle.kernels.adopt(spec, binary)
                errors.append(error)
            except (cf.process.BrokenProcessPool, cf.CancelledError) as exc:
                self.close()
                if not self._worked:
                    warn_once(logger, f"compile workers could not start ({exc!r}); compiling in the main process "
                                      "(a script that tunes must guard its main code with if __name__ == '__main__')")
                    self.jobs = 0
                    return None
                errors.append(f"compile worker died: {exc!r}")
        return errors

    def _adopt(self, specs: tuple[KernelSpec, ...], future: cf.Future) -> None:
        """A prefetched build's binaries into this handle's kernel cache (a failed build is left to find)."""
        if future.cancelled() or future.exception() is not None:
            return
        for spec, binary in zip(specs, future.result()[1]):
            self.handle.kernels.adopt(spec, binary)

    def _build_here(self, solution: Solution) -> str | None:
        try:
            for launch in solution.launches:
                self.handle.kernels.kernel(launch.spec)
        except Exception as exc:  # failures are data
            return f"{type(exc).__name__}: {exc}"
        return None

    def _workers(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            logger.debug("starting %d compile workers", self.jobs)
            self._pool = cf.ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("spawn"),
                                                initializer=_open_device,
                                                initargs=(device_address(self.handle), parent_token()))
        return self._pool
