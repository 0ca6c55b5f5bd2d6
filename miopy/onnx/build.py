"""Each node of the passed graph as a step: the miopy primitive that runs it, built once (plans compiled,
weights uploaded, buffers bound) and enqueued by ``Step.enqueue``.

Convolution-like nodes (Conv, Gemm and MatMul as 1x1 convolutions, ConvTranspose) take their solution
from the find DB, else immediate mode's heuristic ranking; with ``find=True`` find runs for each first.
A fused chain (bias, activation) runs in the convolution's own kernel: the first ranked solver whose
kernel has the epilogue hook and builds is used; a solver that fails to build is skipped (failures are
data).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl

from ..activation import ActivationMode, activation_forward
from ..conv import REGISTRY as CONV_REGISTRY
from ..conv.api import convolution_plan
from ..conv.api import find as conv_find
from ..conv.problem import ConvDesc, ConvProblem, Direction, map_problem
from ..conv.solvers.common import ConvSolver
from ..errors import MiopyError, NotSupported
from ..find import AlgoPerf, get_solutions
from ..fusion import BatchNormMode, Epilogue, FusionPlan, OperatorArgs
from ..fusion.epilogue import ACTIVATION_ROLES
from ..handle import Handle
from ..lrn import LRNDesc, LRNMode
from ..lrn.api import memoised_forward as memoised_lrn
from ..plan import Operand, Plan, checked_solution, memo_plan
from ..pointwise import pointwise_launch
from ..pooling import PoolingDesc, PoolingMode, pooling_forward
from ..softmax import SoftmaxAlgorithm, SoftmaxMode
from ..softmax.api import memoised_forward as memoised_softmax
from ..solver import Solution
from ..tensor import DataType, TensorDesc
from . import layout
from .binary import binary_enqueue
from .graph import Node
from .ops import (
    Context,
    conv_window,
    lrn_params,
    pad_amounts,
    pool_window,
    softmax_axis,
    transpose_geometry,
    transpose_perm,
    unsupported,
)
from .passes import activation_of, fold_affine

FP32 = DataType.FLOAT32


@dataclass
class Step:
    """One node, ready: enqueue() runs it on its bound buffers (through plans, so a capture records it)."""

    node: Node
    enqueue: Callable[[], Any]
    solver: str = ""
    detail: str = ""


def as4d(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """A 4-D view of a row-major shape with the same element order: (N, C) -> (N, C, 1, 1), (N, C, L) ->
    (N, C, L, 1); longer shapes merge their trailing dimensions."""
    dims = list(shape) + [1] * (4 - len(shape)) if len(shape) <= 4 else [*shape[:3], int(np.prod(shape[3:]))]
    if not dims:
        dims = [1, 1, 1, 1]
    return (dims[0], dims[1], dims[2], dims[3])


def desc(shape: tuple[int, ...]) -> TensorDesc:
    return TensorDesc(FP32, as4d(shape))


@dataclass
class Builder:
    """What building steps needs: the handle, shapes and constants, each value's device buffer."""

    handle: Handle
    ctx: Context
    buffers: Mapping[str, cl.Buffer]
    find: bool = False
    weights: list = field(default_factory=list)

    def buffer(self, value: str) -> cl.Buffer:
        return self.buffers[value]

    def upload(self, array: np.ndarray) -> Any:
        dev = self.handle.to_device(np.ascontiguousarray(array, np.float32))
        self.weights.append(dev)
        return dev

    def shape(self, value: str) -> tuple[int, ...]:
        return self.ctx.shape(value)

    # -- convolution solutions -------------------------------------------------------------------------
    def records(self, problem: ConvProblem) -> list[AlgoPerf]:
        """The ranked solutions of problem: find's (find=True), else the find DB's or the heuristic's."""
        return list(conv_find(self.handle, problem) if self.find else get_solutions(self.handle, problem))


def build_step(b: Builder, node: Node) -> Step | None:
    """node's step; None for views (they share their input's buffer and run nothing)."""
    if node.op in VIEWS:
        return None
    builder = BUILDERS.get(node.op)
    if builder is None:
        raise unsupported(node, None, "this operator's miopy primitive is not available yet")
    return builder(b, node)


VIEWS = ("Identity", "Dropout", "Flatten", "Reshape", "Squeeze", "Unsqueeze")
IN_PLACE = ("Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "HardSwish")
BINARY = ("Add", "Sub", "Mul", "Div")
# Ops whose output may take the slot of their first input when it dies there (same size): the activations,
# OpTensor (c may be a) and softmax (whole rows are read before any is written).
OVERWRITES = IN_PLACE + BINARY + ("Softmax", "LogSoftmax")


# -- convolutions ---------------------------------------------------------------------------------------------
def _activation_scalars(activation: tuple | None) -> dict[str, np.float32]:
    if activation is None:
        return {}
    return {role: np.float32(v) for role, v in zip(ACTIVATION_ROLES, activation[1:])}


def _epilogue(bias: bool, activation: tuple | None, add: bool = False) -> Epilogue:
    return Epilogue(bias=bias, activation=ActivationMode[activation[0]] if activation else None, add=add)


def fused_conv_step(b: Builder, node: Node, x_desc: TensorDesc, w: np.ndarray, bias: np.ndarray | None,
                    conv: ConvDesc, x_value: str) -> Step:
    """y = activation(conv(x, w) + bias [+ z]) in one kernel, z the fused residual (the fusion epilogue's
    add): the first ranked solver that fuses and builds. y may be z's very buffer (the memory plan hands a
    dying residual's slot to the output): each element of z is read just before its y is stored."""
    w_desc = TensorDesc(FP32, w.shape)
    problem = ConvProblem.create(Direction.FORWARD, x_desc, w_desc, conv)
    activation, residual = node.fused.get("activation"), node.fused.get("residual")
    epilogue = _epilogue(bias is not None, activation, residual is not None)
    ops = [Operand("x", "x", x_desc), Operand("y", "y", problem.y, written=True), Operand("w", "w", w_desc)]
    w_dev = b.upload(w)
    values: list = [b.buffer(x_value), b.buffer(node.outputs[0]), w_dev]
    if bias is not None:
        ops.append(Operand("bias", "bias", TensorDesc(FP32, (1, w.shape[0], 1, 1))))
        values.append(b.upload(bias))
    scalars = _activation_scalars(activation)
    if residual is not None:
        ops.append(Operand("z", "z", problem.y))
        values.append(b.buffer(residual))
        scalars["z_alpha"] = np.float32(1.0)
    plan, record = _fused_plan(b, node, problem, epilogue, ops)
    values_t = tuple(values)
    return Step(node, lambda: plan.run_values(values_t, scalars=scalars), record.solver_id, problem.key())


def _fused_plan(b: Builder, node: Node, problem: ConvProblem, epilogue: Epilogue,
                ops: list[Operand]) -> tuple[Plan, AlgoPerf]:
    skipped = []
    for record in b.records(problem):
        solver = CONV_REGISTRY.get(record.solver_id)
        assert isinstance(solver, ConvSolver)
        if epilogue.ops and not (solver.supports_epilogue and epilogue.ops <= solver.epilogue_ops):
            skipped.append(f"{solver.id}: no epilogue hook for {sorted(epilogue.ops)}")
            continue
        try:
            solution = checked_solution(b.handle, problem, solver.id, record.params, epilogue if epilogue.ops else None)
            alias = [("z", "y")] if epilogue.add else []
            return Plan(b.handle, solution, ops, blend_output="y", may_alias=alias, problem=problem), record
        except MiopyError as exc:
            skipped.append(f"{solver.id}: {type(exc).__name__}: {exc}")
    raise NotSupported(f"node {node.name!r}: no convolution solver runs {problem.key()}: " + "; ".join(skipped))


def conv_geometry(ctx: Context, node: Node) -> tuple[TensorDesc, np.ndarray, np.ndarray | None, ConvDesc]:
    """Input descriptor, weights and bias (with the affine ops after the node folded in) and convolution
    descriptor of a Conv, Gemm or MatMul node (Gemm and MatMul as 1x1 convolutions over the (rows, K, 1, 1)
    view of A)."""
    x_desc, w, bias, conv = _raw_geometry(ctx, node)
    if "affine" in node.fused:
        w, bias = fold_affine(w, bias, node.fused["affine"])
    return x_desc, np.asarray(w, np.float32), bias, conv


def _raw_geometry(ctx: Context, node: Node) -> tuple[TensorDesc, np.ndarray, np.ndarray | None, ConvDesc]:
    x = ctx.shape(node.inputs[0])
    if node.op == "Gemm":
        return _gemm_geometry(ctx, node, x)
    if node.op == "MatMul":
        weights = ctx.consts[node.inputs[1]].T.astype(np.float32)
        rows = int(np.prod(x[:-1]))
        return TensorDesc(FP32, (rows, x[-1], 1, 1)), weights.reshape(*weights.shape, 1, 1), None, ConvDesc()
    w = ctx.consts[node.inputs[1]]
    win = conv_window(node, x, w.shape)
    extra = node.fused.get("pre_pads", (0, 0, 0, 0))
    pads = tuple(p + e for p, e in zip(win.pads, extra))
    conv = ConvDesc(pads, win.strides, win.dilations, int(node.attr("group", 1)))
    return TensorDesc(FP32, x), w, ctx.const(node.input(2)), conv


def _gemm_geometry(ctx: Context, node: Node, a: tuple[int, ...]
                   ) -> tuple[TensorDesc, np.ndarray, np.ndarray | None, ConvDesc]:
    """Y = alpha * A B' + beta * C: alpha scales the weights, beta * C is the bias."""
    weights = ctx.consts[node.inputs[1]].astype(np.float64)
    weights = weights if int(node.attr("transB", 0)) else weights.T
    weights = weights * float(node.attr("alpha", 1.0))
    bias = None
    if node.input(2):
        c = ctx.consts[node.input(2)].astype(np.float64) * float(node.attr("beta", 1.0))
        bias = np.broadcast_to(c.reshape(-1), (weights.shape[0],)).astype(np.float32)
    w = weights.astype(np.float32).reshape(*weights.shape, 1, 1)
    return TensorDesc(FP32, (a[0], a[1], 1, 1)), w, bias, ConvDesc()


def transpose_conv_geometry(ctx: Context, node: Node) -> tuple[TensorDesc, TensorDesc, ConvDesc]:
    """Input and weight descriptors and the transpose-mode ConvDesc of a ConvTranspose node."""
    x = ctx.shape(node.inputs[0])
    w = ctx.consts[node.inputs[1]]
    win, _, out_pad = transpose_geometry(node, x, w.shape)
    conv = ConvDesc(win.pads, win.strides, win.dilations, int(node.attr("group", 1)), "transpose", out_pad)
    return TensorDesc(FP32, x), TensorDesc(FP32, w.shape), conv


def _conv(b: Builder, node: Node) -> Step:
    x_desc, w, bias, conv = conv_geometry(b.ctx, node)
    return fused_conv_step(b, node, x_desc, w, bias, conv, node.inputs[0])


def _conv_transpose(b: Builder, node: Node) -> Step:
    """ConvTranspose through the convolution family's transpose mode, then bias (+ activation) in place."""
    x_desc, w_desc, conv = transpose_conv_geometry(b.ctx, node)
    w = b.ctx.consts[node.inputs[1]].astype(np.float32)
    y_desc = conv.output_desc(x_desc, w_desc)
    problem = map_problem(Direction.FORWARD, x_desc, w_desc, conv, y_desc).problem
    plan, record = None, None
    errors = []
    for record in b.records(problem):
        try:
            plan = convolution_plan(b.handle, Direction.FORWARD, x_desc, w_desc, conv, y_desc, algo=record)
            break
        except MiopyError as exc:
            errors.append(f"{record.solver_id}: {exc}")
    if plan is None or record is None:
        raise NotSupported(f"node {node.name!r}: no solver runs {problem.key()}: " + "; ".join(errors))
    values = (b.buffer(node.inputs[0]), b.upload(w), b.buffer(node.outputs[0]))
    bias = b.ctx.const(node.input(2))
    after = _epilogue_step(b, y_desc, bias, node.fused.get("activation"), node.outputs[0])
    conv_plan = plan

    def enqueue():
        conv_plan.run_values(values)
        if after is not None:
            after()
    return Step(node, enqueue, record.solver_id, problem.key())


def _epilogue_step(b: Builder, y_desc: TensorDesc, bias: np.ndarray | None, activation: tuple | None,
                   value: str) -> Callable[[], Any] | None:
    """bias (+ activation) applied in place on value, one pointwise kernel; None when there is neither."""
    if bias is None and activation is None:
        return None
    epilogue = _epilogue(bias is not None, activation)
    bias_desc = TensorDesc(FP32, (1, y_desc.c, 1, 1))

    def build() -> Plan:
        launch = pointwise_launch("fusion_pointwise.cl", "pointwise_epilogue", {"X": y_desc, "Y": y_desc},
                                  epilogue.defines(), ("y", "y", *epilogue.args))
        ops = [Operand("y", "y", y_desc, written=True)] + ([Operand("bias", "bias", bias_desc)] if bias is not None
                                                           else [])
        return Plan(b.handle, Solution("PointwiseEpilogue", {}, (launch,)), ops)
    plan = memo_plan(b.handle, ("onnx.epilogue", y_desc, epilogue), build)
    values = (b.buffer(value),) + ((b.upload(bias),) if bias is not None else ())
    scalars = _activation_scalars(activation)
    return lambda: plan.run_values(values, scalars=scalars)


# -- element-wise -------------------------------------------------------------------------------------------------
def _activation(b: Builder, node: Node) -> Step:
    activation = activation_of(node, b.ctx)
    assert activation is not None   # every op of IN_PLACE is an activation
    mode = ActivationMode[activation[0]]
    d = desc(b.shape(node.inputs[0]))
    x, y = b.buffer(node.inputs[0]), b.buffer(node.outputs[0])
    handle, (alpha, beta, gamma) = b.handle, activation[1:]
    return Step(node, lambda: activation_forward(handle, mode, alpha, beta, gamma, d, x, d, y), "Activation",
                mode.name)


def _batchnorm(b: Builder, node: Node) -> Step:
    """Batch-norm inference on its own (not after a convolution), one pointwise kernel."""
    x_shape = b.shape(node.inputs[0])
    d = desc(x_shape) if len(x_shape) != 3 else TensorDesc(FP32, (*x_shape, 1))
    fusion = FusionPlan(b.handle, d)
    bn = fusion.add_batchnorm_inference(BatchNormMode.SPATIAL)
    fusion.compile(benchmark=False)
    scale, shift, mean, var = (b.upload(b.ctx.consts[node.input(i)]) for i in range(1, 5))
    args = OperatorArgs().set_batchnorm_inference(bn, scale, shift, mean, var, float(node.attr("epsilon", 1e-5)))
    x, y = b.buffer(node.inputs[0]), b.buffer(node.outputs[0])
    return Step(node, lambda: fusion.execute(x, y, args), "BatchNormActivInference")


def _binary(b: Builder, node: Node) -> Step:
    """Add, Sub, Mul, Div on run-time tensors (miopy.onnx.binary)."""
    enqueue, solver = binary_enqueue(b, node)
    return Step(node, enqueue, solver)


def _softmax(b: Builder, node: Node) -> Step:
    """Softmax / LogSoftmax along one axis: the softmax family's channel mode on the (outer, axis, inner, 1)
    view of the packed tensor."""
    shape = b.shape(node.inputs[0])
    axis = softmax_axis(node, shape)
    d = TensorDesc(FP32, (int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1:])), 1))
    algorithm = SoftmaxAlgorithm.LOG if node.op == "LogSoftmax" else SoftmaxAlgorithm.ACCURATE
    plan = memoised_softmax(b.handle, algorithm, SoftmaxMode.CHANNEL, d, d)
    values = (b.buffer(node.inputs[0]), b.buffer(node.outputs[0]))
    return Step(node, lambda: plan.run_values(values), plan.solver_id, algorithm.name)


def _lrn(b: Builder, node: Node) -> Step:
    """LRN: the LRN family's cross-channel mode (ONNX's window and alpha / size scaling are MIOpen's)."""
    size, alpha, beta, bias = lrn_params(node)
    lrn = LRNDesc(LRNMode.CROSS_CHANNEL, size, alpha, beta, bias)
    d = TensorDesc(FP32, b.shape(node.inputs[0]))
    call = memoised_lrn(b.handle, lrn, d, d, False)
    plan = call.plan
    values = (b.buffer(node.inputs[0]), b.buffer(node.outputs[0]))
    return Step(node, lambda: plan.run_values(values), plan.solver_id, f"n={size}")


# -- pooling ---------------------------------------------------------------------------------------------------------
def _pool(b: Builder, node: Node) -> Step:
    """MaxPool, AveragePool (count_include_pad: the inclusive mode) and the global pools, on the pooling family."""
    x = b.shape(node.inputs[0])
    if node.op.startswith("Global"):
        mode = PoolingMode.MAX if node.op == "GlobalMaxPool" else PoolingMode.AVERAGE
        pool = PoolingDesc(mode, (x[2], x[3]), 0, (x[2], x[3]))
    else:
        win, _ = pool_window(node, x)
        mode = (PoolingMode.MAX if node.op == "MaxPool" else PoolingMode.AVERAGE_INCLUSIVE
                if int(node.attr("count_include_pad", 0)) else PoolingMode.AVERAGE)
        pool = PoolingDesc(mode, win.kernel, win.pads, win.strides, bool(node.attr("ceil_mode", 0)))
    x_desc = TensorDesc(FP32, x)
    y_desc = pool.output_desc(x_desc)
    xb, yb, handle = b.buffer(node.inputs[0]), b.buffer(node.outputs[0]), b.handle
    return Step(node, lambda: pooling_forward(handle, pool, 1.0, x_desc, xb, 0.0, y_desc, yb), "Pooling",
                pool.mode.name)


# -- layout ----------------------------------------------------------------------------------------------------------
def _concat(b: Builder, node: Node) -> Step:
    whole = b.shape(node.outputs[0])
    axis = int(node.attr("axis")) % len(whole)
    y = b.buffer(node.outputs[0])
    runs, offset = [], 0
    for name in node.inputs:
        part = b.shape(name)
        plan = layout.concat_plan(b.handle, part, whole, axis, offset)
        runs.append((plan, (b.buffer(name), y)))
        offset += part[axis]

    def enqueue():
        for plan, values in runs:
            plan.run_values(values, scalars=layout.NO_VALUE)
    return Step(node, enqueue, "LayoutCopy")


def _transpose(b: Builder, node: Node) -> Step:
    shape = b.shape(node.inputs[0])
    plan = layout.transpose_plan(b.handle, shape, transpose_perm(node, len(shape)))
    values = (b.buffer(node.inputs[0]), b.buffer(node.outputs[0]))
    return Step(node, lambda: plan.run_values(values, scalars=layout.NO_VALUE), "LayoutCopy")


def _pad(b: Builder, node: Node) -> Step:
    shape = b.shape(node.inputs[0])
    begins, ends, value = pad_amounts(node, b.ctx, len(shape))
    plan = layout.pad_plan(b.handle, shape, begins, ends, node.attr("mode", "constant"))
    values, scalars = (b.buffer(node.inputs[0]), b.buffer(node.outputs[0])), layout.pad_value(value)
    return Step(node, lambda: plan.run_values(values, scalars=scalars), "LayoutCopy")


BUILDERS: dict[str, Callable[[Builder, Node], Step]] = {
    "Conv": _conv, "Gemm": _conv, "MatMul": _conv, "ConvTranspose": _conv_transpose,
    "BatchNormalization": _batchnorm, "Concat": _concat, "Transpose": _transpose, "Pad": _pad,
    **{op: _pool for op in ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool")},
    **{op: _activation for op in IN_PLACE}, **{op: _binary for op in BINARY},
    "Softmax": _softmax, "LogSoftmax": _softmax, "LRN": _lrn,
}
