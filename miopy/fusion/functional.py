"""PyTorch-style fused convolution on pyopencl arrays: activation(conv2d(x, w) + bias), one kernel where a
solver fuses it, on a memoised fusion plan; outputs come from the handle's memory pool."""
from __future__ import annotations

import pyopencl.array as cl_array

from ..activation import ActivationMode
from ..activation.api import activation_scalars
from ..conv.descriptor import ConvDesc
from ..errors import check
from ..handle import Handle, functional_handle
from ..plan import Plan, array_desc, memo_plan
from ..tensor import TensorDesc
from .api import fused_plan

__all__ = ["conv2d_bias_activation"]


def conv2d_bias_activation(x: cl_array.Array, w: cl_array.Array, bias: cl_array.Array, activation="relu",
                           stride=1, padding=0, dilation=1, groups: int = 1, alpha: float = 1.0, beta: float = 0.0,
                           gamma: float = 1.0, handle: Handle | None = None) -> cl_array.Array:
    """activation(conv2d(x, w, bias)) (alpha, beta, gamma: the activation's) in one fused kernel; bias has one
    value per output channel."""
    handle = functional_handle(x, "x", handle)
    mode = ActivationMode.of(activation, "activation")
    key = ("fusion.functional", x.shape, x.dtype, getattr(w, "shape", None), mode, (stride, padding, dilation, groups))
    plan, shape = memo_plan(handle, key, lambda: _cold(handle, x, w, mode, stride, padding, dilation, groups),
                            (stride, padding, dilation, groups))
    y = handle.pooled(shape, x.dtype)
    plan.run_values((x, y, w, bias), scalars=activation_scalars(alpha, beta, gamma))
    return y


def _cold(handle: Handle, x, w, mode: ActivationMode, stride, padding, dilation, groups) -> tuple[Plan, tuple]:
    x_desc, w_desc = array_desc(x, "x"), array_desc(w, "w")
    conv = ConvDesc(padding, stride, dilation, groups)
    y_desc = conv.output_desc(x_desc, w_desc)
    check(x_desc.dtype == w_desc.dtype, "w", f"dtype {w_desc.dtype.value} != x's {x_desc.dtype.value}")
    bias_desc = TensorDesc(x_desc.dtype, (1, y_desc.c, 1, 1))
    return fused_plan(handle, x_desc, w_desc, conv, bias_desc, mode, y_desc), y_desc.dims
