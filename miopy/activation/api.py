"""Standalone activation ops (MIOpen's ActivationForward / ActivationBackward) on plans.

The device formulas live in one OpenCL snippet, ``kernels/activation.h``, shared by these kernels and by
the fused epilogue of fusion plans. alpha, beta and gamma are kernel arguments: only the mode is compiled
in, so new values never recompile.
"""
from __future__ import annotations

import pyopencl as cl

from ..errors import check
from ..handle import Handle
from ..plan import Operand, Plan, memo_plan
from ..pointwise import check_same_dims, pointwise_launch, scalar
from ..solver import Solution
from ..tensor import TensorDesc
from .descriptor import ActivationMode

SCALARS = ("activ_alpha", "activ_beta", "activ_gamma")


def activation_forward(handle: Handle, mode, alpha: float, beta: float, gamma: float, x_desc: TensorDesc, x,
                       y_desc: TensorDesc, y) -> list[cl.Event]:
    """y = f(x) element-wise (MIOpen's ActivationForward); x and y may be the same buffer."""
    plan = memo_plan(handle, ("activation_forward", mode, x_desc, y_desc),
                     lambda: _forward_plan(handle, mode, x_desc, y_desc), (mode,))
    return plan.run_values((x, y), scalars=_scalars(alpha, beta, gamma))


def activation_backward(handle: Handle, mode, alpha: float, beta: float, gamma: float, y_desc: TensorDesc, y,
                        dy_desc: TensorDesc, dy, x_desc: TensorDesc, x, dx_desc: TensorDesc, dx) -> list[cl.Event]:
    """dx = dy * f'(x) element-wise from y = f(x), dy and x (MIOpen's ActivationBackward, same argument order)."""
    plan = memo_plan(handle, ("activation_backward", mode, y_desc, dy_desc, x_desc, dx_desc),
                     lambda: _backward_plan(handle, mode, y_desc, dy_desc, x_desc, dx_desc), (mode,))
    return plan.run_values((dx, dy, x, y), scalars=_scalars(alpha, beta, gamma))


def _forward_plan(handle: Handle, mode, x_desc: TensorDesc, y_desc: TensorDesc) -> Plan:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    mode = ActivationMode.of(mode)
    check_same_dims("x_desc", x_desc, {"y_desc": y_desc})
    launch = pointwise_launch("activation.cl", "activation_fwd", {"X": x_desc, "Y": y_desc},
                              {"ACTIV_MODE": int(mode)}, ("x", "y", *SCALARS))
    ops = (Operand("x", "x", x_desc), Operand("y", "y", y_desc, written=True))
    alias = [("x", "y")] if x_desc == y_desc else []
    return Plan(handle, Solution("ActivationForward", {}, (launch,)), ops, may_alias=alias)


def _backward_plan(handle: Handle, mode, y_desc: TensorDesc, dy_desc: TensorDesc, x_desc: TensorDesc,
                   dx_desc: TensorDesc) -> Plan:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    mode = ActivationMode.of(mode)
    check_same_dims("x_desc", x_desc, {"y_desc": y_desc, "dy_desc": dy_desc, "dx_desc": dx_desc})
    tensors = {"X": x_desc, "Y": y_desc, "DY": dy_desc, "DX": dx_desc}
    launch = pointwise_launch("activation.cl", "activation_bwd", tensors, {"ACTIV_MODE": int(mode)},
                              ("dx", "dy", "x", "y", *SCALARS))
    ops = (Operand("dx", "dx", dx_desc, written=True), Operand("dy", "dy", dy_desc), Operand("x", "x", x_desc),
           Operand("y", "y", y_desc))
    alias = [("dx", role) for role, desc in (("dy", dy_desc), ("x", x_desc), ("y", y_desc)) if desc == dx_desc]
    return Plan(handle, Solution("ActivationBackward", {}, (launch,)), ops, may_alias=alias)


def _scalars(alpha, beta, gamma) -> dict:
    return {"activ_alpha": scalar(alpha, "alpha"), "activ_beta": scalar(beta, "beta"),
            "activ_gamma": scalar(gamma, "gamma")}
