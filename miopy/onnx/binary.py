"""ONNX's Add, Sub, Mul and Div on run-time tensors, with NumPy broadcasting, on the tensor-op family's
OpTensor: c = op(alpha1 * a, alpha2 * b) with b broadcast over a (each of b's dims a's or 1).

- b broadcasts over a (a has the output's shape): one OpTensor on the operands as they are;
- a broadcasts over b: Add and Mul swap the operands, Sub swaps them with the alphas (c = -1 * b + a);
- otherwise (Div with a broadcast, or both operands broadcast) a is expanded to the output's shape first:
  a constant on the host at load time, a run-time value by a layout copy into the output buffer, on which
  the OpTensor then runs in place.

Sub is ADD with alpha2 = -1 (exact in float). Shapes of rank up to 4 align at the right, as NumPy's, and
are viewed as 4-D. Constant operands are uploaded once, at load time.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..pointwise import scalar
from ..tensor import DataType, TensorDesc
from ..tensor_ops import TensorOp, op_tensor_plan
from . import layout
from .graph import Node

if TYPE_CHECKING:
    from .build import Builder

OPS = {"Add": TensorOp.ADD, "Sub": TensorOp.ADD, "Mul": TensorOp.MUL, "Div": TensorOp.DIV}
Shape4 = tuple[int, int, int, int]


def aligned(shape: Sequence[int], rank: int) -> Shape4:
    """shape padded with 1s on the left to rank (NumPy's alignment), then viewed as 4-D (1s on the right)."""
    dims = [1] * (rank - len(shape)) + list(shape) + [1] * (4 - rank)
    return (dims[0], dims[1], dims[2], dims[3])


class Input:
    """One input of the node: a run-time value's buffer, or a constant (uploaded when first needed)."""

    def __init__(self, b: Builder, name: str, rank: int):
        self.builder, self.name = b, name
        self.const = b.ctx.const(name)
        self.shape = aligned(b.shape(name), rank)

    def device(self, shape: Shape4 | None = None) -> Any:
        """The buffer holding the operand (a constant broadcast to shape on the host when given)."""
        if self.const is None:
            return self.builder.buffer(self.name)
        value = np.asarray(self.const, np.float32).reshape(self.shape)
        return self.builder.upload(np.broadcast_to(value, shape or self.shape))


def binary_enqueue(b: Builder, node: Node) -> tuple[Callable[[], Any], str]:
    """node's enqueue callable (every plan built now) and the steps it runs, for tables."""
    out_shape = b.shape(node.outputs[0])
    rank = len(out_shape)
    first, second = Input(b, node.inputs[0], rank), Input(b, node.inputs[1], rank)
    out = aligned(out_shape, rank)
    alphas = (1.0, -1.0 if node.op == "Sub" else 1.0)
    y = b.buffer(node.outputs[0])
    before: list[Callable[[], Any]] = []
    if first.shape != out and second.shape == out and node.op != "Div":
        first, second = second, first
        alphas = (alphas[1], alphas[0])
        a = first.device()
    elif first.shape != out and first.const is not None:
        a = first.device(out)
    elif first.shape != out:
        expand = layout.expand_plan(b.handle, first.shape, out)
        copy = (first.device(), y)
        before.append(lambda: expand.run_values(copy, scalars=layout.NO_VALUE))
        a = y
    else:
        a = first.device()
    desc = TensorDesc(DataType.FLOAT32, out)
    plan = op_tensor_plan(b.handle, OPS[node.op], desc, TensorDesc(DataType.FLOAT32, second.shape), desc)
    values = (a, second.device(), y)
    scalars = {"alpha1": scalar(alphas[0], "alpha1"), "alpha2": scalar(alphas[1], "alpha2"), "beta": np.float32(0)}

    def enqueue():
        for step in before:
            step()
        plan.run_values(values, scalars=scalars)
    return enqueue, "+".join(["LayoutCopy"] * len(before) + [plan.solver_id])
