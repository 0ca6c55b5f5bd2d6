"""Graph passes at load time, after shape inference: drop what folded into constants, fold a zero Pad and
BatchNormalization into the convolution before them, and fuse activations (and residual additions, where
the fusion exists) into the convolution's epilogue, so one kernel runs each fused chain.

A convolution-like node (Conv, Gemm, MatMul) collects what it absorbed in ``node.fused``:
  pre_pads   (top, bottom, left, right) added to its own padding, from a Pad before it
  bn         (scale, shift, mean, var, epsilon) of a BatchNormalization after it
  residual   the value name added to its output before the activation (Add)
  activation (name, alpha, beta, gamma): miopy's ActivationMode name and its arguments
  names      the names of the absorbed nodes, for tables
"""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from .graph import Graph, Node
from .ops import Context, clip_bounds, pad_amounts

CONV_LIKE = ("Conv", "Gemm", "MatMul", "ConvTranspose")
ALIASES = ("Identity", "Dropout", "Flatten", "Reshape", "Squeeze", "Unsqueeze")


def activation_of(node: Node, ctx: Context) -> tuple[str, float, float, float] | None:
    """node as (ActivationMode name, alpha, beta, gamma), or None when it is not a fusable activation."""
    if node.op == "Relu":
        return ("RELU", 0.0, 0.0, 0.0)
    if node.op == "LeakyRelu":
        return ("LEAKY_RELU", float(node.attr("alpha", 0.01)), 0.0, 0.0)
    if node.op == "Sigmoid":
        return ("LOGISTIC", 0.0, 0.0, 0.0)
    if node.op == "Tanh":
        return ("TANH", 1.0, 1.0, 0.0)
    if node.op == "HardSwish":
        return ("HARDSWISH", 1.0 / 6.0, 0.5, 0.0)
    if node.op == "Clip":
        low, high = clip_bounds(node, ctx)
        if low == 0.0:
            return ("RELU", 0.0, 0.0, 0.0) if math.isinf(high) else ("CLIPPED_RELU", high, 0.0, 0.0)
    return None


class Rewriter:
    """Use counts and producers of a graph's values, for passes that splice nodes out."""

    def __init__(self, graph: Graph, ctx: Context, nodes: list[Node]):
        self.graph, self.ctx, self.nodes = graph, ctx, nodes
        self.outputs = {v.name for v in graph.outputs}

    def users(self, value: str) -> list[Node]:
        return [n for n in self.nodes if value in reads(n)]

    def sole_user(self, value: str) -> Node | None:
        """The only node reading value, when value is not also a graph output."""
        users = self.users(value)
        if len(users) != 1 or value in self.outputs or reads(users[0]).count(value) != 1:
            return None
        return users[0]

    def producer(self, value: str) -> Node | None:
        return next((n for n in self.nodes if value in n.outputs), None)

    def absorb(self, into: Node, node: Node, output: str) -> None:
        """into takes over node's output (node is removed)."""
        into.outputs = [output]
        into.fused.setdefault("names", []).append(node.name)
        self.nodes.remove(node)


def run_passes(graph: Graph, ctx: Context, residual_fusion: bool) -> list[Node]:
    """The nodes left to run, with folds and fusions applied (module docstring)."""
    nodes = [n for n in graph.nodes if not all(o in ctx.consts for o in n.outputs if o)]
    rw = Rewriter(graph, ctx, nodes)
    for node in list(nodes):
        if node.op == "Pad":
            _fold_pad(rw, node)
    for node in list(nodes):
        if node in nodes and node.op in CONV_LIKE:
            _fuse_epilogue(rw, node, residual_fusion)
    return nodes


def _fold_pad(rw: Rewriter, pad: Node) -> None:
    """A constant-zero Pad of H and W only, read only by convolutions, becomes their padding."""
    if pad.attr("mode", "constant") != "constant":
        return
    shape = rw.ctx.shape(pad.input(0))
    begins, ends, value = pad_amounts(pad, rw.ctx, len(shape))
    if len(shape) != 4 or value != 0.0 or any(begins[:2]) or any(ends[:2]) or min(begins + ends) < 0:
        return
    users = rw.users(pad.outputs[0])
    if not users or pad.outputs[0] in rw.outputs or any(u.op != "Conv" or u.inputs[0] != pad.outputs[0]
                                                        for u in users):
        return
    for conv in users:
        conv.inputs[0] = pad.inputs[0]
        conv.fused["pre_pads"] = (begins[2], ends[2], begins[3], ends[3])
        conv.fused.setdefault("names", []).insert(0, pad.name)
    rw.nodes.remove(pad)


def _fuse_epilogue(rw: Rewriter, conv: Node, residual_fusion: bool) -> None:
    """conv -> [BatchNormalization] -> [Add] -> [activation], each absorbed while conv's output has no
    other reader."""
    nxt = rw.sole_user(conv.outputs[0])
    if nxt is not None and nxt.op == "BatchNormalization" and conv.op == "Conv" and nxt.inputs[0] == conv.outputs[0]:
        scale, shift, mean, var = (rw.ctx.consts[nxt.input(i)] for i in range(1, 5))
        conv.fused["bn"] = (scale, shift, mean, var, float(nxt.attr("epsilon", 1e-5)))
        rw.absorb(conv, nxt, nxt.outputs[0])
        nxt = rw.sole_user(conv.outputs[0])
    if residual_fusion and nxt is not None and nxt.op == "Add" and conv.op == "Conv":
        other = nxt.inputs[1] if nxt.inputs[0] == conv.outputs[0] else nxt.inputs[0]
        if (other not in rw.ctx.consts and rw.ctx.shape(other) == rw.ctx.shape(conv.outputs[0])
                and _defined_before(rw, other, conv)):
            conv.fused["residual"] = other
            rw.absorb(conv, nxt, nxt.outputs[0])
            nxt = rw.sole_user(conv.outputs[0])
    if nxt is not None and nxt.inputs[0] == conv.outputs[0]:
        activation = activation_of(nxt, rw.ctx)
        if activation is not None:
            conv.fused["activation"] = activation
            rw.absorb(conv, nxt, nxt.outputs[0])


def _defined_before(rw: Rewriter, value: str, node: Node) -> bool:
    """value is a graph input or produced by a node before node (so it is ready when node runs)."""
    producer = rw.producer(value)
    return producer is None or rw.nodes.index(producer) < rw.nodes.index(node)


def fold_batchnorm(w: np.ndarray, bias: np.ndarray | None, bn: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Weights and bias of conv followed by batch-norm inference, in float64 then rounded once."""
    scale, shift, mean, var, eps = bn
    factor = np.asarray(scale, np.float64) / np.sqrt(np.asarray(var, np.float64) + eps)
    b = np.zeros(w.shape[0]) if bias is None else np.asarray(bias, np.float64)
    folded_w = np.asarray(w, np.float64) * factor.reshape(-1, *([1] * (w.ndim - 1)))
    folded_b = (b - np.asarray(mean, np.float64)) * factor + np.asarray(shift, np.float64)
    return folded_w.astype(np.float32), folded_b.astype(np.float32)


def reads(node: Node) -> list[str]:
    """The values node reads when it runs: its inputs and a fused residual."""
    extra = [node.fused["residual"]] if "residual" in node.fused else []
    return [name for name in node.inputs if name] + extra


def consumers(nodes: list[Node]) -> dict[str, list[int]]:
    """value -> indices of the nodes reading it."""
    out: dict[str, list[int]] = defaultdict(list)
    for i, node in enumerate(nodes):
        for name in reads(node):
            out[name].append(i)
    return out
