"""The toy family's descriptor API (MIOpen's shape: handle, descriptor, then descriptor / buffer pairs)."""
from __future__ import annotations

import pyopencl as cl

from miopy.errors import check
from miopy.find import immediate_plan
from miopy.handle import Handle
from miopy.plan import Operand, Plan, memo_plan
from miopy.pointwise import scalar
from miopy.tensor import TensorDesc

from .descriptor import SquareDesc
from .problem import Direction, SquareProblem
from .registry import REGISTRY  # creating the registry sets SquareProblem.registry

__all__ = ["REGISTRY", "forward_plan", "square_backward", "square_forward"]


def square_forward(handle: Handle, desc: SquareDesc, x_desc: TensorDesc, x, y_desc: TensorDesc, y) -> list[cl.Event]:
    """y = desc.scale * x^2."""
    plan = memo_plan(handle, ("toy.forward", x_desc, y_desc), lambda: forward_plan(handle, x_desc, y_desc))
    return plan.run_values((x, y), scalars={"scale": scalar(desc.scale, "scale")})


def square_backward(handle: Handle, desc: SquareDesc, x_desc: TensorDesc, x, dy_desc: TensorDesc, dy,
                    dx_desc: TensorDesc, dx) -> list[cl.Event]:
    """dx = 2 * desc.scale * x * dy."""
    plan = memo_plan(handle, ("toy.backward", x_desc, dy_desc, dx_desc),
                     lambda: backward_plan(handle, x_desc, dy_desc, dx_desc))
    return plan.run_values((dx, dy, x), scalars={"scale": scalar(desc.scale, "scale")})


def forward_plan(handle: Handle, x_desc: TensorDesc, y_desc: TensorDesc) -> Plan:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    problem = SquareProblem.create(Direction.FORWARD, x=x_desc, y=y_desc)
    return immediate_plan(handle, problem, (Operand("x", "x", x_desc), Operand("y", "y", y_desc, written=True)))


def backward_plan(handle: Handle, x_desc: TensorDesc, dy_desc: TensorDesc, dx_desc: TensorDesc) -> Plan:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    problem = SquareProblem.create(Direction.BACKWARD, dx=dx_desc, dy=dy_desc, x=x_desc)
    ops = (Operand("dx", "dx", dx_desc, written=True), Operand("dy", "dy", dy_desc), Operand("x", "x", x_desc))
    return immediate_plan(handle, problem, ops)
