"""PyTorch-style local_response_norm (cross-channel, PyTorch's window: size // 2 channels before) on
pyopencl arrays, and its backward, on memoised plans; outputs come from the handle's memory pool."""
from __future__ import annotations

import pyopencl.array as cl_array

from ..errors import check
from ..handle import Handle, functional_handle
from ..plan import array_desc, memo_plan
from ..tensor import as_flag
from .api import LRNCall, backward_call, forward_call
from .descriptor import LRNDesc, LRNMode

__all__ = ["local_response_norm", "local_response_norm_backward"]


def local_response_norm(x: cl_array.Array, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0,
                        return_scale: bool = False, handle: Handle | None = None):
    """x / (k + alpha / size * sum of x^2 over size neighbouring channels)^beta, as
    torch.nn.functional.local_response_norm; with return_scale, (y, scale) for the backward."""
    handle = functional_handle(x, "x", handle)
    geometry = (size, alpha, beta, k)
    return_scale = as_flag(return_scale, "return_scale")
    call = memo_plan(handle, ("lrn.functional", x.shape, x.dtype, geometry, return_scale),
                     lambda: _cold_forward(handle, x, geometry, return_scale), geometry)
    y = handle.pooled(x.shape, x.dtype)
    if not call.saves:
        call.run((x, y), 1.0, 0.0)
        return y
    scale = handle.pooled(x.shape, x.dtype)
    call.run((x, y, scale), 1.0, 0.0)
    return y, scale


def local_response_norm_backward(dy: cl_array.Array, x: cl_array.Array, scale: cl_array.Array, size: int,
                                 alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0,
                                 handle: Handle | None = None) -> cl_array.Array:
    """dx of local_response_norm from dy, x and the scale local_response_norm(return_scale=True) gave."""
    handle = functional_handle(x, "x", handle)
    geometry = (size, alpha, beta, k)
    key = ("lrn.functional_backward", x.shape, x.dtype, getattr(dy, "shape", None), geometry)
    call = memo_plan(handle, key, lambda: _cold_backward(handle, dy, x, geometry), geometry)
    dx = handle.pooled(x.shape, x.dtype)
    call.run((dx, dy, x, scale), 1.0, 0.0)
    return dx


def _desc(geometry: tuple) -> LRNDesc:
    size, alpha, beta, k = geometry
    return LRNDesc(LRNMode.CROSS_CHANNEL, size, alpha, beta, k, pre=size // 2 if isinstance(size, int) else None)


def _cold_forward(handle: Handle, x, geometry: tuple, save: bool) -> LRNCall:
    x_desc = array_desc(x, "x")
    return forward_call(handle, _desc(geometry), x_desc, x_desc, save)


def _cold_backward(handle: Handle, dy, x, geometry: tuple) -> LRNCall:
    x_desc, dy_desc = array_desc(x, "x"), array_desc(dy, "dy")
    check(dy_desc.dims == x_desc.dims, "dy", f"shape {dy_desc.dims} != x shape {x_desc.dims}")
    return backward_call(handle, _desc(geometry), x_desc, dy_desc, x_desc, x_desc)
