"""Host time of one warm call, against a raw pyopencl enqueue of the same kernel.

    python -m benchmarks.experiments.call_overhead [--calls 2000] [--json OUT.json]

Times, per call, in microseconds (the median of --calls calls of each kind, the kinds taking turns):
the raw enqueue (set the buffer arguments and clEnqueueNDRangeKernel, as a hand-written pyopencl program
does), Plan.run_values (the plan's checks of type, dtype, size, layout, context and overlap, then the same
enqueue), convolution_forward's warm path (a memo lookup, then the plan) and conv2d's (a memo lookup, an
output from the pool, then the plan). The plan's ratio to the raw enqueue is the number to keep under 1.5.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyopencl as cl

import miopy
from benchmarks import harness
from miopy import ConvDesc, TensorDesc

NAIVE = miopy.ConvAlgoPerf("ConvDirectNaive", "naive", 1.0, 0, {"WG": 64})


def per_call_us(handle: miopy.Handle, calls: dict, rounds: int) -> dict[str, float]:
    """Median host time of one call of each kind, in microseconds. The kinds take turns call by call, so
    each sees the same queue depth and machine load (an enqueue's cost depends on both); the queue is drained
    after each round (outside the clock), so it stays shallow."""
    ms, _ = harness.interleaved_ms(calls, rounds, settle=handle.finish)
    return {name: value * 1e3 for name, value in ms.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    handle = miopy.Handle()
    x_desc, w_desc, conv = TensorDesc("FP32", (1, 4, 6, 6)), TensorDesc("FP32", (4, 4, 3, 3)), ConvDesc(1)
    rng = np.random.default_rng(0)
    x = handle.to_device(rng.standard_normal(x_desc.dims).astype(np.float32))
    w = handle.to_device(rng.standard_normal(w_desc.dims).astype(np.float32))
    y = handle.empty(x_desc.dims)
    plan = miopy.convolution_plan(handle, 1, x_desc, w_desc, conv, algo=NAIVE)
    step = plan._steps[0]
    kernel, gsize, lsize = step.kernel, step.global_size, step.local_size
    buffers = (x.base_data, w.base_data, y.base_data)

    def raw():
        kernel.set_arg(0, buffers[0])
        kernel.set_arg(1, buffers[1])
        kernel.set_arg(2, buffers[2])
        cl.enqueue_nd_range_kernel(handle.queue, kernel, gsize, lsize)

    values = (x, w, y)
    miopy.convolution_forward(handle, x_desc, x, w_desc, w, conv, x_desc, y, algo=NAIVE)
    miopy.conv2d(x, w, padding=1, handle=handle)
    times = per_call_us(handle, {
        "raw pyopencl enqueue": raw,
        "Plan.run_values": lambda: plan.run_values(values),
        "convolution_forward (warm)":
            lambda: miopy.convolution_forward(handle, x_desc, x, w_desc, w, conv, x_desc, y, algo=NAIVE),
        "conv2d (warm)": lambda: miopy.conv2d(x, w, padding=1, handle=handle)}, args.calls)
    base = times["raw pyopencl enqueue"]
    print(f"device: {handle.info.name} ({handle.info.platform})")
    for name, us in times.items():
        print(f"  {name:<30}{us:8.2f} us  {us / base:5.2f}x")
    harness.write_json(args.json, harness.new_record(handle, us_per_call=times))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
