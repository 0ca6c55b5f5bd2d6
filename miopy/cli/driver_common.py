"""Pieces the miopy-driver sub-commands of the primitive families share: layouts, random data, timing and
verification lines in MIOpenDriver's manner."""
from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

import numpy as np
import pyopencl as cl

from ..errors import BadParam
from ..handle import Handle
from ..reference import max_error
from ..tensor import TensorDesc, packed_strides

LAYOUTS = ("NCHW", "NHWC")


def add_common(parser: argparse.ArgumentParser, iters: int = 10) -> None:
    """-i, -V, -t, -w as MIOpenDriver has them."""
    add = parser.add_argument
    add("-i", "--iter", type=int, default=iters, help="timed iterations")
    add("-V", "--verify", type=int, default=1, help="verify against the float64 reference")
    add("-t", "--time", type=int, default=0, help="time the kernels")
    add("-w", "--wall", type=int, default=0, help="(accepted for MIOpenDriver compatibility)")


def add_dims(parser: argparse.ArgumentParser, batch: int) -> None:
    add = parser.add_argument
    add("-n", "--batchsize", type=int, default=batch)
    add("-c", "--in_channels", type=int, default=3)
    add("-H", "--in_h", type=int, default=32)
    add("-W", "--in_w", type=int, default=32)


def data_desc(dtype: str, dims: Sequence[int], layout: str = "NCHW") -> TensorDesc:
    """A descriptor of dims (N, C, H, W) stored in layout (NCHW packed, or NHWC through strides)."""
    if layout not in LAYOUTS:
        raise BadParam("layout", f"must be one of {LAYOUTS}, got {layout!r}")
    if layout == "NCHW":
        return TensorDesc(dtype, dims)
    n, c, h, w = dims
    s_n, s_h, s_w, s_c = packed_strides((n, h, w, c))
    return TensorDesc(dtype, dims, (s_n, s_c, s_h, s_w))


def to_device(handle: Handle, host: np.ndarray) -> cl.Buffer:
    mf = cl.mem_flags
    return cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(host))


def from_device(handle: Handle, buf: cl.Buffer, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    cl.enqueue_copy(handle.queue, out, buf)
    handle.finish()
    return out


def report_time(handle: Handle, name: str, call: Callable[[], Sequence[cl.Event]], iters: int, nbytes: int) -> None:
    """The median kernel time of call over iters runs and the effective bandwidth of nbytes moved."""
    ms = handle.time_ms(call, warmup=1, iters=max(iters, 1))
    print(f"GPU Kernel Time {name} Elapsed: {ms:.4f} ms, {nbytes / ms / 1e6:.1f} GB/s")


def verify(name: str, got: dict[str, np.ndarray], expected: dict[str, np.ndarray], tolerance: float) -> bool:
    """Print MIOpenDriver's verdict line for name (the worst error over every output) and return it."""
    errors = {role: max_error(got[role], want) for role, want in expected.items()}
    worst = max(errors, key=lambda r: errors[r])
    ok = errors[worst] <= tolerance
    print(f"{name} {'Verifies OK on CPU reference' if ok else 'FAILED'} (max error {errors[worst]:.2e} in {worst}, "
          f"tolerance {tolerance:.0e})")
    return ok
