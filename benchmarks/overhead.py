"""Host cost of a warm call, and whole convolution passes of ResNet-18 / ResNet-50, against PyTorch.

1. Host microseconds per call on a problem small enough that the device is not the bottleneck: a raw
   pyopencl enqueue of the very kernels the plan runs (set_args + enqueue_nd_range_kernel per launch),
   Plan.run, Plan.run_values, convolution_forward with an algo and without, conv2d, a fusion plan
   (conv_bias_activation_forward), an activation, and PyTorch's F.conv2d on CUDA when it is there. Each is the
   median over batches of back-to-back calls (host time from the first call to the last return, no
   synchronisation inside a batch), 1000+ calls in all.
2. Passes: every convolution of ResNet-18 and ResNet-50 in order at N=1 and N=32, wall time per pass
   (submit + finish) as the median of passes after warm-up: miopy through convolution_forward with find's
   records, conv2d, fused conv+bias(+ReLU) plans, and a captured Sequence replayed with one call; the sum of
   the pass's kernel times (profiling events); PyTorch fp32 (cuDNN, allow_tf32 off), PyTorch's default
   (TF32), and PyTorch conv+bias+ReLU.

    python -m benchmarks.overhead --out benchmarks/results/h100-overhead.json
    python -m benchmarks.overhead --quick          # PoCL-sized smoke run (scaled-down images)

The results page is docs/results/overhead.md (`python -m benchmarks.report`).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

import miopy
from benchmarks import harness
from miopy import ConvDesc, Direction, TensorDesc
from miopy.conv.networks import resnet_pass


def host_us(call, batches: int, per_batch: int, finish) -> float:
    return harness.host_us(call, finish, batches, per_batch)


# -- 1. host cost per call ---------------------------------------------------------------------------------
def call_costs(handle, batches: int, per_batch: int) -> dict:
    rng = np.random.default_rng(0)
    xd, wd, conv = TensorDesc("FP32", (1, 16, 14, 14)), TensorDesc("FP32", (16, 16, 3, 3)), ConvDesc(1)
    yd = conv.output_desc(xd, wd)
    x = handle.to_device(rng.standard_normal(xd.dims).astype(np.float32))
    w = handle.to_device(rng.standard_normal(wd.dims).astype(np.float32))
    y = handle.empty(yd.dims)
    bd = TensorDesc("FP32", (1, 16, 1, 1))
    bias = handle.to_device(rng.standard_normal(bd.dims).astype(np.float32))
    record = miopy.find_convolution(handle, xd, wd, conv, mode="normal")[0]
    plan = miopy.convolution_plan(handle, Direction.FORWARD, xd, wd, conv, yd, algo=record)
    fin = handle.finish
    raw = _raw_enqueue(handle, plan, {"x": x.base_data, "w": w.base_data, "y": y.base_data,
                                      "workspace": plan.workspace})
    rows = {
        "solver": record.solver_id,
        "launches": len(plan.solution.launches),
        "raw_pyopencl_enqueue": host_us(raw, batches, per_batch, fin),
        "plan_run": host_us(lambda: plan.run(x=x, w=w, y=y), batches, per_batch, fin),
        "plan_run_values": host_us(lambda: plan.run_values((x, w, y)), batches, per_batch, fin),
        "convolution_forward_algo": host_us(
            lambda: miopy.convolution_forward(handle, xd, x, wd, w, conv, yd, y, algo=record), batches, per_batch, fin),
        "convolution_forward": host_us(
            lambda: miopy.convolution_forward(handle, xd, x, wd, w, conv, yd, y), batches, per_batch, fin),
        "conv2d": host_us(lambda: miopy.conv2d(x, w, padding=1, handle=handle), batches, per_batch, fin),
        "fusion_conv_bias_relu": host_us(
            lambda: miopy.conv_bias_activation_forward(handle, xd, x, wd, w, conv, bd, bias, "relu", 1.0, 1.0, 1.0,
                                                       yd, y), batches, per_batch, fin),
        "activation_forward": host_us(
            lambda: miopy.activation_forward(handle, "relu", 1.0, 1.0, 1.0, yd, y, yd, y), batches, per_batch, fin),
    }
    rows["plan_run_over_raw"] = rows["plan_run"] / rows["raw_pyopencl_enqueue"]
    torch_row = _torch_call_cost(xd, wd, batches, per_batch)
    if torch_row is not None:
        rows["torch_conv2d"] = torch_row
    return rows


def _raw_enqueue(handle, plan, buffers):
    """The plan's launches, set up once with plain pyopencl: set_args + enqueue per launch per call."""
    steps = []
    for launch in plan.solution.launches:
        kernel = handle.kernels.new_kernel(launch.spec)
        args = [buffers[a] if isinstance(a, str) else a for a in launch.args]
        steps.append((kernel, args, launch.global_size, launch.local_size))
    queue = handle.queue

    def call():
        for kernel, args, gs, ls in steps:
            kernel.set_args(*args)
            cl.enqueue_nd_range_kernel(queue, kernel, gs, ls)
    return call


def _torch_call_cost(xd, wd, batches, per_batch):
    torch = harness.load_torch()
    if torch is None:
        return None
    import torch.nn.functional as F
    x, w = torch.randn(xd.dims, device="cuda"), torch.randn(wd.dims, device="cuda")
    return host_us(lambda: F.conv2d(x, w, padding=1), batches, per_batch, torch.cuda.synchronize)


# -- 2. whole passes ---------------------------------------------------------------------------------------
class Pass:
    """A network's convolutions in order with device tensors, find records and fused plans."""

    def __init__(self, handle, layers, n: int):
        rng = np.random.default_rng(1)
        self.handle, self.layers, self.items = handle, layers, []
        for layer, relu in layers:
            xd = TensorDesc("FP32", (n, layer.c, layer.h, layer.w))
            wd = TensorDesc("FP32", (layer.k, layer.c, layer.r, layer.s))
            conv = ConvDesc(layer.pad, layer.stride)
            yd = conv.output_desc(xd, wd)
            bd = TensorDesc("FP32", (1, layer.k, 1, 1))
            host = {"x": rng.standard_normal(xd.dims), "w": rng.standard_normal(wd.dims) * 0.05,
                    "b": rng.standard_normal(bd.dims)}
            dev = {k: handle.to_device(v.astype(np.float32)) for k, v in host.items()}
            dev["y"] = handle.empty(yd.dims)
            record = miopy.find_convolution(handle, xd, wd, conv)[0]
            self.items.append(dict(xd=xd, wd=wd, yd=yd, bd=bd, conv=conv, relu=relu, rec=record, **dev))

    def descriptor(self):
        h = self.handle
        for it in self.items:
            miopy.convolution_forward(h, it["xd"], it["x"], it["wd"], it["w"], it["conv"], it["yd"], it["y"],
                                      algo=it["rec"])

    def functional(self):
        for it in self.items:
            miopy.conv2d(it["x"], it["w"], it["conv"].stride, it["conv"].pad, handle=self.handle)

    def fused(self):
        h = self.handle
        for it in self.items:
            miopy.conv_bias_activation_forward(h, it["xd"], it["x"], it["wd"], it["w"], it["conv"], it["bd"], it["b"],
                                               "relu" if it["relu"] else "passthru", 1.0, 1.0, 1.0, it["yd"], it["y"])

    def events(self) -> list:
        """One pass through the descriptor API; its events."""
        events = []
        for it in self.items:
            events += miopy.convolution_forward(self.handle, it["xd"], it["x"], it["wd"], it["w"], it["conv"],
                                                it["yd"], it["y"], algo=it["rec"])
        return events

    def kernel_ms(self) -> float:
        """Sum of the pass's kernel times from profiling events (each launch's median over 5 passes)."""
        return sum(harness.launch_ms(self.handle, self.events, runs=5))


def wall_ms(run, finish, iters: int) -> float:
    """Wall ms per pass, each pass drained (median of iters after warm-up)."""
    return harness.wall_ms(run, finish, rounds=iters)


def submit_ms(run, finish, iters: int) -> float:
    """Host ms to enqueue one pass (no synchronisation inside it), median over iters."""
    return harness.host_us(run, finish, batches=iters, per_batch=1) / 1e3


def torch_pass_ms(layers, n: int, iters: int) -> dict:
    torch = harness.load_torch()
    if torch is None:
        return {}
    import torch.nn.functional as F
    tensors = [(torch.randn(n, layer.c, layer.h, layer.w, device="cuda"),
                torch.randn(layer.k, layer.c, layer.r, layer.s, device="cuda") * 0.05,
                torch.randn(layer.k, device="cuda"), layer, relu) for layer, relu in layers]

    def conv_only():
        for x, w, _, layer, _ in tensors:
            F.conv2d(x, w, None, layer.stride, layer.pad)

    def fused():
        for x, w, b, layer, relu in tensors:
            y = F.conv2d(x, w, b, layer.stride, layer.pad)
            if relu:
                F.relu_(y)
    out = {}
    for name, tf32 in (("fp32", False), ("tf32", True)):
        harness.set_tf32(torch, tf32)
        out[f"torch_{name}_ms"] = wall_ms(conv_only, torch.cuda.synchronize, iters)
    harness.set_tf32(torch, False)
    out["torch_fp32_bias_relu_ms"] = wall_ms(fused, torch.cuda.synchronize, iters)
    return out


def pass_rows(handle, depth: int, n: int, size: int, iters: int) -> dict:
    layers = resnet_pass(depth, size)
    p = Pass(handle, layers, n)
    fin = handle.finish
    row = {"network": f"resnet{depth}", "n": n, "image": size, "convolutions": len(layers),
           "miopy_descriptor_ms": wall_ms(p.descriptor, fin, iters),
           "miopy_conv2d_ms": wall_ms(p.functional, fin, iters),
           "miopy_fused_bias_relu_ms": wall_ms(p.fused, fin, iters),
           "miopy_kernel_sum_ms": p.kernel_ms()}
    with handle.capture() as seq:
        p.descriptor()
    fin()
    row["miopy_sequence_replay_ms"] = wall_ms(seq.replay, fin, iters)
    row["miopy_descriptor_again_ms"] = wall_ms(p.descriptor, fin, iters)   # order effects (clocks) show here
    row["host_submit_descriptor_ms"] = submit_ms(p.descriptor, fin, iters)
    row["host_submit_replay_ms"] = submit_ms(seq.replay, fin, iters)
    row.update(torch_pass_ms(layers, n, iters))
    if "torch_fp32_ms" in row:
        row["descriptor_over_torch_fp32"] = row["miopy_descriptor_ms"] / row["torch_fp32_ms"]
        row["replay_over_torch_fp32"] = row["miopy_sequence_replay_ms"] / row["torch_fp32_ms"]
        row["descriptor_over_torch_tf32"] = row["miopy_descriptor_ms"] / row["torch_tf32_ms"]
    print(json.dumps(row), flush=True)
    return row


CALL_ROWS = [("raw_pyopencl_enqueue", "raw pyopencl: set_args + enqueue of the plan's kernels"),
             ("plan_run", "`plan.run(x=, w=, y=)`"), ("plan_run_values", "`plan.run_values((x, w, y))`"),
             ("convolution_forward_algo", "`convolution_forward(..., algo=record)`"),
             ("convolution_forward", "`convolution_forward(...)` (no algo)"), ("conv2d", "`conv2d(x, w)`"),
             ("fusion_conv_bias_relu", "`conv_bias_activation_forward` (fusion plan)"),
             ("activation_forward", "`activation_forward`"), ("torch_conv2d", "PyTorch `F.conv2d` (cuDNN)")]
PASS_ROWS = [("miopy_descriptor_ms", "miopy, descriptor API with find records"),
             ("miopy_descriptor_again_ms", "miopy, descriptor API (measured again, last)"),
             ("miopy_conv2d_ms", "miopy, `conv2d`"), ("miopy_sequence_replay_ms", "miopy, captured sequence replay"),
             ("miopy_fused_bias_relu_ms", "miopy, fused conv+bias(+ReLU) plans"),
             ("miopy_kernel_sum_ms", "miopy, sum of kernel times"), ("torch_fp32_ms", "PyTorch fp32 (cuDNN)"),
             ("torch_tf32_ms", "PyTorch default (TF32)"), ("torch_fp32_bias_relu_ms", "PyTorch fp32 conv+bias+ReLU"),
             ("host_submit_descriptor_ms", "miopy host time to submit a pass (descriptor API)"),
             ("host_submit_replay_ms", "miopy host time to submit a pass (replay)")]


def page(sources: list[harness.Source], out: Path) -> list[str]:
    """docs/results/overhead.md from one run's results."""
    (source,) = sources
    calls, passes = source.data["calls"], source.data["passes"]
    lines = harness.page_head(
        "Host overhead and whole convolution passes", sources,
        "Host time per call is the median over batches of back-to-back calls (1000+ calls); a pass is every "
        "convolution of the network in order, wall time from the first call to the queue's finish, median of 20 "
        "passes after warm-up.")
    lines += [f"## Host microseconds per call (N=1, 16->16 channels, 14x14, 3x3; find chose {calls['solver']}, "
             f"{calls['launches']} launch(es))", "", "| call | host us |", "|---|---|"]
    lines += [f"| {label} | {calls[key]:.1f} |" for key, label in CALL_ROWS if key in calls]
    lines += ["", f"`plan.run` / raw enqueue: **{calls['plan_run_over_raw']:.2f}x** (target <= 1.5x); "
              f"`convolution_forward` with an algo **{calls['convolution_forward_algo']:.1f} us** (target <= 40); "
              f"`conv2d` **{calls['conv2d']:.1f} us** (target <= 50).", "", "## Convolution passes (ms)", ""]
    head = "| | " + " | ".join(f"{p['network']} N={p['n']}" for p in passes) + " |"
    lines += [head, "|---|" + "---|" * len(passes)]
    for key, label in PASS_ROWS:
        if any(key in p for p in passes):
            lines.append(f"| {label} | " + " | ".join(f"{p[key]:.3f}" if key in p else "" for p in passes) + " |")
    ratios = [("descriptor_over_torch_fp32", "descriptor API / PyTorch fp32"),
              ("replay_over_torch_fp32", "replay / PyTorch fp32"),
              ("descriptor_over_torch_tf32", "descriptor API / PyTorch TF32")]
    for key, label in ratios:
        if any(key in p for p in passes):
            lines.append(f"| **{label}** | " + " | ".join(f"**{p[key]:.2f}x**" if key in p else "" for p in passes)
                         + " |")
    return lines + ["", "Targets: ResNet-18 convolution pass N=1 <= 1.5x PyTorch fp32, N=32 <= 1.1x.", ""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--quick", action="store_true", help="small images and few iterations (PoCL smoke run)")
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--per-batch", type=int, default=100)
    args = ap.parse_args(argv)
    handle = miopy.Handle()
    batches, per_batch, size, iters = ((5, 40, 32, 3) if args.quick else (args.batches, args.per_batch, 224, 20))
    result = harness.new_record(handle, calls=call_costs(handle, batches, per_batch))
    print(json.dumps(result["calls"], indent=1), flush=True)
    result["passes"] = []
    harness.write_json(args.out, result)
    for depth in (18, 50):
        for n in ((1,) if args.quick else (1, 32)):
            result["passes"].append(pass_rows(handle, depth, n, size, iters))
            harness.write_json(args.out, result)   # each row as it comes: a run cut short keeps what it measured
    return 0


if __name__ == "__main__":
    sys.exit(main())
