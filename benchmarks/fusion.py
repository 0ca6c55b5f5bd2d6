"""Fused conv + bias + ReLU against the unfused path on ResNet-50 and VGG-16 convolution layers.

Fused: one FusionPlan (conv_forward -> bias_forward -> activation_forward(RELU)), compiled once (it times
the applicable fused solvers and keeps the fastest). Unfused: find_convolution's fastest solver, then
convolution_forward_bias and activation_forward as separate kernels (MIOpen's unfused sequence). Times
are harness.device_ms medians (profiled runs after warm-ups) from the first kernel's start to the last's
end. Each row also records the fused output's largest hybrid difference from the unfused one.

    python -m benchmarks.fusion --batch 32 --out benchmarks/results/h200-fusion.json
    python -m benchmarks.fusion --batch 1 --shrink 8 --nets resnet50 --limit 2      # CPU smoke run
    python -m benchmarks.fusion --layer 64,56,56,64,3,3,1,1                         # C,H,W,K,R,S,pad,stride
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

import miopy
from benchmarks import harness
from miopy import ActivationMode, ConvDesc, FusionPlan, OperatorArgs, TensorDesc
from miopy.conv import networks
from miopy.conv.networks import Layer

NETWORKS = {"resnet50": networks.RESNET50, "vgg16": networks.VGG16}


def shrunk(layer: Layer, factor: int) -> Layer:
    """Spatial size divided by factor (at least the filter size), for quick runs on slow devices."""
    return replace(layer, h=max(layer.h // factor, layer.r), w=max(layer.w // factor, layer.s))


def parse_layer(text: str) -> Layer:
    c, h, w, k, r, s, pad, stride = (int(v) for v in text.split(","))
    return Layer(f"custom_{text.replace(',', 'x')}", c, h, w, k, r, s, pad, stride)


class Case:
    """Device tensors and descriptors of one layer, with the fused plan and the unfused calls."""

    def __init__(self, handle: miopy.Handle, layer: Layer, batch: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.handle = handle
        self.x_desc = TensorDesc("FP32", (batch, layer.c, layer.h, layer.w))
        self.w_desc = TensorDesc("FP32", (layer.k, layer.c, layer.r, layer.s))
        self.bias_desc = TensorDesc("FP32", (1, layer.k, 1, 1))
        self.conv = ConvDesc(layer.pad, layer.stride)
        self.y_desc = self.conv.output_desc(self.x_desc, self.w_desc)
        self.x, self.w, self.bias = (handle.to_device(rng.standard_normal(d.dims, dtype=np.float32))
                                     for d in (self.x_desc, self.w_desc, self.bias_desc))
        self.y_fused, self.y_unfused = handle.empty(self.y_desc.dims), handle.empty(self.y_desc.dims)

    def fused(self):
        """Compile the plan (timing the candidates); returns (enqueue callable, chosen fused solver id)."""
        plan = FusionPlan(self.handle, self.x_desc)
        ops = (plan.add_conv_forward(self.conv, self.w_desc), plan.add_bias_forward(self.bias_desc),
               plan.add_activation_forward(ActivationMode.RELU))
        choice = plan.compile()
        args = (OperatorArgs().set_conv_forward(ops[0], self.w).set_bias_forward(ops[1], self.bias)
                .set_activation_forward(ops[2]))
        return (lambda: plan.execute(self.x, self.y_fused, args)), choice.solver_id

    def unfused(self):
        """Find the convolution; returns (conv-only callable, conv + bias + relu callable, solver id)."""
        h, yd, y = self.handle, self.y_desc, self.y_unfused
        algo = miopy.find_convolution(h, self.x_desc, self.w_desc, self.conv)[0]

        def conv():
            return miopy.convolution_forward(h, self.x_desc, self.x, self.w_desc, self.w, self.conv, yd, y, algo=algo)

        def conv_bias_relu():
            return (conv() + miopy.convolution_forward_bias(h, self.bias_desc, self.bias, yd, y)
                    + miopy.activation_forward(h, ActivationMode.RELU, 0.0, 0.0, 0.0, yd, y, yd, y))
        return conv, conv_bias_relu, algo.solver_id


def measure(handle: miopy.Handle, net: str, layer: Layer, batch: int) -> dict:
    case = Case(handle, layer, batch)
    fused, fused_id = case.fused()
    conv, unfused, conv_id = case.unfused()
    fused_ms, unfused_ms, conv_ms = (harness.device_ms(handle, f) for f in (fused, unfused, conv))
    fused(), unfused()
    handle.finish()
    diff = harness.max_error(case.y_fused.get(), case.y_unfused.get())
    flops = 2 * np.prod(case.y_desc.dims) * layer.c * layer.r * layer.s
    return {"net": net, **asdict(layer), "n": batch, "fused_solver": fused_id, "conv_solver": conv_id,
            "fused_ms": fused_ms, "unfused_ms": unfused_ms, "conv_only_ms": conv_ms,
            "speedup": unfused_ms / fused_ms, "fused_tflops": flops / fused_ms * 1e-9, "max_diff": diff}


def print_row(row: dict) -> None:
    if "error" in row:
        print(f"{row['net']:9} {row['name']:22} FAILED: {row['error']}")
        return
    print(f"{row['net']:9} {row['name']:22} {row['fused_ms']:9.3f} {row['unfused_ms']:10.3f} "
          f"{row['conv_only_ms']:9.3f} {row['speedup']:7.2f}x {row['fused_tflops']:7.2f} {row['max_diff']:9.1e}  "
          f"{row['fused_solver']} / {row['conv_solver']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nets", nargs="+", choices=sorted(NETWORKS), default=sorted(NETWORKS))
    ap.add_argument("--layer", action="append", default=[], help="extra layer C,H,W,K,R,S,pad,stride")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--shrink", type=int, default=1, help="divide spatial sizes by this (quick runs)")
    ap.add_argument("--limit", type=int, default=None, help="at most this many layers per network")
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    a = ap.parse_args(argv)
    handle = miopy.Handle()
    jobs = [(net, layer) for net in a.nets for layer in NETWORKS[net][:a.limit]]
    jobs += [("custom", parse_layer(text)) for text in a.layer]
    print(f"device: {handle.info.name} ({handle.info.platform}), batch {a.batch}, shrink {a.shrink}")
    print(f"{'net':9} {'layer':22} {'fused ms':>9} {'unfused ms':>10} {'conv ms':>9} {'speedup':>8} "
          f"{'TFLOP/s':>7} {'max diff':>9}  fused solver / conv solver")
    rows = []
    for net, layer in jobs:
        layer = shrunk(layer, a.shrink)
        try:
            row = measure(handle, net, layer, a.batch)
        except miopy.MiopyError as exc:   # failures are data: record and go on
            row = {"net": net, **asdict(layer), "n": a.batch, "error": f"{type(exc).__name__}: {exc}"}
        print_row(row)
        rows.append(row)
    if a.out:
        harness.write_json(a.out, harness.new_record(handle, batch=a.batch, shrink=a.shrink, rows=rows))
        print(f"wrote {a.out}")
    return 0


def page(sources: list[harness.Source], out: Path) -> list[str]:
    """docs/results/fusion.md: each run's fused against unfused times per layer and the geometric-mean speedup."""
    lines = harness.page_head(
        "Fusion: conv + bias + ReLU, fused against unfused", sources,
        "One FusionPlan (conv, bias, ReLU in one kernel, the fastest applicable fused solver) against the fastest "
        "found convolution followed by separate bias and ReLU kernels (MIOpen's unfused sequence). Times are medians "
        "of profiled runs from the first kernel's start to the last's end.")
    for s in sources:
        data = s.data
        rows = [r for r in data["rows"] if "error" not in r]
        lines += [f"## {s.meta['device']}, batch {data['batch']}", ""]
        lines += harness.md_table(
            ["net", "layer", "fused ms", "unfused ms", "conv alone ms", "speedup", "fused solver"],
            [[r["net"], r["name"], f"{r['fused_ms']:.3f}", f"{r['unfused_ms']:.3f}", f"{r['conv_only_ms']:.3f}",
              f"{r['speedup']:.2f}x", r["fused_solver"]] for r in rows]
            + [[r["net"], r["name"], f"error: {r['error']}", "", "", "", ""] for r in data["rows"] if "error" in r])
        lines += ["", f"Geometric-mean speedup: {harness.geomean(r['speedup'] for r in rows):.2f}x.", ""]
    return lines


if __name__ == "__main__":
    sys.exit(main())
