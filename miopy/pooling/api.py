"""The pooling descriptor API (MIOpen's miopenPoolingForward / Backward, same argument order) on plans.

The first call with new descriptors validates them, picks a solver (the find DB's choice, else the first
applicable in registry order) and builds the plan; a warm call is a memo lookup, cheap buffer checks and
the enqueue. Max pooling's forward with do_backward=True saves each output's argmax (int32, h * W + w in
its input plane) in the caller's workspace; the backward reads them back and refuses a workspace that no
such forward with the same descriptors wrote on this handle (a dict lookup by device address).
"""
from __future__ import annotations

from typing import Any

import pyopencl as cl
import pyopencl.array as cl_array

from ..errors import BadParam, check
from ..find import immediate_plan
from ..handle import Handle
from ..plan import Operand, Plan, buffer_of, memo_plan, saved_by_forward
from ..tensor import TensorDesc, as_flag
from .descriptor import INDEX_BYTES, PoolingDesc
from .problem import Direction, PoolingProblem
from .registry import REGISTRY

__all__ = ["REGISTRY", "PoolingCall", "pooling_backward", "pooling_forward", "pooling_output_desc",
           "pooling_workspace_size"]


def pooling_workspace_size(pool_desc: PoolingDesc, y_desc: TensorDesc) -> int:
    """Bytes of the index workspace max pooling saves for the backward (miopenPoolingGetWorkSpaceSizeV2)."""
    check(isinstance(pool_desc, PoolingDesc), "pool_desc", "must be a PoolingDesc")
    return pool_desc.workspace_bytes(y_desc)


def pooling_output_desc(pool_desc: PoolingDesc, x_desc: TensorDesc) -> TensorDesc:
    """The packed output descriptor (miopenGetPoolingForwardOutputDim)."""
    check(isinstance(pool_desc, PoolingDesc), "pool_desc", "must be a PoolingDesc")
    return pool_desc.output_desc(x_desc)


def pooling_forward(handle: Handle, pool_desc: PoolingDesc, alpha: float, x_desc: TensorDesc, x, beta: float,
                    y_desc: TensorDesc, y, do_backward: bool = False, workspace=None) -> list[cl.Event]:
    """y = alpha * pool(x) + beta * y. With do_backward and max pooling, the argmax indices go to
    workspace (pooling_workspace_size bytes) for pooling_backward."""
    do_backward = as_flag(do_backward, "do_backward")
    call = memo_plan(handle, ("pooling.forward", pool_desc, x_desc, y_desc, do_backward),
                     lambda: forward_call(handle, pool_desc, x_desc, y_desc, do_backward))
    return call.run((x, y), alpha, beta, workspace)


def pooling_backward(handle: Handle, pool_desc: PoolingDesc, alpha: float, y_desc: TensorDesc, y,
                     dy_desc: TensorDesc, dy, x_desc: TensorDesc, x, beta: float, dx_desc: TensorDesc, dx,
                     workspace=None) -> list[cl.Event]:
    """dx = alpha * (gradient of the input from dy) + beta * dx. Max pooling needs the workspace its
    forward filled with do_backward=True. y and x are taken for MIOpen's signature and not read."""
    call = memo_plan(handle, ("pooling.backward", pool_desc, y_desc, dy_desc, x_desc, dx_desc),
                     lambda: backward_call(handle, pool_desc, y_desc, dy_desc, x_desc, dx_desc))
    return call.run((dx, dy), alpha, beta, workspace)


class PoolingCall:
    """A built pooling call: its plan, and how it binds the index workspace (max pooling only)."""

    __slots__ = ("plan", "index_bytes", "writes_indices", "signature", "saved")

    def __init__(self, handle: Handle, plan: Plan, problem: PoolingProblem):
        self.plan = plan
        self.index_bytes = problem.y.element_count * INDEX_BYTES if problem.uses_indices else 0
        self.writes_indices = problem.save_indices
        self.signature = (problem.desc, problem.x.dims, problem.y.dims)
        self.saved: dict[int, Any] = saved_by_forward(handle, "pooling")

    def run(self, values: tuple, alpha: float, beta: float, workspace) -> list[cl.Event]:
        if not self.index_bytes:
            return self.plan.run_values(values, alpha, beta)
        indices = self._indices(workspace, values)
        events = self.plan.run_values(values, alpha, beta, scalars={"indices": indices})
        if self.writes_indices:
            self.saved[indices.int_ptr] = self.signature
        return events

    def _indices(self, workspace, values: tuple) -> cl.Buffer:
        """The index workspace's buffer, checked: big enough, not a data buffer, and (backward) filled by a
        forward with these descriptors."""
        if workspace is None:
            need = "saves" if self.writes_indices else "reads"
            raise BadParam("workspace", f"max pooling {need} its indices in a workspace of "
                                        f"{self.index_bytes} bytes (pooling_workspace_size): pass one")
        buf = buffer_of(workspace, "workspace", nbytes=self.index_bytes, context=self.plan.context)
        for value in values:
            other = value.base_data if isinstance(value, cl_array.Array) else value
            if other is buf or getattr(other, "int_ptr", None) == buf.int_ptr:
                raise BadParam("workspace", "is one of the data buffers: pass a separate index workspace")
        if not self.writes_indices and self.saved.get(buf.int_ptr) != self.signature:
            raise BadParam("workspace", "holds no indices saved by a max pooling forward with do_backward=True "
                                        "and these descriptors on this handle: run that forward first")
        return buf


def forward_call(handle: Handle, pool_desc, x_desc, y_desc, do_backward) -> PoolingCall:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    problem = PoolingProblem.create(Direction.FORWARD, pool_desc, x_desc, y_desc, do_backward)
    ops = (Operand("x", "x", problem.x), Operand("y", "y", problem.y, written=True))
    return PoolingCall(handle, immediate_plan(handle, problem, ops, output="y"), problem)


def backward_call(handle: Handle, pool_desc, y_desc, dy_desc, x_desc, dx_desc) -> PoolingCall:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    check(isinstance(y_desc, TensorDesc), "y_desc", "must be a TensorDesc")   # create() would derive a None
    PoolingProblem.create(Direction.FORWARD, pool_desc, x_desc, y_desc)   # x_desc and y_desc agree
    _same("dx_desc", dx_desc, "x_desc", x_desc)
    _same("dy_desc", dy_desc, "y_desc", y_desc)
    problem = PoolingProblem.create(Direction.BACKWARD, pool_desc, dx_desc, dy_desc)
    ops = (Operand("dx", "dx", problem.x, written=True), Operand("dy", "dy", problem.y))
    return PoolingCall(handle, immediate_plan(handle, problem, ops, output="dx"), problem)


def _same(field: str, desc, other_field: str, other: TensorDesc) -> None:
    check(isinstance(desc, TensorDesc), field, "must be a TensorDesc")
    check(desc.dims == other.dims, f"{field}.dims", f"{desc.dims} != {other_field} dims {other.dims}")
    check(desc.dtype is other.dtype, f"{field}.dtype", f"{desc.dtype.value} != {other_field} {other.dtype.value}")
