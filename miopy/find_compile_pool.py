"""Find's compile pool: a find's cold kernels compiled in helper processes, for drivers whose compiler does not
run in parallel within one process (NVIDIA's OpenCL: a cold find compiled its candidates no faster in 12 threads
than in one).

A pool belongs to one Handle and starts on the first find that has kernels to compile. Its workers are plain
``python -m miopy.find_compile_pool`` processes (not multiprocessing's spawn, which would re-run the caller's
main script in each worker when it lacks an ``if __name__ == "__main__"`` guard, as an ordinary script calling
``convolution_forward`` does). Each opens its own context on the device, reads kernel specs from a pipe,
builds them with its own kernel cache and sends back each program's binary (or only whether it built, where
the driver keeps its own binary cache); the parent adopts the binaries into its handle's kernel cache. No
directory is shared. The calling thread compiles from the other end of the same list until the first worker
is ready, so nothing waits for the workers to start (and then leaves the rest to them: a compile in the
calling process would hold up the loads of the workers' programs there); whatever a worker could not build
(it died, or its binary did not load) is built in the calling thread at the end. Workers exit when their pipe
closes: after IDLE_S without a build (each worker holds a context on the device), when the handle is
collected, or when the parent dies.

Tuning compiles with another mechanism, miopy.tuning.compile_ahead: a process pool that lives for one tuning
run, builds whole solutions (a grid point's launches) ahead of the point being timed and hands back futures,
so timing and compiling overlap (pipelining). It may use multiprocessing's spawn because ``miopy-tune`` and
tuning scripts guard their main code. This pool instead serves find on any user's script, outlives one call
(the handle's next find reuses the started workers), takes single kernels, and lets the caller compile
alongside until a worker is ready: a find waits for all its kernels at once, so it has nothing to pipeline.
"""
from __future__ import annotations

import collections
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from multiprocessing.connection import Connection

from . import config
from .handle import Handle, device_address, handle_at
from .kernel_cache import KernelSpec
from .lifeline import die_with_parent

logger = logging.getLogger(__name__)

IDLE_S = 30.0
READY_TIMEOUT_S = 60.0
BUILD_TIMEOUT_S = 300.0   # a worker silent this long on one program is abandoned (the caller builds it)

# A worker compiles in threads if at all, and keeps pyopencl's caches off: each kernel object it makes would
# otherwise write pyopencl's invoker cache (one sqlite file for every process of the user), and a dozen
# workers writing it held the parent's reads of it for seconds (a cold find of VGG-16 conv1's backward-weights
# on the H100: 7.3 s, 5.8 of them waiting on that file). miopy keeps its own binaries (miopy.kernel_cache).
WORKER_ENV = {"MIOPY_FIND_COMPILE": "threads", "PYOPENCL_NO_CACHE": "1"}

_POOLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # Handle -> its CompilePool
_POOLS_LOCK = threading.Lock()


def wanted(handle: Handle) -> bool:
    """Whether find compiles in processes on this handle: MIOPY_FIND_COMPILE=processes, or =auto (the default)
    on NVIDIA's OpenCL, on POSIX systems only (the workers' pipes)."""
    mode = config.find_compile()
    if mode == "threads" or os.name != "posix":
        return False
    return mode == "processes" or "nvidia" in handle.info.platform.lower()


def pool_for(handle: Handle, jobs: int) -> CompilePool:
    """The handle's pool (one per handle, made on first use)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(handle)
        if pool is None or pool.jobs != jobs:
            if pool is not None:
                pool.close()
            pool = _POOLS[handle] = CompilePool(handle, jobs)
        return pool


class _Worker:
    """One worker process and its two pipe ends (requests out, replies in)."""

    def __init__(self, address: tuple[int, int], send_binaries: bool):
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # miopy importable there
        path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
        command = [sys.executable, "-m", "miopy.find_compile_pool", str(address[0]), str(address[1]),
                   str(int(send_binaries)), str(os.getpid()), str(to_child_r), str(from_child_w)]
        try:
            self.process = subprocess.Popen(command, pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                            env={**os.environ, **WORKER_ENV, "PYTHONPATH": path})
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self.requests = Connection(to_child_w, readable=False)
        self.replies = Connection(from_child_r, writable=False)
        self.ready: bool | None = None   # None: not heard from yet; False: failed to start or died
        self.lock = threading.Lock()     # one build at a time per worker

    def wait_ready(self, pending: collections.deque) -> bool:
        """Whether the worker has opened its device, waiting while there is work it could take (the calling
        thread may finish everything first: then False, and the worker is still starting for the next find)."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while self.ready is None and pending:
            try:
                if self.replies.poll(0.02):
                    self.ready = self.replies.recv() == "ready"
            except (EOFError, OSError, pickle.UnpicklingError):
                self.ready = False
            if self.ready is None and time.monotonic() > deadline:
                self.ready = False
        return bool(self.ready)

    def build(self, spec: KernelSpec) -> tuple[str | None, bytes]:
        """(error text or None, binary or b"") for spec; raises EOFError/OSError when the worker is gone."""
        self.requests.send(spec)
        if not self.replies.poll(BUILD_TIMEOUT_S):
            raise TimeoutError(f"no answer in {BUILD_TIMEOUT_S:.0f} s")
        return self.replies.recv()

    def close(self) -> None:
        for end in (self.requests, self.replies):
            try:
                end.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class CompilePool:
    """Up to ``jobs`` worker processes compiling for one handle's device."""

    def __init__(self, handle: Handle, jobs: int):
        self._handle = weakref.ref(handle)
        self.jobs = jobs
        self._address = device_address(handle.device)
        self._send = handle.kernels.store_binaries
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self.stats = {"by_workers": 0, "by_caller": 0, "worker_failures": 0}
        self.build_s: collections.deque = collections.deque(maxlen=256)   # (seconds, kernel, by whom): recent builds
        weakref.finalize(handle, self.close)

    @property
    def alive(self) -> bool:
        return bool(self._workers)

    def start(self, wait: bool = False) -> int:
        """Start the workers (a build starts them too); with wait, until each has opened its device. Returns
        how many are ready (with wait) or started."""
        workers = self._start()
        if wait:
            return sum(w.wait_ready(collections.deque([None])) for w in workers)
        return len(workers)

    def _start(self) -> list[_Worker]:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if not self._workers:
                try:
                    self._workers = [_Worker(self._address, self._send) for _ in range(self.jobs)]
                except OSError as exc:
                    logger.info("find compile workers could not start (%s); compiling in this process", exc)
                    self._workers = []
            return list(self._workers)

    def build(self, specs: Sequence[KernelSpec]) -> dict[KernelSpec, str | None]:
        """Build every spec into the handle's kernel cache: the workers take them from the front, the calling
        thread from the back. Returns each spec's error text (None: built); the error of a spec a worker could
        not deliver is the calling thread's own build's."""
        errors: dict[KernelSpec, str | None] = dict.fromkeys(specs)
        handle = self._handle()
        if handle is None or not specs:
            return errors
        workers = self._start()
        todo = collections.deque(specs)
        take = threading.Lock()
        threads = [threading.Thread(target=self._drive, args=(w, todo, take, handle, errors), daemon=True,
                                    name="miopy-compile-pool") for w in workers]
        for thread in threads:
            thread.start()
        while True:
            with take:
                # Once a worker serves, the caller stops compiling: NVIDIA's driver runs one build at a time per
                # process, so each compile here held up the loads of the workers' programs into this process
                # (103 tensor-core programs took 89 s with the caller compiling alongside 12 workers).
                if not todo or any(w.ready for w in workers):
                    break
                spec = todo.pop()
            errors[spec] = self._build_here(handle, spec)
        for thread in threads:
            thread.join()
        for spec in specs:   # what a worker could not deliver
            if errors[spec] is None and not _built(handle, spec):
                errors[spec] = self._build_here(handle, spec)
        with self._lock:
            dead = [w for w in self._workers if w.ready is False]
            self._workers = [w for w in self._workers if w.ready is not False]
            self._timer = threading.Timer(IDLE_S, self.close)
            self._timer.daemon = True
            self._timer.start()
        for worker in dead:
            worker.close()
        return errors

    def _drive(self, worker: _Worker, todo: collections.deque, take: threading.Lock, handle: Handle,
               errors: dict) -> None:
        with worker.lock:
            if not worker.wait_ready(todo):
                return
            while True:
                with take:
                    if not todo:
                        return
                    spec = todo.popleft()
                started = time.monotonic()
                try:
                    error, binary = worker.build(spec)
                except (EOFError, OSError, TimeoutError, pickle.UnpicklingError) as exc:
                    logger.debug("a find compile worker died or hung (%s)", exc)
                    worker.ready = False
                    self.stats["worker_failures"] += 1
                    return
                if error is None:
                    try:
                        if self._send:
                            handle.kernels.adopt(spec, binary)
                        else:
                            handle.kernels.kernel(spec)   # served by the driver's cache the worker filled
                        self.stats["by_workers"] += 1
                    except Exception as exc:  # failures are data: the candidate's own build reports them
                        error = f"{type(exc).__name__}: {exc}"
                if error is not None:
                    logger.debug("find compile worker: %s", error)
                self.build_s.append((time.monotonic() - started, _label(spec), "worker"))
                errors[spec] = error

    def _build_here(self, handle: Handle, spec: KernelSpec) -> str | None:
        if _built(handle, spec):
            return None
        started = time.monotonic()
        try:
            handle.kernels.kernel(spec)
            self.stats["by_caller"] += 1
            self.build_s.append((time.monotonic() - started, _label(spec), "caller"))
        except Exception as exc:  # failures are data: the candidate's own build reports them
            logger.debug("prebuild failed: %s", exc)
            return f"{type(exc).__name__}: {exc}"
        return None

    def slowest(self, count: int = 5) -> list[tuple[float, str, str]]:
        """The slowest of the recent builds: (seconds, file:kernel and defines, "worker" or "caller")."""
        return sorted(self.build_s, reverse=True)[:count]

    def close(self) -> None:
        """Stop the workers (they exit when their pipe closes)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            workers, self._workers = self._workers, []
        for worker in workers:
            with worker.lock:
                worker.close()


def _label(spec: KernelSpec) -> str:
    return f"{spec.file}:{spec.name} {spec.build_options()}"


def _built(handle: Handle, spec: KernelSpec) -> bool:
    """Whether spec's program is built; a source that cannot be read (a broken solver) counts as not built,
    and its build then reports the error."""
    try:
        return handle.kernels.is_built(spec)
    except Exception:  # noqa: BLE001 -- the build that follows raises it as the candidate's error
        return False


def _serve(platform_index: int, device_index: int, send_binaries: bool, parent_pid: int, rfd: int, wfd: int) -> int:
    """A worker's loop: open the device, then build each spec read from the pipe and send back the result."""
    die_with_parent((parent_pid, False))
    requests = Connection(rfd, writable=False)
    replies = Connection(wfd, readable=False)
    try:
        handle = handle_at((platform_index, device_index))
    except Exception as exc:  # reported as a failed start: the parent compiles alone
        replies.send(f"no device: {exc!r}")
        return 1
    replies.send("ready")
    while True:
        try:
            spec = requests.recv()
        except (EOFError, OSError):
            return 0
        try:
            if send_binaries:
                result: tuple[str | None, bytes] = (None, handle.kernels.binary(spec))
            else:
                handle.kernels.warm(spec)
                result = (None, b"")
        except Exception as exc:  # failures are data
            result = (f"{type(exc).__name__}: {exc}", b"")
        try:
            replies.send(result)
        except (BrokenPipeError, OSError):
            return 0


if __name__ == "__main__":
    a = [int(v) for v in sys.argv[1:7]]
    sys.exit(_serve(a[0], a[1], bool(a[2]), a[3], a[4], a[5]))
