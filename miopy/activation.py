"""Activation functions as in MIOpen: the mode enum, float64 host formulas, and standalone ops.

The device formulas live in one OpenCL snippet, ``kernels/activation.h``, shared by the standalone
kernels here and by the fused epilogue of fusion plans. alpha, beta and gamma are kernel arguments: only
the mode is compiled in.
"""
from __future__ import annotations

import enum
from typing import Callable

import numpy as np
import pyopencl as cl

from .errors import BadParam, check
from .execute import buffer_of
from .handle import Handle
from .pointwise import check_same_dims, enqueue, pointwise_launch, scalar
from .tensor import TensorDesc

EPSILON = 1e-6                 # power: (alpha + beta * x) at or below this gives 0 (as MIOpen)
SOFTRELU_THRESHOLD = 50.0      # softrelu's derivative clamps x here before exp (as MIOpen)


def enum_member(cls, value, field: str, what: str):
    """The member of an int enum given as a member, its value or its name (any case); else BadParam(field)."""
    if isinstance(value, str) and value.upper() in cls.__members__:
        return cls[value.upper()]
    try:
        return cls(value)
    except ValueError:
        raise BadParam(field, f"unknown {what} {value!r}; known: {[m.name for m in cls]}") from None


class ActivationMode(enum.IntEnum):
    """miopenActivationMode_t: values are MIOpen's."""

    PASSTHRU = 0        # x
    LOGISTIC = 1        # 1 / (1 + e^-x)
    TANH = 2            # beta * tanh(alpha * x)
    RELU = 3            # max(0, x)
    SOFTRELU = 4        # log(1 + e^x)
    ABS = 5             # |x|
    POWER = 6           # (alpha + beta * x)^gamma, 0 where alpha + beta * x <= EPSILON
    CLIPPED_RELU = 7    # min(alpha, max(0, x))
    LEAKY_RELU = 8      # x > 0 ? x : alpha * x
    ELU = 9             # x > 0 ? x : alpha * (e^x - 1)

    @classmethod
    def of(cls, value: "ActivationMode | int | str", field: str = "mode") -> "ActivationMode":
        """Accept a member, its int value or its name (any case); else BadParam(field)."""
        return enum_member(cls, value, field, "activation mode")


# -- float64 host formulas --------------------------------------------------------------------------------
Formula = Callable[[np.ndarray, float, float, float], np.ndarray]


def _power(x, a, b, g):
    arg = a + b * x
    return np.where(arg <= EPSILON, 0.0, np.power(np.maximum(arg, EPSILON), g))


def _power_derivative(x, a, b, g):
    arg = a + b * x
    return np.where(arg <= EPSILON, 0.0, g * b * np.power(np.maximum(arg, EPSILON), g - 1.0))


def _logistic(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


_FORWARD: dict[ActivationMode, Formula] = {
    ActivationMode.PASSTHRU: lambda x, a, b, g: x,
    ActivationMode.LOGISTIC: lambda x, a, b, g: _logistic(x),
    ActivationMode.TANH: lambda x, a, b, g: b * np.tanh(a * x),
    ActivationMode.RELU: lambda x, a, b, g: np.maximum(x, 0.0),
    ActivationMode.SOFTRELU: lambda x, a, b, g: np.logaddexp(0.0, x),
    ActivationMode.ABS: lambda x, a, b, g: np.abs(x),
    ActivationMode.POWER: _power,
    ActivationMode.CLIPPED_RELU: lambda x, a, b, g: np.minimum(a, np.maximum(x, 0.0)),
    ActivationMode.LEAKY_RELU: lambda x, a, b, g: np.where(x > 0, x, a * x),
    ActivationMode.ELU: lambda x, a, b, g: np.where(x > 0, x, a * np.expm1(np.minimum(x, 0.0))),
}

_DERIVATIVE: dict[ActivationMode, Formula] = {
    ActivationMode.PASSTHRU: lambda x, a, b, g: np.ones_like(x),
    ActivationMode.LOGISTIC: lambda x, a, b, g: _logistic(x) * (1.0 - _logistic(x)),
    ActivationMode.TANH: lambda x, a, b, g: a * b * (1.0 - np.tanh(a * x) ** 2),
    ActivationMode.RELU: lambda x, a, b, g: (x > 0).astype(np.float64),
    ActivationMode.SOFTRELU: lambda x, a, b, g: _logistic(np.minimum(x, SOFTRELU_THRESHOLD)),
    ActivationMode.ABS: lambda x, a, b, g: np.where(x > 0, 1.0, -1.0),
    ActivationMode.POWER: _power_derivative,
    ActivationMode.CLIPPED_RELU: lambda x, a, b, g: ((x > 0) & (x <= a)).astype(np.float64),
    ActivationMode.LEAKY_RELU: lambda x, a, b, g: np.where(x > 0, 1.0, a),
    ActivationMode.ELU: lambda x, a, b, g: np.where(x > 0, 1.0, a * np.exp(np.minimum(x, 0.0))),
}


def forward_reference(mode, x, alpha: float = 1.0, beta: float = 1.0, gamma: float = 1.0) -> np.ndarray:
    """y = f(x) in float64."""
    return _FORWARD[ActivationMode.of(mode)](np.asarray(x, np.float64), alpha, beta, gamma)


def derivative_reference(mode, x, alpha: float = 1.0, beta: float = 1.0, gamma: float = 1.0) -> np.ndarray:
    """f'(x) in float64 (the one-sided value MIOpen uses at kinks)."""
    return _DERIVATIVE[ActivationMode.of(mode)](np.asarray(x, np.float64), alpha, beta, gamma)


def backward_reference(mode, dy, x, alpha: float = 1.0, beta: float = 1.0, gamma: float = 1.0) -> np.ndarray:
    """dx = dy * f'(x) in float64."""
    return np.asarray(dy, np.float64) * derivative_reference(mode, x, alpha, beta, gamma)


# -- standalone ops -----------------------------------------------------------------------------------------
def activation_forward(handle: Handle, mode, alpha: float, beta: float, gamma: float, x_desc: TensorDesc, x,
                       y_desc: TensorDesc, y) -> list[cl.Event]:
    """y = f(x) element-wise (MIOpen's ActivationForward); x and y may be the same buffer."""
    mode, scalars = _checked_common(handle, mode, alpha, beta, gamma)
    check_same_dims("x_desc", x_desc, {"y_desc": y_desc})
    buffers = {"x": buffer_of(x, "x", x_desc), "y": buffer_of(y, "y", y_desc), **scalars}
    launch = pointwise_launch("activation.cl", "activation_fwd", {"X": x_desc, "Y": y_desc},
                              {"ACTIV_MODE": int(mode)}, ("x", "y", *scalars))
    return enqueue(handle, launch, buffers)


def activation_backward(handle: Handle, mode, alpha: float, beta: float, gamma: float, y_desc: TensorDesc, y,
                        dy_desc: TensorDesc, dy, x_desc: TensorDesc, x, dx_desc: TensorDesc, dx) -> list[cl.Event]:
    """dx = dy * f'(x) element-wise from y = f(x), dy and x (MIOpen's ActivationBackward, same argument order)."""
    mode, scalars = _checked_common(handle, mode, alpha, beta, gamma)
    check_same_dims("x_desc", x_desc, {"y_desc": y_desc, "dy_desc": dy_desc, "dx_desc": dx_desc})
    buffers = {"dx": buffer_of(dx, "dx", dx_desc), "dy": buffer_of(dy, "dy", dy_desc),
               "x": buffer_of(x, "x", x_desc), "y": buffer_of(y, "y", y_desc), **scalars}
    tensors = {"X": x_desc, "Y": y_desc, "DY": dy_desc, "DX": dx_desc}
    launch = pointwise_launch("activation.cl", "activation_bwd", tensors, {"ACTIV_MODE": int(mode)},
                              ("dx", "dy", "x", "y", *scalars))
    return enqueue(handle, launch, buffers)


def _checked_common(handle: Handle, mode, alpha, beta, gamma) -> tuple[ActivationMode, dict[str, np.float32]]:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    scalars = {name: scalar(value, name) for name, value in (("alpha", alpha), ("beta", beta), ("gamma", gamma))}
    return ActivationMode.of(mode), scalars
