"""What solvers and DBs know of a device, and the device-limit rules every solver shares.

One place for the limits: the 32-bit index range kernels address with, the launch-grid limit, work-group
sizes and shapes, and local memory. Each rule returns the reason a launch cannot run (or None), so solvers
state their validity as one-line checks and find reports why a candidate was skipped.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyopencl as cl

INT_LIMIT = 2**31               # kernels index with 32-bit signed ints: element offsets must stay below
MAX_GRID_DIM = 65535            # work-groups along NDRange dims 1 and 2 (CUDA's grid limit, under NVIDIA's OpenCL)
SPLIT_WORKSPACE_CAP = 64 << 20  # bytes a solver may reserve for split partial results (or a column chunk)
ACCURATE_SPLIT_CHUNK = 4096     # default split reductions so each partial sum adds at most this many terms


def accurate_split(length: int, choices: Sequence[int], limit: int) -> int:
    """The smallest split in choices (ascending) whose chunks of length stay within ACCURATE_SPLIT_CHUNK,
    or the largest choice within limit: a sum of `length` terms then rounds like one of a few thousand."""
    allowed = [s for s in choices if s <= limit] or [1]
    return next((s for s in allowed if -(-length // s) <= ACCURATE_SPLIT_CHUNK), allowed[-1])


SUM_BLOCK = 64                  # terms a register block sums before joining a compensated running total
PLAIN_SUM_LIMIT = 10**8         # length * chunk beyond which plain running sums of the chunks lose accuracy


def blocked_sums(length: int, chunk: int) -> bool:
    """Whether a reduction of length terms, each work-item summing chunks of chunk terms, keeps a second
    register tile: SUM_BLOCK-term blocks joined to a running total with a compensated add (types.h,
    COMPENSATED_ADD), which rounds like a SUM_BLOCK-term sum whatever the chunk. Plain running sums of
    unit-variance terms err by about u * sqrt(length * chunk / 6) absolute (u = 2^-24); blocks are kept
    where that passes ~2.4e-4 (length * chunk > PLAIN_SUM_LIMIT: a 4.2M-term reduction in chunks of 24
    or more, not AlexNet's 21632-term ones) or where a chunk passes ACCURATE_SPLIT_CHUNK (a tuned SPLIT 1,
    long forward inner dimensions): short sums skip the extra registers."""
    return chunk > SUM_BLOCK and (chunk > ACCURATE_SPLIT_CHUNK or length * chunk > PLAIN_SUM_LIMIT)


def sum_steps(length: int, chunk: int, k_blk: int) -> int:
    """SUM_STEPS of the GEMM-like kernels: K_BLK slices per register block where blocked_sums(length, chunk);
    else 0 (one register tile: the sums add directly)."""
    return max(1, SUM_BLOCK // k_blk) if blocked_sums(length, chunk) else 0


@dataclass(frozen=True)
class DeviceInfo:
    """What solvers and DBs need to know of a device."""

    platform: str
    vendor: str
    name: str
    driver_version: str
    device_type: str
    compute_units: int
    local_mem_bytes: int
    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    global_mem_bytes: int
    fp16: bool
    max_alloc_bytes: int = 0       # CL_DEVICE_MAX_MEM_ALLOC_SIZE (0: unknown)
    local_mem_is_global: bool = False
    ptx_mma: tuple[str, ...] = ()  # tensor-core mma.sync families inline PTX compiles ("tf32", "f16"): ptx_probe

    @classmethod
    def of(cls, device: cl.Device) -> DeviceInfo:
        return cls(
            platform=device.platform.name.strip(), vendor=device.vendor.strip(), name=device.name.strip(),
            driver_version=device.driver_version.strip(),
            device_type=cl.device_type.to_string(device.type).split(" ")[-1],  # type: ignore[operator]
            compute_units=device.max_compute_units, local_mem_bytes=device.local_mem_size,
            max_work_group_size=device.max_work_group_size,
            max_work_item_sizes=tuple(device.max_work_item_sizes), global_mem_bytes=device.global_mem_size,
            fp16="cl_khr_fp16" in device.extensions, max_alloc_bytes=device.max_mem_alloc_size,
            local_mem_is_global=device.local_mem_type == cl.device_local_mem_type.GLOBAL)

    @property
    def device_id(self) -> str:
        """Stable id: platform, device name, driver version and compute units; keys every DB record."""
        raw = f"{self.platform}|{self.name}|{self.driver_version}|{self.compute_units}CU"
        return re.sub(r"\s+", " ", raw)

    @property
    def is_gpu(self) -> bool:
        return "GPU" in self.device_type

    @property
    def is_nvidia(self) -> bool:
        return "NVIDIA" in self.platform.upper() or "NVIDIA" in self.vendor.upper()


# -- rules: each returns why a launch cannot run on dev, or None -------------------------------------------
def work_group_reason(dev: DeviceInfo, local_size: Sequence[int]) -> str | None:
    """A work-group of local_size (dims 0, 1, ...) against the device's size and shape limits."""
    threads = 1
    for size in local_size:
        threads *= size
    if threads > dev.max_work_group_size:
        return f"work-group of {threads} > device max {dev.max_work_group_size}"
    for dim, (size, limit) in enumerate(zip(local_size, dev.max_work_item_sizes)):
        if size > limit:
            return f"work-group size {size} along dim {dim} > device max {limit}"
    return None


def local_memory_reason(dev: DeviceInfo, nbytes: int, groups_per_unit: int = 1) -> str | None:
    """nbytes of local memory per work-group, groups_per_unit work-groups resident per compute unit."""
    if groups_per_unit * nbytes > dev.local_mem_bytes:
        count = f"{groups_per_unit} work-groups x " if groups_per_unit > 1 else ""
        return f"{count}{nbytes} B local memory > {dev.local_mem_bytes} B"
    return None


def grid_reason(groups_along: Sequence[int]) -> str | None:
    """Work-group counts along NDRange dims 1 and 2 (dim 0 is unlimited) against MAX_GRID_DIM."""
    if any(count > MAX_GRID_DIM for count in groups_along[1:]):
        return f"more than {MAX_GRID_DIM} work-groups along NDRange dims 1 or 2"
    return None


def index_reason(*element_counts: int) -> str | None:
    """Element offsets of every tensor (or workspace) must fit a 32-bit signed int."""
    if max(element_counts, default=0) >= INT_LIMIT:
        return "a tensor or workspace spans 2^31 elements or more (32-bit indices)"
    return None


def byte_size(nbytes: int) -> str:
    """nbytes for a message: exact, with GiB / MiB for a reader."""
    for unit, shift in (("GiB", 30), ("MiB", 20)):
        if nbytes >= 1 << shift:
            return f"{nbytes} bytes ({nbytes / (1 << shift):.1f} {unit})"
    return f"{nbytes} bytes"


def allocation_reason(dev: DeviceInfo, sizes: Mapping[str, int]) -> str | None:
    """Buffers of these sizes (name -> bytes) against the device's largest allocation (each) and its global
    memory (all together); None when they fit (or the device does not say its limits)."""
    for name, nbytes in sizes.items():
        if dev.max_alloc_bytes and nbytes > dev.max_alloc_bytes:
            return (f"{name} needs {byte_size(nbytes)}, over the device's largest allocation "
                    f"({byte_size(dev.max_alloc_bytes)})")
    total = sum(sizes.values())
    if dev.global_mem_bytes and total > dev.global_mem_bytes:
        names = " + ".join(sizes)
        return f"{names} need {byte_size(total)} in all, over the device's memory ({byte_size(dev.global_mem_bytes)})"
    return None
