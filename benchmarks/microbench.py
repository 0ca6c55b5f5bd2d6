"""fp32 FMA peak and copy bandwidth of an OpenCL device, measured with profiling events."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyopencl as cl

from miopy import Handle

SOURCE = (Path(__file__).parent / "microbench.cl").read_text()
ITERS = 4096
CHAINS = 16  # 4 float4 chains per work-item


def fp32_peak_gflops(handle: Handle, iters: int = 10) -> float:
    """Best of iters runs of 8 independent FMA chains per work-item, many work-items per compute unit."""
    prg = cl.Program(handle.context, SOURCE).build(f"-DITERS={ITERS}")
    knl = cl.Kernel(prg, "fma_peak")
    items = handle.info.compute_units * 2048 * (8 if handle.info.is_gpu else 1)
    out = handle.alloc(items * 4)
    knl.set_args(out, np.float32(0.999), np.float32(0.001))
    run = lambda: [cl.enqueue_nd_range_kernel(handle.queue, knl, (items,), (256,))]
    ms = handle.time_ms(run, warmup=2, iters=iters)
    return 2.0 * CHAINS * ITERS * items / ms / 1e6


def copy_bandwidth_gbs(handle: Handle, mbytes: int = 1024, iters: int = 10) -> float:
    """Bytes read plus bytes written per second by a float4 copy of mbytes MiB."""
    nbytes = mbytes << 20
    if not handle.info.is_gpu:
        nbytes = min(nbytes, 64 << 20)
    prg = cl.Program(handle.context, SOURCE).build("-DITERS=1")
    knl = cl.Kernel(prg, "copy4")
    src, dst = handle.alloc(nbytes), handle.alloc(nbytes)
    knl.set_args(src, dst)
    run = lambda: [cl.enqueue_nd_range_kernel(handle.queue, knl, (nbytes // 16,), (256,))]
    ms = handle.time_ms(run, warmup=2, iters=iters)
    return 2.0 * nbytes / ms / 1e6


if __name__ == "__main__":
    h = Handle()
    print(f"{h.info.name}: fp32 peak {fp32_peak_gflops(h):.0f} GFLOP/s, copy {copy_bandwidth_gbs(h):.0f} GB/s")
