"""Handle: the OpenCL context, an in-order profiling queue, DeviceInfo, the kernel cache and timing.

The handle is the only owner of OpenCL objects. It picks a GPU when there is one, else the CPU (PoCL),
and honours PYOPENCL_CTX.
"""
from __future__ import annotations

import atexit
import contextlib
import dataclasses
import logging
import os
import shutil
import statistics
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools as cl_tools

from . import config
from .device import DeviceInfo, allocation_reason
from .errors import BadParam, DeviceNotFound, LaunchError, OutOfResources, check
from .kernel_cache import KernelCache
from .log import warn_once
from .plan import PlanCache
from .plan import Sequence as PlanSequence
from .ptx_probe import supported_mma
from .tensor import check_math_mode

logger = logging.getLogger(__name__)


def _ensure_writable_user_cache() -> None:
    """Point XDG_CACHE_HOME at a private temporary directory when the user cache directory cannot be written.

    PoCL and pyopencl (through pytools) keep their own caches under XDG_CACHE_HOME or ~/.cache. Without a
    usable home (none, read-only, or a path through a file) PoCL lists no device and pyopencl fails on its
    first kernel. The temporary directory lives as long as the process; one warning says so.
    """
    base = config.user_dir(platformdirs.user_cache_dir, app=None)
    reason = _unusable_reason(base)
    if reason is None:
        return
    where = base or "~/.cache"
    try:
        private = tempfile.mkdtemp(prefix="miopy-cache-")
    except OSError as exc:
        warn_once(logger, f"user cache directory {where} is unusable ({reason}) and no temporary directory "
                          f"can be made ({exc.strerror}); OpenCL drivers may fail")
        return
    atexit.register(shutil.rmtree, private, ignore_errors=True)
    os.environ["XDG_CACHE_HOME"] = private
    warn_once(logger, f"user cache directory {where} is unusable ({reason}); PoCL, pyopencl and miopy keep "
                      f"their caches in {private} until this process exits")


def _unusable_reason(directory: Path | None) -> str | None:
    """Why directory (None: there is no home directory) cannot hold caches, after creating it if need be;
    None when it can."""
    if directory is None:
        return "no home directory"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None if os.access(directory, os.W_OK | os.X_OK) else "not writable"


def _pick_device() -> cl.Device:
    if os.environ.get("PYOPENCL_CTX"):
        return cl.create_some_context(interactive=False).devices[0]
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        raise DeviceNotFound(f"no OpenCL platform found ({exc}); install one, e.g. "
                             "`pip install pocl-binary-distribution` for the CPU") from exc
    devices = [d for p in platforms for d in p.get_devices()]
    if not devices:
        raise DeviceNotFound("OpenCL platforms exist but expose no device")
    gpus = [d for d in devices if d.type & cl.device_type.GPU]
    if not gpus:
        _hint_missing_gpu_platform()
    return (gpus or devices)[0]


def _hint_missing_gpu_platform() -> None:
    if Path("/dev/nvidia0").exists():
        warn_once(logger, "an NVIDIA GPU is present but no OpenCL platform lists it: make a directory "
                          "holding a file nvidia.icd with the line libnvidia-opencl.so.1 and point "
                          "OCL_ICD_VENDORS at it (see docs/guide/caches_and_environment.md); falling back to the CPU")


class Handle:
    """Device, context, profiling queue and kernel cache; pass one to every miopy call.

    math_mode ("strict", "tf32" or None) is the default math mode of convolutions whose ConvDesc names
    none; None leaves it to MIOPY_MATH_MODE, else "strict". It may be set later (``handle.math_mode =
    "tf32"``): calls made after that use it.
    """

    def __init__(self, device: cl.Device | None = None, context: cl.Context | None = None,
                 math_mode: str | None = None):
        self.math_mode = math_mode
        check(device is None or isinstance(device, cl.Device), "device",
              f"must be a pyopencl Device (or None: the default), got {device!r}")
        check(context is None or isinstance(context, cl.Context), "context",
              f"must be a pyopencl Context (or None: a new one), got {context!r}")
        if context is not None:
            device = device or context.devices[0]
            check(device in context.devices, "device", f"{device.name} is not a device of the context given")
        _ensure_writable_user_cache()
        device = device or _pick_device()
        self.device = device
        self.context = context or cl.Context([device])
        self.queue = cl.CommandQueue(self.context, device,
                                     properties=cl.command_queue_properties.PROFILING_ENABLE)
        info = DeviceInfo.of(device)
        self.info = dataclasses.replace(info, ptx_mma=supported_mma(device, info.device_id))
        self.kernels = KernelCache(self.context, device, self.info.device_id)
        self.plans = PlanCache()   # what calls built, by "<family>.<call>" keys (see miopy.plan.PlanCache)
        self.state: dict[str, Any] = {}   # per-handle state families keep, never evicted (saved indices, ...)
        self.chosen: dict = {}     # problem key -> the find record chosen by calls without an algo
        self.recording: list | None = None   # set while a Sequence is being captured
        # Outputs of the functional layer come from this pool: a fresh array costs no device allocation.
        self.pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(self.queue))
        self._pooled_templates: dict[tuple, cl_array.Array] = {}
        self._scratch: dict[str, cl.Buffer] = {}
        # Held while a plan enqueues its launches (the queue, scratch buffers and kernel arguments are shared
        # by every plan of the handle) and while scratch buffers are replaced: see
        # docs/guide/caches_and_environment.md, Threads.
        self.lock = threading.RLock()
        _BY_QUEUE[self.queue.int_ptr] = self

    def __repr__(self) -> str:
        return f"Handle({self.info.name!r} on {self.info.platform!r})"

    @property
    def math_mode(self) -> str | None:
        """The default math mode of this handle's convolutions (None: MIOPY_MATH_MODE, else strict)."""
        return self._math_mode

    @math_mode.setter
    def math_mode(self, value: str | None) -> None:
        self._math_mode = None if value is None else check_math_mode(value)

    def cache_stats(self) -> dict[str, int]:
        """Kernel cache counts: compiled, disk_hits, memory_hits, adopted (binaries a compile worker built)."""
        return dict(self.kernels.stats)

    # -- arrays -------------------------------------------------------------------------------------
    def to_device(self, array: np.ndarray) -> cl_array.Array:
        """A device copy of array (OutOfResources when the device cannot hold it)."""
        array = np.ascontiguousarray(array)
        self._check_allocation(array.nbytes, f"array {array.shape} {array.dtype}")
        try:
            return cl_array.to_device(self.queue, array)
        except cl.Error as exc:
            raise OutOfResources(f"cannot copy {array.shape} {array.dtype} to {self.info.name}: {exc}") from exc

    def empty(self, shape: Sequence[int], dtype=np.float32) -> cl_array.Array:
        """An uninitialised device array (OutOfResources when the device cannot hold it)."""
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        self._check_allocation(nbytes, f"array {tuple(shape)} {np.dtype(dtype)}")
        try:
            return cl_array.empty(self.queue, tuple(shape), dtype)
        except cl.Error as exc:
            raise OutOfResources(f"cannot allocate {tuple(shape)} {dtype} on {self.info.name}: {exc}") from exc

    def pooled(self, shape: tuple[int, ...], dtype: np.dtype) -> cl_array.Array:
        """An uninitialised array from the handle's memory pool (the functional layer's outputs)."""
        # pyopencl's Array constructor costs ~35 us (shape, strides and flags worked out anew); a template
        # per (shape, dtype) makes the next ones through its fast path (~1.5 us): same queue, pool, strides,
        # fresh memory from the pool and an events list of its own.
        try:
            template = self._pooled_templates.get((shape, dtype))
            if template is None:
                array = cl_array.Array(self.queue, shape, dtype, allocator=self.pool)
                if array.size == 0:
                    return array
                if len(self._pooled_templates) >= 256:
                    self._pooled_templates.clear()
                template = self._pooled_templates[(shape, dtype)] = array._new_with_changes(None, 0)
                template.base_data = None        # the template keeps no memory from the pool
                return array
            return template._new_with_changes(None, 0)
        except cl.Error as exc:
            raise OutOfResources(f"cannot allocate {shape} {dtype} on {self.info.name}: {exc}") from exc

    @contextlib.contextmanager
    def capture(self) -> Iterator[PlanSequence]:
        """Record every plan run on this handle inside the block (the runs still happen) into a Sequence
        whose replay() enqueues them again on the same buffers with one call."""
        if self.recording is not None:
            raise LaunchError("a capture is already in progress on this handle")
        sequence = PlanSequence(self)
        self.recording = sequence.steps
        try:
            yield sequence
        finally:
            self.recording = None

    def to_host(self, array: cl_array.Array) -> np.ndarray:
        return array.get(queue=self.queue)

    def alloc(self, nbytes: int) -> cl.Buffer:
        """A device buffer of nbytes, backed by device memory now: a size over the device's largest
        allocation, or memory the device cannot find, raises OutOfResources here rather than at a later
        launch (drivers that allocate lazily would otherwise fail the first kernel that touches it)."""
        nbytes = max(int(nbytes), np.dtype(np.uint32).itemsize)   # the zero written below
        self._check_allocation(nbytes, "buffer")
        try:
            buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, nbytes)
            cl.enqueue_copy(self.queue, buf, np.zeros(1, np.uint32), is_blocking=True)
        except cl.Error as exc:
            raise OutOfResources(f"cannot allocate {nbytes} bytes on {self.info.name}: {exc}") from exc
        return buf

    def _check_allocation(self, nbytes: int, what: str) -> None:
        reason = allocation_reason(self.info, {what: nbytes})
        if reason is not None:
            raise OutOfResources(f"{reason} on {self.info.name}")

    def scratch(self, slot: str, nbytes: int) -> cl.Buffer:
        """A buffer of at least nbytes kept for reuse under slot (workspace, blend temporaries)."""
        with self.lock:
            buf = self._scratch.get(slot)
            if buf is None or buf.size < nbytes:
                buf = self._scratch[slot] = self.alloc(nbytes)
            return buf

    def finish(self) -> None:
        self.queue.finish()

    # -- launching and timing -------------------------------------------------------------------------
    def launch(self, kernel: cl.Kernel, global_size, local_size, args) -> cl.Event:
        """Set args and enqueue one NDRange; OpenCL errors become LaunchError."""
        try:
            kernel.set_args(*args)
            return cl.enqueue_nd_range_kernel(self.queue, kernel, global_size, local_size)
        except cl.Error as exc:
            raise LaunchError(f"launch of {kernel.function_name} global={global_size} "
                              f"local={local_size} failed: {exc}") from exc

    def time_ms(self, enqueue: Callable[[], Sequence[cl.Event]], warmup: int = 2, iters: int = 5) -> float:
        """Median over iters of the profiled time from the first event's start to the last's end."""
        for _ in range(warmup):
            events = enqueue()
        self.queue.finish()
        samples = []
        for _ in range(iters):
            events = enqueue()
            events[-1].wait()
            samples.append((events[-1].profile.end - events[0].profile.start) * 1e-6)
        return statistics.median(samples)


_HANDLES: dict = {}
_BY_QUEUE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()   # queue's cl handle -> its Handle


def device_address(device: cl.Device) -> tuple[int, int]:
    """(platform index, device index) of device, valid in any process on this machine: what a helper process
    (find's compile pool, tuning's compile-ahead workers) opens its own Handle on, with handle_at."""
    for pi, platform in enumerate(cl.get_platforms()):
        devices = platform.get_devices()
        if device in devices:
            return pi, devices.index(device)
    raise LookupError(f"{device.name} is in no platform's device list")


def handle_at(address: tuple[int, int]) -> Handle:
    """A new Handle on the device at address (platform index, device index: device_address's)."""
    platform_index, device_index = address
    return Handle(device=cl.get_platforms()[platform_index].get_devices()[device_index])


def functional_handle(array: Any, field: str = "x", handle: Handle | None = None) -> Handle:
    """The handle a functional call on array runs on: handle when given, else array's (handle_for); BadParam(field)
    when array is not a pyopencl Array (checked with a handle too: the functional layers' memo keys read its
    shape)."""
    if not isinstance(array, cl_array.Array):
        raise BadParam(field, f"expected a pyopencl Array, got {type(array).__name__}")
    return handle if handle is not None else handle_for(array)


def handle_for(array: cl_array.Array) -> Handle:
    """The functional layer's default handle for array: the Handle whose queue the array lives on (so work
    on it stays in order with the array's own transfers), else one Handle per context per process."""
    queue = array.queue
    handle = _BY_QUEUE.get(queue.int_ptr) if queue is not None else None
    if handle is not None:
        return handle
    ctx = array.context
    handle = _HANDLES.get(ctx)
    if handle is None:
        handle = _HANDLES[ctx] = Handle(context=ctx)
    return handle
