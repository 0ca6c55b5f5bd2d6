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

    python benchmarks/overhead.py --out benchmarks/results/h100-overhead.json
    python benchmarks/overhead.py --quick          # PoCL-sized smoke run (scaled-down images)
    python benchmarks/overhead.py --report benchmarks/results/h100-overhead.json   # writes docs/overhead.md
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import miopy  # noqa: E402
from miopy import ConvDesc, Direction, TensorDesc  # noqa: E402
from miopy.conv.networks import resnet_pass  # noqa: E402


def host_us(call, batches: int, per_batch: int, finish) -> float:
    """Median over batches of (host seconds for per_batch back-to-back calls) / per_batch, in us."""
    for _ in range(3):
        call()
    finish()
    samples = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            call()
        samples.append((time.perf_counter() - t0) / per_batch * 1e6)
        finish()
    return statistics.median(samples)


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


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _torch_call_cost(xd, wd, batches, per_batch):
    torch = _torch()
    if torch is None:
        return None
    import torch.nn.functional as F
    torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32 = True, False
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

    def kernel_ms(self) -> float:
        """Sum of the pass's kernel times from profiling events (median of 5 passes)."""
        samples = []
        for _ in range(5):
            events = []
            for it in self.items:
                events += miopy.convolution_forward(self.handle, it["xd"], it["x"], it["wd"], it["w"], it["conv"],
                                                    it["yd"], it["y"], algo=it["rec"])
            self.handle.finish()
            samples.append(sum((e.profile.end - e.profile.start) for e in events) * 1e-6)
        return statistics.median(samples)


def wall_ms(run, finish, iters: int) -> float:
    for _ in range(3):
        run()
    finish()
    samples = []
    for _ in range(iters):
        t0 = time.perf_counter()
        run()
        finish()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def submit_ms(run, finish, iters: int) -> float:
    """Host time to enqueue one pass (no synchronisation inside it), median over iters."""
    samples = []
    for _ in range(iters):
        finish()
        t0 = time.perf_counter()
        run()
        samples.append((time.perf_counter() - t0) * 1e3)
    finish()
    return statistics.median(samples)


def torch_pass_ms(layers, n: int, iters: int) -> dict:
    torch = _torch()
    if torch is None:
        return {}
    import torch.nn.functional as F
    torch.backends.cudnn.benchmark = True
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
        torch.backends.cudnn.allow_tf32 = tf32
        out[f"torch_{name}_ms"] = wall_ms(conv_only, torch.cuda.synchronize, iters)
    torch.backends.cudnn.allow_tf32 = False
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


def report(result: dict, source: str) -> str:
    """docs/overhead.md from one run's JSON."""
    calls, passes = result["calls"], result["passes"]
    lines = ["# Host overhead and whole convolution passes", "",
             f"Generated by `python benchmarks/overhead.py --report {source}` from one run on **{result['device']}** "
             f"({result['date']}). Host time per call is the median over batches of back-to-back calls (1000+ "
             "calls); a pass is every convolution of the network in order, wall time from the first call to the "
             "queue's finish, median of 20 passes after warm-up.", "",
             f"## Host microseconds per call (N=1, 16->16 channels, 14x14, 3x3; find chose {calls['solver']}, "
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
    lines += ["", "Targets: ResNet-18 convolution pass N=1 <= 1.5x PyTorch fp32, N=32 <= 1.1x.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--report", type=Path, help="write docs/overhead.md from this recorded JSON and stop")
    ap.add_argument("--quick", action="store_true", help="small images and few iterations (PoCL smoke run)")
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--per-batch", type=int, default=100)
    args = ap.parse_args(argv)
    if args.report:
        text = report(json.loads(args.report.read_text()), str(args.report))
        (Path(__file__).resolve().parents[1] / "docs" / "overhead.md").write_text(text)
        return 0
    handle = miopy.Handle()
    batches, per_batch, size, iters = ((5, 40, 32, 3) if args.quick else (args.batches, args.per_batch, 224, 20))
    result = {"device": handle.info.name, "device_id": handle.info.device_id, "platform": platform.platform(),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "calls": call_costs(handle, batches, per_batch)}
    print(json.dumps(result["calls"], indent=1), flush=True)
    result["passes"] = []
    _save(args.out, result)
    for depth in (18, 50):
        for n in ((1,) if args.quick else (1, 32)):
            result["passes"].append(pass_rows(handle, depth, n, size, iters))
            _save(args.out, result)   # each row as it comes: a run cut short keeps what it measured
    return 0


def _save(path: Path | None, result: dict) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    sys.exit(main())
