"""PyTorch-style functional convolution on pyopencl arrays, running on memoised plans.

The memo key is the call's shapes, dtypes and geometry as given (no descriptor is built on a warm call);
outputs come from the handle's memory pool, so a warm call allocates no device memory.
"""
from __future__ import annotations

import pyopencl.array as cl_array

from ..errors import check
from ..handle import Handle, functional_handle
from ..plan import Plan, array_desc
from ..tensor import holds_bool
from .api import convolution_plan
from .descriptor import ConvDesc
from .problem import Direction

__all__ = ["conv2d", "conv_transpose2d"]


def conv2d(x: cl_array.Array, w: cl_array.Array, stride=1, padding=0, dilation=1, groups: int = 1,
           handle: Handle | None = None) -> cl_array.Array:
    """PyTorch-style conv2d on pyopencl arrays (no bias). Finds once per problem, then reuses the answer."""
    return _call(x, w, handle, (stride, padding, dilation, groups, "conv", 0))


def conv_transpose2d(x: cl_array.Array, w: cl_array.Array, stride=1, padding=0, output_padding=0,
                     groups: int = 1, dilation=1, handle: Handle | None = None) -> cl_array.Array:
    """PyTorch-style conv_transpose2d on pyopencl arrays (no bias); w is (C_in, C_out/groups, R, S)."""
    return _call(x, w, handle, (stride, padding, dilation, groups, "transpose", output_padding))


def _call(x, w, handle: Handle | None, geometry: tuple) -> cl_array.Array:
    handle = functional_handle(x, "x", handle)
    try:
        key = ("conv.conv2d", x.shape, x.dtype, w.shape, w.dtype, geometry, handle.math_mode)
        memo = None if holds_bool(geometry) else handle.plans.get(key)   # True would find stride 1's plan
    except (AttributeError, TypeError):   # not arrays, or unhashable geometry (lists): the cold path says which
        key, memo = None, None
    if memo is None:
        memo = _cold(handle, x, w, geometry)
        if key is not None:
            handle.plans.put(key, memo)
    plan, shape = memo
    y = handle.pooled(shape, x.dtype)
    plan.run_values((x, w, y))
    return y


def _cold(handle: Handle, x, w, geometry: tuple) -> tuple[Plan, tuple[int, ...]]:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    x_desc, w_desc = array_desc(x, "x"), array_desc(w, "w")
    stride, padding, dilation, groups, mode, output_padding = geometry
    conv = ConvDesc(padding, stride, dilation, groups, mode, output_padding)
    y_desc = conv.output_desc(x_desc, w_desc)
    return convolution_plan(handle, Direction.FORWARD, x_desc, w_desc, conv, y_desc), y_desc.dims

