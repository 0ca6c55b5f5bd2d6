"""Softmax and log-softmax (MIOpen's miopenSoftmaxForward_V2 / Backward_V2, same argument order) on plans.

The first call with new descriptors validates them, picks a solver (the find DB's choice, else the
family's ranking) and builds the plan; a warm call is a memo lookup, cheap buffer checks and the enqueue.
x and y may be the same buffer (in place), as may dx and dy (or y) in the backward.
"""
from __future__ import annotations

import pyopencl as cl

from ..errors import check
from ..find import immediate_plan
from ..handle import Handle
from ..plan import Operand, Plan, memo_plan
from ..tensor import TensorDesc
from .descriptor import SoftmaxAlgorithm, SoftmaxDesc, SoftmaxMode
from .problem import Direction, SoftmaxProblem
from .registry import REGISTRY  # creating the registry sets SoftmaxProblem.registry

__all__ = ["REGISTRY", "backward_plan", "forward_plan", "memoised_forward", "softmax_backward", "softmax_forward"]


def softmax_forward(handle: Handle, alpha: float, x_desc: TensorDesc, x, beta: float, y_desc: TensorDesc, y,
                    algorithm=SoftmaxAlgorithm.ACCURATE, mode=SoftmaxMode.CHANNEL) -> list[cl.Event]:
    """y = alpha * softmax(x) + beta * y (log-softmax with algorithm LOG) over the mode's axes."""
    return memoised_forward(handle, algorithm, mode, x_desc, y_desc).run_values((x, y), alpha, beta)


def memoised_forward(handle: Handle, algorithm, mode, x_desc: TensorDesc, y_desc: TensorDesc) -> Plan:
    """The handle's plan of one softmax_forward call shape (operands x, y), built on the first call."""
    return memo_plan(handle, ("softmax.forward", algorithm, mode, x_desc, y_desc),
                     lambda: forward_plan(handle, SoftmaxDesc(algorithm, mode), x_desc, y_desc), (algorithm, mode))


def softmax_backward(handle: Handle, alpha: float, y_desc: TensorDesc, y, dy_desc: TensorDesc, dy, beta: float,
                     dx_desc: TensorDesc, dx, algorithm=SoftmaxAlgorithm.ACCURATE,
                     mode=SoftmaxMode.CHANNEL) -> list[cl.Event]:
    """dx = alpha * (gradient of the input from the forward's output y and dy) + beta * dx."""
    plan = memo_plan(handle, ("softmax.backward", algorithm, mode, y_desc, dy_desc, dx_desc),
                     lambda: backward_plan(handle, SoftmaxDesc(algorithm, mode), y_desc, dy_desc, dx_desc),
                     (algorithm, mode))
    return plan.run_values((dx, dy, y), alpha, beta)


def forward_plan(handle: Handle, desc: SoftmaxDesc, x_desc: TensorDesc, y_desc: TensorDesc) -> Plan:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    problem = SoftmaxProblem.create(Direction.FORWARD, desc, x=x_desc, y=y_desc)
    ops = (Operand("x", "x", x_desc), Operand("y", "y", y_desc, written=True))
    alias = [("x", "y")] if x_desc == y_desc else []
    return immediate_plan(handle, problem, ops, output="y", may_alias=alias)


def backward_plan(handle: Handle, desc: SoftmaxDesc, y_desc: TensorDesc, dy_desc: TensorDesc,
                  dx_desc: TensorDesc) -> Plan:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    problem = SoftmaxProblem.create(Direction.BACKWARD, desc, y=y_desc, dy=dy_desc, dx=dx_desc)
    ops = (Operand("dx", "dx", dx_desc, written=True), Operand("dy", "dy", dy_desc), Operand("y", "y", y_desc))
    alias = [("dx", role) for role, d in (("dy", dy_desc), ("y", y_desc)) if d == dx_desc]
    return immediate_plan(handle, problem, ops, output="dx", may_alias=alias)
