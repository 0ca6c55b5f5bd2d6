"""Compiling candidates ahead of timing, in parallel worker processes.

Each worker (spawn context) first ties its life to the parent's (miopy.lifeline: it exits when the parent
dies, SIGKILL included), then opens its own Handle on the tuning device, found again by platform and device
index, and calls ``handle.kernels.kernel(spec)`` for every launch of a solution, so the binary lands in the
disk kernel cache; the main process then loads it from disk instead of compiling. With jobs=0, or when
the disk cache is disabled (workers could not hand binaries over), kernels are built in the main process.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing
import os
from collections.abc import Sequence

import pyopencl as cl

from .. import config
from ..errors import check
from ..handle import Handle
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
    for pi, platform in enumerate(cl.get_platforms()):
        devices = platform.get_devices()
        if handle.device in devices:
            return pi, devices.index(handle.device)
    raise LookupError(f"{handle.device.name} is in no platform's device list")


def _open_device(address: tuple[int, int], parent: tuple[int, bool] | None = None) -> None:
    """A worker's initializer: tie its life to the parent's (lifeline), then open its handle."""
    global _WORKER_HANDLE
    if parent is not None:
        die_with_parent(parent)
    platform_index, device_index = address
    _WORKER_HANDLE = Handle(device=cl.get_platforms()[platform_index].get_devices()[device_index])


def _build(specs: tuple[KernelSpec, ...]) -> str | None:
    """In a worker: build every spec into the disk cache; the error text, or None."""
    try:
        assert _WORKER_HANDLE is not None, "worker started without its device"
        for spec in specs:
            _WORKER_HANDLE.kernels.kernel(spec)
    except Exception as exc:  # failures are data: reported back, never fatal to the worker
        return f"{type(exc).__name__}: {exc}"
    return None


class Compiler:
    """Builds solutions' kernels for one handle; use as a context manager so the workers are shut down."""

    def __init__(self, handle: Handle, jobs: int | None = None):
        self.handle = handle
        check(jobs is None or as_int(jobs, "jobs") >= 0, "jobs",
              f"must be >= 0 (0: compile in this process), got {jobs}")
        self.jobs = default_jobs() if jobs is None else int(jobs)
        self._pool: cf.ProcessPoolExecutor | None = None
        self._worked = False  # some worker has answered: a later crash is a config's, not the pool's

    @property
    def parallel(self) -> bool:
        return self.jobs > 0 and not config.cache_disabled()

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

    def compile(self, solutions: Sequence[Solution]) -> list[str | None]:
        """Build every solution's kernels; per solution, the error text or None. In parallel mode the
        binaries are left in the disk cache and the main process loads them when it times them."""
        if self.parallel:
            errors = self._build_in_workers(solutions)
            if errors is not None:
                return errors
        return [self._build_here(s) for s in solutions]

    def prefetch(self, solutions: Sequence[Solution]) -> list[cf.Future]:
        """Start building solutions' kernels in the workers and return at once (the disk cache receives
        them; a later build in this process loads them, waiting on the entry's lock while one is under
        way). Nothing happens without parallel workers."""
        if not self.parallel:
            return []
        try:
            pool = self._workers()
            return [pool.submit(_build, tuple(launch.spec for launch in s.launches)) for s in solutions]
        except (cf.process.BrokenProcessPool, RuntimeError) as exc:
            warn_once(logger, f"compile workers unavailable ({exc!r}); not compiling ahead")
            self.close()
            self.jobs = 0
            return []

    def _build_in_workers(self, solutions: Sequence[Solution]) -> list[str | None] | None:
        """Errors per solution; None when the workers could not start at all (compiling moves in-process)."""
        pool = self._workers()
        futures = [pool.submit(_build, tuple(launch.spec for launch in s.launches)) for s in solutions]
        errors = []
        for future in futures:
            try:
                errors.append(future.result())
                self._worked = True
            except (cf.process.BrokenProcessPool, cf.CancelledError) as exc:
                self.close()
                if not self._worked:
                    warn_once(logger, f"compile workers could not start ({exc!r}); compiling in the main process "
                                      "(a script that tunes must guard its main code with if __name__ == '__main__')")
                    self.jobs = 0
                    return None
                errors.append(f"compile worker died: {exc!r}")
        return errors

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
