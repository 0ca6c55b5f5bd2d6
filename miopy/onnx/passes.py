"""Graph passes at load time, after shape inference: drop what folded into constants, fold a zero Pad and
BatchNormalization into the convolution before them, and fuse activations (and residual additions, where
the fusion exists) into the convolution's epilogue, so one kernel runs each fused chain.

A convolution-like node (Conv, Gemm, MatMul) collects what it absorbed in ``node.fused``:
  pre_pads   (top, bottom, left, right) added to its own padding, from a Pad before it
  affine     (scale, shift) per output channel, float64: BatchNormalization, and Mul / Add / Sub / Div by a
             constant per channel (or scalar), after it; folded into its weights and bias
  ops        the op types absorbed, in order, for tables
  residual   the value name added to its output before the activation (Add)
  activation (name, alpha, beta, gamma): miopy's ActivationMode name and its arguments
  names      the names of the absorbed nodes, for tables
"""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from .graph import Graph, Node
from .ops import Context, clip_bounds, gemm_bias_per_column, pad_amounts

CONV_LIKE = ("Conv", "Gemm", "MatMul", "ConvTranspose")
ALIASES = ("Identity", "Dropout", "Flatten", "Reshape", "Squeeze", "Unsqueeze")
FLOAT_MAX = float(np.finfo(np.float32).max)


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
        return ("CLAMP", _finite(high), _finite(low), 0.0)
    return None


def _finite(bound: float) -> float:
    """An infinite Clip bound as float32's largest finite value (kernel arguments are finite)."""
    return float(np.clip(bound, -FLOAT_MAX, FLOAT_MAX))


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
        into.fused.setdefault("ops", []).append(node.op)
        self.nodes.remove(node)


def run_passes(graph: Graph, ctx: Context, residual_fusion: bool) -> list[Node]:
    """The nodes left to run, with folds and fusions applied (module docstring)."""
    nodes = [n for n in graph.nodes if not all(o in ctx.consts for o in n.outputs if o)]
    rw = Rewriter(graph, ctx, nodes)
    for node in list(nodes):
        if node.op == "Gemm":
            _lower_gemm(rw, node)
    for node in list(nodes):
        if node.op == "Pad":
            _fold_pad(rw, node)
    for node in list(nodes):
        if node in nodes and node.op in CONV_LIKE:
            _fuse_epilogue(rw, node, residual_fusion)
    return nodes


def _lower_gemm(rw: Rewriter, gemm: Node) -> None:
    """Gemm as the 1x1 convolution runs it: a transposed A (transA) through a Transpose before it, a C that
    is not a bias per output column (a full matrix, a column) as an Add of beta * C after it."""
    if int(gemm.attr("transA", 0)):
        a = gemm.inputs[0]
        transposed = f"{gemm.name}/A^T"
        rw.nodes.insert(rw.nodes.index(gemm), Node(f"{gemm.name}/transA", "Transpose", [a], [transposed],
                                                   {"perm": [1, 0]}))
        rw.ctx.shapes[transposed] = rw.ctx.shape(a)[::-1]
        rw.ctx.dtypes[transposed] = np.dtype(np.float32)
        gemm.inputs[0] = transposed
        gemm.attrs = {k: v for k, v in gemm.attrs.items() if k != "transA"}
    c = rw.ctx.const(gemm.input(2))
    y = gemm.outputs[0]
    if c is None or gemm_bias_per_column(c, rw.ctx.shape(y)[1]):
        return
    product, scaled = f"{gemm.name}/AB", f"{gemm.name}/beta*C"
    rw.ctx.consts[scaled] = (np.asarray(c, np.float64) * float(gemm.attr("beta", 1.0))).astype(np.float32)
    rw.ctx.shapes[scaled], rw.ctx.dtypes[scaled] = tuple(c.shape), np.dtype(np.float32)
    rw.ctx.shapes[product], rw.ctx.dtypes[product] = rw.ctx.shape(y), np.dtype(np.float32)
    gemm.inputs, gemm.outputs = gemm.inputs[:2], [product]
    rw.nodes.insert(rw.nodes.index(gemm) + 1, Node(f"{gemm.name}/C", "Add", [product, scaled], [y], {}))


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
    while nxt is not None and conv.op != "ConvTranspose":
        affine = _affine_of(rw, nxt, conv.outputs[0], -1 if conv.op == "MatMul" else 1)
        if affine is None:
            break
        conv.fused["affine"] = _compose(conv.fused.get("affine"), affine)
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


def _affine_of(rw: Rewriter, node: Node, value: str, axis: int) -> tuple[np.ndarray, np.ndarray] | None:
    """node as y = value * scale + shift per channel (the output channels of the convolution that made
    value lie along axis), or None when it is not that."""
    shape = rw.ctx.shape(value)
    axis %= len(shape)
    channels = shape[axis]
    if node.op == "BatchNormalization" and node.inputs[0] == value and axis == 1:
        scale, shift, mean, var = (np.asarray(rw.ctx.consts[node.input(i)], np.float64) for i in range(1, 5))
        factor = scale / np.sqrt(var + float(node.attr("epsilon", 1e-5)))
        return factor, shift - mean * factor
    if node.op not in ("Mul", "Add", "Sub", "Div") or value not in node.inputs[:2]:
        return None
    other = node.inputs[1] if node.inputs[0] == value else node.inputs[0]
    constant = rw.ctx.consts.get(other)
    per_channel = _per_channel(constant, shape, axis) if constant is not None else None
    if per_channel is None or (node.op in ("Sub", "Div") and node.inputs[0] != value):
        return None
    ones, zeros = np.ones(channels), np.zeros(channels)
    return {"Mul": (per_channel, zeros), "Add": (ones, per_channel), "Sub": (ones, -per_channel),
            "Div": (1.0 / per_channel, zeros)}[node.op]


def _per_channel(constant: np.ndarray, shape: tuple[int, ...], axis: int) -> np.ndarray | None:
    """constant as one float64 value per channel (along axis) when it broadcasts onto shape only along it."""
    if constant.dtype.kind != "f" or constant.ndim > len(shape):
        return None
    full = (1,) * (len(shape) - constant.ndim) + constant.shape
    if any(d != 1 for i, d in enumerate(full) if i != axis) or full[axis] not in (1, shape[axis]):
        return None
    return np.broadcast_to(np.asarray(constant, np.float64).reshape(-1), (shape[axis],)).copy()


def _compose(first: tuple | None, then: tuple) -> tuple[np.ndarray, np.ndarray]:
    if first is None:
        return then
    return first[0] * then[0], first[1] * then[0] + then[1]


def fold_affine(w: np.ndarray, bias: np.ndarray | None, affine: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Weights and bias of a convolution followed by y * scale + shift per output channel, in float64 and
    rounded once."""
    scale, shift = affine
    b = np.zeros(w.shape[0]) if bias is None else np.asarray(bias, np.float64)
    folded_w = np.asarray(w, np.float64) * scale.reshape(-1, *([1] * (w.ndim - 1)))
    return folded_w.astype(np.float32), (b * scale + shift).astype(np.float32)


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
