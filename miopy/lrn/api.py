"""Local response normalisation (MIOpen's miopenLRNForward / Backward, same argument order) on plans.

The first call with new descriptors validates them and builds the plan; a warm call is a memo lookup,
cheap buffer checks and the enqueue. A forward with do_backward=True saves the scale in the caller's
workspace (lrn_workspace_size bytes); the backward reads it back and refuses a workspace that no such
forward with the same descriptors wrote on this handle (a dict lookup by device address).
"""
from __future__ import annotations

from typing import Any

import pyopencl as cl
import pyopencl.array as cl_array

from ..errors import BadParam, check
from ..find import immediate_plan
from ..handle import Handle
from ..plan import Operand, Plan, memo_plan, saved_by_forward
from ..tensor import TensorDesc, as_flag
from .descriptor import LRNDesc
from .problem import Direction, LRNProblem
from .registry import REGISTRY  # creating the registry sets LRNProblem.registry

__all__ = ["REGISTRY", "LRNCall", "backward_call", "forward_call", "lrn_backward", "lrn_forward",
           "lrn_workspace_size"]


def lrn_workspace_size(y_desc: TensorDesc) -> int:
    """Bytes of the scale a forward with do_backward saves (miopenLRNGetWorkSpaceSize)."""
    check(isinstance(y_desc, TensorDesc), "y_desc", "must be a TensorDesc")
    return y_desc.element_count * y_desc.dtype.itemsize


def lrn_forward(handle: Handle, lrn_desc: LRNDesc, alpha: float, x_desc: TensorDesc, x, beta: float,
                y_desc: TensorDesc, y, do_backward: bool = False, workspace=None) -> list[cl.Event]:
    """y = alpha * lrn(x) + beta * y; with do_backward the scale goes to workspace for lrn_backward."""
    call = memoised_forward(handle, lrn_desc, x_desc, y_desc, as_flag(do_backward, "do_backward"))
    return call.run((x, y, workspace) if call.saves else (x, y), alpha, beta)


def memoised_forward(handle: Handle, lrn_desc: LRNDesc, x_desc: TensorDesc, y_desc: TensorDesc,
                     do_backward: bool) -> LRNCall:
    """The handle's call of one lrn_forward shape, built on the first call."""
    return memo_plan(handle, ("lrn.forward", lrn_desc, x_desc, y_desc, do_backward),
                     lambda: forward_call(handle, lrn_desc, x_desc, y_desc, do_backward))


def lrn_backward(handle: Handle, lrn_desc: LRNDesc, alpha: float, y_desc: TensorDesc, y, dy_desc: TensorDesc, dy,
                 x_desc: TensorDesc, x, beta: float, dx_desc: TensorDesc, dx, workspace=None) -> list[cl.Event]:
    """dx = alpha * (gradient of the input from dy, x and the saved scale) + beta * dx. y is taken for
    MIOpen's signature and not read (y / scale is recomputed from x)."""
    call = memo_plan(handle, ("lrn.backward", lrn_desc, y_desc, dy_desc, x_desc, dx_desc),
                     lambda: backward_call(handle, lrn_desc, y_desc, dy_desc, x_desc, dx_desc))
    return call.run((dx, dy, x, workspace), alpha, beta)


class LRNCall:
    """A built LRN call: its plan and the saved-scale bookkeeping (the workspace is the last operand)."""

    __slots__ = ("plan", "saves", "reads", "signature", "saved", "size", "dtype")

    def __init__(self, handle: Handle, plan: Plan, problem: LRNProblem):
        self.plan = plan
        self.saves = problem.save_scale
        self.reads = problem.direction is Direction.BACKWARD
        self.signature = (problem.desc, problem.shape.dims)
        self.saved: dict[int, Any] = saved_by_forward(handle, "lrn")
        self.size = problem.shape.element_count * problem.dtype.itemsize
        self.dtype = problem.dtype.numpy

    def run(self, values: tuple, alpha: float, beta: float) -> list[cl.Event]:
        if not (self.saves or self.reads):
            return self.plan.run_values(values, alpha, beta)
        workspace = values[-1]
        if workspace is None:
            verb = "saves" if self.saves else "reads"
            raise BadParam("workspace", f"LRN {verb} its scale in a workspace of {self.size} bytes "
                                        "(lrn_workspace_size): pass one")
        if isinstance(workspace, cl_array.Array) and workspace.dtype != self.dtype:   # bytes, as MIOpen sizes it
            workspace = self._bytes(workspace)
            values = values[:-1] + (workspace,)
        ptr = getattr(workspace.base_data if isinstance(workspace, cl_array.Array) else workspace, "int_ptr", None)
        if ptr is None:
            raise BadParam("workspace", f"expected a pyopencl Array or Buffer, got {type(workspace).__name__}")
        if self.reads and self.saved.get(ptr) != self.signature:
            raise BadParam("workspace", "holds no scale saved by an LRN forward with do_backward=True and these "
                                        "descriptors on this handle: run that forward first")
        events = self.plan.run_values(values, alpha, beta)
        if self.saves:
            self.saved[ptr] = self.signature
        return events

    def _bytes(self, workspace: cl_array.Array) -> cl.Buffer:
        """The buffer of a workspace given as an array of another dtype (uint8: lrn_workspace_size bytes)."""
        check(workspace.flags.c_contiguous and workspace.offset == 0, "workspace",
              "must be a C-contiguous array starting at its buffer's first byte")
        check(workspace.nbytes >= self.size, "workspace",
              f"holds {workspace.nbytes} bytes, the scale needs {self.size}")
        return workspace.base_data  # type: ignore[return-value]


def forward_call(handle: Handle, lrn_desc, x_desc, y_desc, do_backward: bool) -> LRNCall:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    problem = LRNProblem.create(Direction.FORWARD, lrn_desc, do_backward, x=x_desc, y=y_desc)
    ops = [Operand("x", "x", x_desc), Operand("y", "y", y_desc, written=True)]
    if do_backward:
        ops.append(Operand("scale", "workspace", problem.tensors()["scale"], written=True))
    return LRNCall(handle, immediate_plan(handle, problem, ops, output="y"), problem)


def backward_call(handle: Handle, lrn_desc, y_desc, dy_desc, x_desc, dx_desc) -> LRNCall:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    LRNProblem.create(Direction.FORWARD, lrn_desc, x=x_desc, y=y_desc)   # x_desc and y_desc agree
    problem = LRNProblem.create(Direction.BACKWARD, lrn_desc, x=x_desc, dy=dy_desc, dx=dx_desc)
    ops = [Operand("dx", "dx", dx_desc, written=True), Operand("dy", "dy", dy_desc), Operand("x", "x", x_desc),
           Operand("scale", "workspace", problem.tensors()["scale"])]
    return LRNCall(handle, immediate_plan(handle, problem, ops, output="dx"), problem)
