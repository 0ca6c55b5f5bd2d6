"""Standalone activation ops (MIOpen's ActivationForward / ActivationBackward) on plans.

The first call with new descriptors validates them, picks a solver (immediate mode: the find DB's choice,
else the registry's) and builds the plan; a warm call is a memo lookup, cheap buffer checks and the enqueue.
alpha, beta and gamma are kernel arguments: only the mode is compiled in, so new values never recompile.
"""
from __future__ import annotations

import pyopencl as cl

from ..errors import check
from ..find import immediate_plan
from ..handle import Handle
from ..plan import Operand, Plan, memo_plan
from ..pointwise import scalar
from ..tensor import TensorDesc
from .descriptor import ActivationMode
from .problem import SCALAR_ROLES, ActivationProblem, Direction
from .registry import REGISTRY

__all__ = ["REGISTRY", "activation_backward", "activation_forward", "backward_plan", "forward_plan"]


def activation_forward(handle: Handle, mode, alpha: float, beta: float, gamma: float, x_desc: TensorDesc, x,
                       y_desc: TensorDesc, y) -> list[cl.Event]:
    """y = f(x) element-wise (MIOpen's ActivationForward); x and y may be the same buffer."""
    plan = memo_plan(handle, ("activation.forward", mode, x_desc, y_desc),
                     lambda: forward_plan(handle, mode, x_desc, y_desc), (mode,))
    return plan.run_values((x, y), scalars=activation_scalars(alpha, beta, gamma))


def activation_backward(handle: Handle, mode, alpha: float, beta: float, gamma: float, y_desc: TensorDesc, y,
                        dy_desc: TensorDesc, dy, x_desc: TensorDesc, x, dx_desc: TensorDesc, dx) -> list[cl.Event]:
    """dx = dy * f'(x) element-wise from y = f(x), dy and x (MIOpen's ActivationBackward, same argument order)."""
    plan = memo_plan(handle, ("activation.backward", mode, y_desc, dy_desc, x_desc, dx_desc),
                     lambda: backward_plan(handle, mode, y_desc, dy_desc, x_desc, dx_desc), (mode,))
    return plan.run_values((dx, dy, x, y), scalars=activation_scalars(alpha, beta, gamma))


def forward_plan(handle: Handle, mode: ActivationMode | int | str, x_desc: TensorDesc, y_desc: TensorDesc) -> Plan:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    problem = ActivationProblem.create(Direction.FORWARD, mode, x=x_desc, y=y_desc)
    ops = (Operand("x", "x", x_desc), Operand("y", "y", y_desc, written=True))
    return immediate_plan(handle, problem, ops, may_alias=[("x", "y")] if x_desc == y_desc else [])


def backward_plan(handle: Handle, mode: ActivationMode | int | str, y_desc: TensorDesc, dy_desc: TensorDesc,
                  x_desc: TensorDesc, dx_desc: TensorDesc) -> Plan:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    problem = ActivationProblem.create(Direction.BACKWARD, mode, dx=dx_desc, dy=dy_desc, x=x_desc, y=y_desc)
    ops = (Operand("dx", "dx", dx_desc, written=True), Operand("dy", "dy", dy_desc), Operand("x", "x", x_desc),
           Operand("y", "y", y_desc))
    alias = [("dx", role) for role, desc in (("dy", dy_desc), ("x", x_desc), ("y", y_desc)) if desc == dx_desc]
    return immediate_plan(handle, problem, ops, may_alias=alias)


def activation_scalars(alpha, beta, gamma, names: tuple[str, str, str] = ("alpha", "beta", "gamma")) -> dict:
    """The kernels' per-call arguments from alpha, beta, gamma (finite numbers; else BadParam naming them by
    names: the caller's own argument names)."""
    return dict(zip(SCALAR_ROLES, (scalar(value, name) for value, name in zip((alpha, beta, gamma), names))))
