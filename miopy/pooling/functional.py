"""PyTorch-style functional pooling on pyopencl arrays (max_pool2d, avg_pool2d, adaptive_avg_pool2d to 1x1)
and their backwards, on memoised plans; outputs come from the handle's memory pool.

Semantics are torch.nn.functional's: stride defaults to kernel_size; padding is an int, (pad_h, pad_w) or
per-side (top, bottom, left, right); ceil_mode and count_include_pad as PyTorch. max_pool2d's indices
(return_indices=True) are int32 flat offsets h * W + w into each input plane (PyTorch's are int64);
max_pool2d_backward takes them back.
"""
from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array

from ..errors import NotSupported, check
from ..handle import Handle, functional_handle
from ..plan import array_desc, memo_plan
from ..tensor import as_flag, as_int, int_tuple
from .api import PoolingCall, backward_call, forward_call
from .descriptor import PoolingDesc, PoolingMode

__all__ = ["adaptive_avg_pool2d", "adaptive_avg_pool2d_backward", "avg_pool2d", "avg_pool2d_backward",
           "max_pool2d", "max_pool2d_backward"]


def max_pool2d(x: cl_array.Array, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               return_indices: bool = False, handle: Handle | None = None):
    """Max pooling; returns y, or (y, indices) with return_indices (what max_pool2d_backward needs)."""
    geometry = (PoolingMode.MAX, kernel_size, stride, padding, as_flag(ceil_mode, "ceil_mode"))
    return_indices = as_flag(return_indices, "return_indices")
    call, shape, handle = _forward(x, handle, geometry, return_indices)
    y = handle.pooled(shape, x.dtype)
    if not return_indices:
        call.run((x, y), 1.0, 0.0, None)
        return y
    indices = handle.pooled(shape, np.dtype(np.int32))
    call.run((x, y), 1.0, 0.0, indices)
    return y, indices


def max_pool2d_backward(dy: cl_array.Array, x: cl_array.Array, indices: cl_array.Array, kernel_size, stride=None,
                        padding=0, ceil_mode: bool = False, handle: Handle | None = None) -> cl_array.Array:
    """dx of max_pool2d from dy and the indices max_pool2d(return_indices=True) gave."""
    geometry = (PoolingMode.MAX, kernel_size, stride, padding, as_flag(ceil_mode, "ceil_mode"))
    return _backward(dy, x, handle, geometry, indices)


def avg_pool2d(x: cl_array.Array, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, handle: Handle | None = None) -> cl_array.Array:
    """Average pooling; count_include_pad counts padding in the divisor (PyTorch's default)."""
    call, shape, handle = _forward(x, handle, (_avg_mode(count_include_pad), kernel_size, stride, padding,
                                               as_flag(ceil_mode, "ceil_mode")), False)
    y = handle.pooled(shape, x.dtype)
    call.run((x, y), 1.0, 0.0, None)
    return y


def avg_pool2d_backward(dy: cl_array.Array, x: cl_array.Array, kernel_size, stride=None, padding=0,
                        ceil_mode: bool = False, count_include_pad: bool = True,
                        handle: Handle | None = None) -> cl_array.Array:
    """dx of avg_pool2d from dy (x gives the input's shape and dtype)."""
    geometry = (_avg_mode(count_include_pad), kernel_size, stride, padding, as_flag(ceil_mode, "ceil_mode"))
    return _backward(dy, x, handle, geometry, None)


def adaptive_avg_pool2d(x: cl_array.Array, output_size=1, handle: Handle | None = None) -> cl_array.Array:
    """The mean of each (n, c) plane, N x C x 1 x 1 (output_size 1 or (1, 1) only)."""
    return avg_pool2d(x, _global_window(x, output_size), handle=handle)


def adaptive_avg_pool2d_backward(dy: cl_array.Array, x: cl_array.Array, handle: Handle | None = None
                                 ) -> cl_array.Array:
    """dx of adaptive_avg_pool2d (to 1x1): dy spread evenly over each plane."""
    return avg_pool2d_backward(dy, x, _global_window(x, 1), handle=handle)


# -- the memo -----------------------------------------------------------------------------------------------
def _forward(x, handle: Handle | None, geometry: tuple, with_indices: bool) -> tuple[PoolingCall, tuple, Handle]:
    handle = functional_handle(x, "x", handle)
    key = ("pooling.pool2d", x.shape, x.dtype, geometry, with_indices)
    call, shape = memo_plan(handle, key, lambda: _cold_forward(handle, x, geometry, with_indices), geometry[1:4])
    return call, shape, handle


def _cold_forward(handle: Handle, x, geometry: tuple, with_indices: bool) -> tuple[PoolingCall, tuple]:
    x_desc = array_desc(x, "x")
    desc = _desc(geometry)
    y_desc = desc.output_desc(x_desc)
    return forward_call(handle, desc, x_desc, y_desc, with_indices and desc.is_max), y_desc.dims


def _backward(dy, x, handle: Handle | None, geometry: tuple, indices) -> cl_array.Array:
    handle = functional_handle(x, "x", handle)
    key = ("pooling.pool2d_backward", x.shape, x.dtype, dy.shape if isinstance(dy, cl_array.Array) else None, geometry)
    call = memo_plan(handle, key, lambda: _cold_backward(handle, dy, x, geometry), geometry[1:4])
    dx = handle.pooled(x.shape, x.dtype)
    call.run((dx, dy), 1.0, 0.0, indices)
    return dx


def _cold_backward(handle: Handle, dy, x, geometry: tuple) -> PoolingCall:
    x_desc, dy_desc = array_desc(x, "x"), array_desc(dy, "dy")
    desc = _desc(geometry)
    y_desc = desc.output_desc(x_desc)
    check(dy_desc.dims == y_desc.dims, "dy", f"shape {dy_desc.dims} != the pooling output {y_desc.dims}")
    return backward_call(handle, desc, y_desc, dy_desc, x_desc, x_desc)


def _desc(geometry: tuple) -> PoolingDesc:
    mode, kernel_size, stride, padding, ceil_mode = geometry
    return PoolingDesc(mode, kernel_size, padding, kernel_size if stride is None else stride, ceil_mode)


def _avg_mode(count_include_pad) -> PoolingMode:
    return PoolingMode.AVERAGE_INCLUSIVE if as_flag(count_include_pad, "count_include_pad") else PoolingMode.AVERAGE


def _global_window(x, output_size) -> tuple[int, int]:
    size = int_tuple(output_size, "output_size") if isinstance(output_size, (tuple, list)) else \
        (as_int(output_size, "output_size"),) * 2
    if size != (1, 1):
        raise NotSupported(f"output_size: adaptive_avg_pool2d supports output 1x1 only, got {output_size!r}")
    shape = array_desc(x, "x").dims
    return shape[2], shape[3]
