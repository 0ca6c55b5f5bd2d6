"""The descriptor API of MIOpen's tensor operations, on plans: OpTensor, SetTensor, ScaleTensor,
TransformTensor. Numbers are per-call kernel arguments (never recompiled); every buffer and number is
checked before anything is enqueued."""
from __future__ import annotations

import math

import pyopencl as cl

from ..device import index_reason
from ..errors import NotSupported, check
from ..find import immediate_plan
from ..handle import Handle
from ..kernel_cache import KernelSpec
from ..plan import Operand, Plan, memo_plan, operands
from ..pointwise import pointwise_defines, scalar
from ..solver import KernelLaunch, Solution, round_up
from ..tensor import TensorDesc
from .layouts import flat_launch, is_dense, tiled_axes, tiled_launch
from .problem import TensorOpProblem, check_data
from .solvers.packed import WG


def op_tensor(handle: Handle, tensor_op, alpha1: float, a_desc: TensorDesc, a, alpha2: float, b_desc: TensorDesc,
              b, beta: float, c_desc: TensorDesc, c) -> list[cl.Event]:
    """c = op(alpha1 * a, alpha2 * b) + beta * c (MIOpen's OpTensor; op add, mul, min or max). b is broadcast
    over a: each of its dims equals a's or is 1, anything else is refused, as MIOpen does. c may be a (or b,
    when b has c's descriptor); c is not read when beta is 0."""
    plan = memo_plan(_checked(handle), ("tensor_ops.op_tensor", tensor_op, a_desc, b_desc, c_desc),
                     lambda: _op_plan(handle, tensor_op, a_desc, b_desc, c_desc), (tensor_op,))
    return plan.run_values((a, b, c), scalars={"alpha1": scalar(alpha1, "alpha1"), "alpha2": scalar(alpha2, "alpha2"),
                                               "beta": scalar(beta, "beta")})


def set_tensor(handle: Handle, y_desc: TensorDesc, y, alpha: float) -> list[cl.Event]:
    """Every element y_desc addresses = alpha (MIOpen's SetTensor); elements between them are untouched."""
    plan = memo_plan(_checked(handle), ("tensor_ops.set_tensor", y_desc),
                     lambda: unary_plan(handle, "set_tensor", y_desc))
    return plan.run_values((y,), scalars={"value": scalar(alpha, "alpha")})


def scale_tensor(handle: Handle, y_desc: TensorDesc, y, alpha: float) -> list[cl.Event]:
    """y = alpha * y at every element y_desc addresses (MIOpen's ScaleTensor)."""
    plan = memo_plan(_checked(handle), ("tensor_ops.scale_tensor", y_desc),
                     lambda: unary_plan(handle, "scale_tensor", y_desc))
    return plan.run_values((y,), scalars={"value": scalar(alpha, "alpha")})


def transform_tensor(handle: Handle, alpha: float, x_desc: TensorDesc, x, beta: float, y_desc: TensorDesc,
                     y) -> list[cl.Event]:
    """y = alpha * x + beta * y between two layouts (strides) of the same dims (MIOpen's TransformTensor):
    NCHW to NHWC, packed to padded, ... y is not read when beta is 0."""
    plan = transform_tensor_plan(handle, x_desc, y_desc)
    return plan.run_values((x, y), scalars={"alpha": scalar(alpha, "alpha"), "beta": scalar(beta, "beta")})


def op_tensor_plan(handle: Handle, tensor_op, a_desc: TensorDesc, b_desc: TensorDesc, c_desc: TensorDesc) -> Plan:
    """The memoised plan of one OpTensor call shape (operands a, b, c; numbers alpha1, alpha2, beta)."""
    return memo_plan(_checked(handle), ("tensor_ops.op_tensor", tensor_op, a_desc, b_desc, c_desc),
                     lambda: _op_plan(handle, tensor_op, a_desc, b_desc, c_desc), (tensor_op,))


def transform_tensor_plan(handle: Handle, x_desc: TensorDesc, y_desc: TensorDesc) -> Plan:
    """The memoised plan of one TransformTensor call shape (operands x, y; numbers alpha, beta): a flat copy
    where both share a dense layout, a tiled transpose where their contiguous axes differ, else strided."""
    return memo_plan(_checked(handle), ("tensor_ops.transform_tensor", x_desc, y_desc),
                     lambda: _transform_plan(handle, x_desc, y_desc))


# -- building (the cold path) ---------------------------------------------------------------------------------
def _op_plan(handle: Handle, tensor_op, a_desc, b_desc, c_desc) -> Plan:
    problem = TensorOpProblem.create(tensor_op, a_desc, b_desc, c_desc)
    alias = [("a", "c")] if a_desc == c_desc else []
    alias += [("b", "c")] if b_desc == c_desc else []
    return immediate_plan(handle, problem, operands(problem.tensors(), problem.outputs()), may_alias=alias)


def unary_plan(handle: Handle, kernel: str, y_desc: TensorDesc) -> Plan:
    """The plan of SetTensor ("set_tensor") or ScaleTensor ("scale_tensor") on y_desc (operand y, number
    value)."""
    check_data("y_desc", y_desc)
    if is_dense(y_desc):   # any dense layout: the elements' order does not matter
        launch, solver_id = flat_launch(kernel.replace("_tensor", "_flat"), y_desc, ("y", "value")), f"{kernel}_flat"
    else:
        launch, solver_id = _launch(kernel, y_desc, {"Y": y_desc}, ("y", "value")), kernel
    return Plan(handle, Solution(solver_id, {}, (launch,)), (Operand("y", "y", y_desc, written=True),))


def _transform_plan(handle: Handle, x_desc: TensorDesc, y_desc: TensorDesc) -> Plan:
    check_data("x_desc", x_desc)
    check_data("y_desc", y_desc, x_desc, "x_desc")
    args = ("x", "y", "alpha", "beta")
    axes = tiled_axes(x_desc, y_desc)
    if x_desc.strides == y_desc.strides and is_dense(x_desc):
        launch, solver_id = flat_launch("transform_flat", x_desc, args), "TransformTensorFlat"
    elif axes is not None:
        launch, solver_id = tiled_launch(x_desc, axes, args), "TransformTensorTiled"
    else:
        launch, solver_id = _launch("transform_tensor", x_desc, {"X": x_desc, "Y": y_desc}, args), "TransformTensor"
    ops = (Operand("x", "x", x_desc), Operand("y", "y", y_desc, written=True))
    return Plan(handle, Solution(solver_id, {}, (launch,)), ops,
                may_alias=[("x", "y")] if x_desc == y_desc else [])


def _launch(kernel: str, desc: TensorDesc, tensors: dict[str, TensorDesc], args: tuple) -> KernelLaunch:
    reason = index_reason(*(t.element_span for t in tensors.values()))
    if reason is not None:   # tensor_ops.cl's element offsets and work-item ids are 32-bit ints
        raise NotSupported(f"{kernel}: {reason}")
    spec = KernelSpec.make("tensor_ops.cl", kernel, {**pointwise_defines(desc.dims, tensors), **desc.dtype.defines})
    return KernelLaunch(spec, (round_up(math.prod(desc.dims), WG),), (WG,), args)


def _checked(handle) -> Handle:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    return handle
