"""PyTorch-style softmax / log_softmax over any dim of a 1-D to 4-D pyopencl array, and their backwards
(softmax_backward_data, log_softmax_backward_data: PyTorch's _softmax_backward_data names),
on memoised plans; outputs come from the handle's memory pool.

The softmax axis becomes the descriptor's C and the other axes N, H, W (in order), with the array's own
strides, so channel mode computes any dim without a copy.
"""
from __future__ import annotations

import pyopencl.array as cl_array

from ..errors import BadParam, check
from ..handle import Handle, functional_handle
from ..plan import Plan, memo_plan
from ..tensor import TensorDesc, as_int, packed_strides
from .api import backward_plan, forward_plan
from .descriptor import SoftmaxAlgorithm, SoftmaxDesc, SoftmaxMode

__all__ = ["log_softmax", "log_softmax_backward_data", "softmax", "softmax_backward_data"]


def softmax(x: cl_array.Array, dim: int = 1, handle: Handle | None = None) -> cl_array.Array:
    """exp(x - max) / sum exp(x - max) along dim (torch.nn.functional.softmax)."""
    return _forward(x, dim, SoftmaxAlgorithm.ACCURATE, handle)


def log_softmax(x: cl_array.Array, dim: int = 1, handle: Handle | None = None) -> cl_array.Array:
    """x - max - log(sum exp(x - max)) along dim (torch.nn.functional.log_softmax)."""
    return _forward(x, dim, SoftmaxAlgorithm.LOG, handle)


def softmax_backward_data(dy: cl_array.Array, y: cl_array.Array, dim: int = 1, handle: Handle | None = None
                          ) -> cl_array.Array:
    """dx of softmax from dy and softmax's output y (PyTorch's _softmax_backward_data)."""
    return _backward(dy, y, dim, SoftmaxAlgorithm.ACCURATE, handle)


def log_softmax_backward_data(dy: cl_array.Array, y: cl_array.Array, dim: int = 1, handle: Handle | None = None
                              ) -> cl_array.Array:
    """dx of log_softmax from dy and log_softmax's output y (PyTorch's _log_softmax_backward_data)."""
    return _backward(dy, y, dim, SoftmaxAlgorithm.LOG, handle)


def _forward(x, dim, algorithm: SoftmaxAlgorithm, handle: Handle | None) -> cl_array.Array:
    handle = functional_handle(x, "x", handle)
    plan = memo_plan(handle, ("softmax.functional", x.shape, x.dtype, dim, algorithm),
                     lambda: _cold_forward(handle, x, dim, algorithm), (dim,))
    y = handle.pooled(x.shape, x.dtype)
    plan.run_values((x, y))
    return y


def _backward(dy, y, dim, algorithm: SoftmaxAlgorithm, handle: Handle | None) -> cl_array.Array:
    handle = functional_handle(y, "x", handle)
    key = ("softmax.functional_backward", y.shape, y.dtype, getattr(dy, "shape", None), getattr(dy, "dtype", None), dim,
           algorithm)
    plan = memo_plan(handle, key, lambda: _cold_backward(handle, dy, y, dim, algorithm), (dim,))
    dx = handle.pooled(y.shape, y.dtype)
    plan.run_values((dx, dy, y))
    return dx


def _cold_forward(handle: Handle, x, dim, algorithm: SoftmaxAlgorithm) -> Plan:
    desc = _axis_desc(x, "x", dim)
    return forward_plan(handle, SoftmaxDesc(algorithm, SoftmaxMode.CHANNEL), desc, desc)


def _cold_backward(handle: Handle, dy, y, dim, algorithm: SoftmaxAlgorithm) -> Plan:
    y_desc, dy_desc = _axis_desc(y, "y", dim), _axis_desc(dy, "dy", dim)
    check(dy.shape == y.shape, "dy", f"shape {dy.shape} != y shape {y.shape}")
    return backward_plan(handle, SoftmaxDesc(algorithm, SoftmaxMode.CHANNEL), y_desc, dy_desc, y_desc)


def _axis_desc(array, field: str, dim) -> TensorDesc:
    """A descriptor of the C-contiguous array with axis dim as C and the others as N, H, W."""
    if not isinstance(array, cl_array.Array):
        raise BadParam(field, f"expected a pyopencl Array, got {type(array).__name__}")
    check(1 <= array.ndim <= 4, field, f"expected 1 to 4 dims, got shape {array.shape}")
    check(array.flags.c_contiguous, field, "must be C-contiguous")
    axis = as_int(dim, "dim")
    check(-array.ndim <= axis < array.ndim, "dim", f"{dim} is out of range for {array.ndim} dims")
    axis %= array.ndim
    strides = packed_strides(array.shape)
    others = [a for a in range(array.ndim) if a != axis]
    slots = {1: (0,), 2: (0, 3), 3: (0, 2, 3)}.get(len(others), ())   # N; N, W; N, H, W
    dims, steps = [1, array.shape[axis], 1, 1], [1, strides[axis], 1, 1]
    for slot, a in zip(slots, others):
        dims[slot], steps[slot] = array.shape[a], strides[a]
    return TensorDesc(array.dtype, dims, steps)
