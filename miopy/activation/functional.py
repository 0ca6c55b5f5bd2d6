"""PyTorch-style activations (torch.nn.functional's names) on pyopencl arrays of any shape, on memoised plans;
outputs come from the handle's memory pool. Each maps onto one of MIOpen's modes with its alpha / beta / gamma."""
from __future__ import annotations

import pyopencl.array as cl_array

from ..errors import check
from ..handle import Handle, functional_handle
from ..plan import Plan, memo_plan
from ..tensor import TensorDesc
from .api import activation_scalars, forward_plan
from .descriptor import ActivationMode

__all__ = ["elu", "hardswish", "hardtanh", "leaky_relu", "relu", "relu6", "sigmoid", "softplus", "tanh"]


def relu(x: cl_array.Array, handle: Handle | None = None) -> cl_array.Array:
    """max(0, x)."""
    return _forward(x, ActivationMode.RELU, 0.0, 0.0, 0.0, handle)


def relu6(x: cl_array.Array, handle: Handle | None = None) -> cl_array.Array:
    """min(6, max(0, x))."""
    return _forward(x, ActivationMode.CLIPPED_RELU, 6.0, 0.0, 0.0, handle)


def leaky_relu(x: cl_array.Array, negative_slope: float = 0.01, handle: Handle | None = None) -> cl_array.Array:
    """x where x > 0, else negative_slope * x."""
    return _forward(x, ActivationMode.LEAKY_RELU, negative_slope, 0.0, 0.0, handle, ("negative_slope", "", ""))


def elu(x: cl_array.Array, alpha: float = 1.0, handle: Handle | None = None) -> cl_array.Array:
    """x where x > 0, else alpha * (e^x - 1)."""
    return _forward(x, ActivationMode.ELU, alpha, 0.0, 0.0, handle)


def sigmoid(x: cl_array.Array, handle: Handle | None = None) -> cl_array.Array:
    """1 / (1 + e^-x)."""
    return _forward(x, ActivationMode.LOGISTIC, 0.0, 0.0, 0.0, handle)


def tanh(x: cl_array.Array, handle: Handle | None = None) -> cl_array.Array:
    """tanh(x)."""
    return _forward(x, ActivationMode.TANH, 1.0, 1.0, 0.0, handle)


def softplus(x: cl_array.Array, handle: Handle | None = None) -> cl_array.Array:
    """log(1 + e^x) (PyTorch's softplus with beta 1; its threshold only saves time)."""
    return _forward(x, ActivationMode.SOFTRELU, 0.0, 0.0, 0.0, handle)


def hardswish(x: cl_array.Array, handle: Handle | None = None) -> cl_array.Array:
    """x * min(1, max(0, x / 6 + 1 / 2))."""
    return _forward(x, ActivationMode.HARDSWISH, 1.0 / 6.0, 0.5, 0.0, handle)


def hardtanh(x: cl_array.Array, min_val: float = -1.0, max_val: float = 1.0,
             handle: Handle | None = None) -> cl_array.Array:
    """min(max_val, max(min_val, x))."""
    return _forward(x, ActivationMode.CLAMP, max_val, min_val, 0.0, handle, ("max_val", "min_val", ""))


def _forward(x, mode: ActivationMode, alpha: float, beta: float, gamma: float, handle: Handle | None,
             names: tuple[str, str, str] = ("alpha", "beta", "gamma")) -> cl_array.Array:
    """The mode with alpha, beta, gamma (named in errors by names: the caller's own argument names)."""
    handle = functional_handle(x, "x", handle)
    if x.size == 0:
        return handle.pooled(x.shape, x.dtype)
    plan = memo_plan(handle, ("activation.functional", x.shape, x.dtype, mode), lambda: _cold(handle, x, mode))
    y = handle.pooled(x.shape, x.dtype)
    plan.run_values((x, y), scalars=activation_scalars(alpha, beta, gamma, names))
    return y


def _cold(handle: Handle, x: cl_array.Array, mode: ActivationMode) -> Plan:
    check(x.flags.c_contiguous, "x", "must be C-contiguous")
    desc = TensorDesc(x.dtype, (1, 1, 1, max(x.size, 1)))   # element-wise: any shape is one row
    return forward_plan(handle, mode, desc, desc)
