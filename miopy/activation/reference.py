"""Float64 formulas of MIOpen's activation modes (by the modes' int values), forward and derivative."""
from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from .problem import ActivationProblem, Direction

EPSILON = 1e-6                 # power: (alpha + beta * x) at or below this gives 0 (as MIOpen)
SOFTRELU_THRESHOLD = 50.0      # softrelu's derivative clamps x here before exp (as MIOpen)

Formula = Callable[[np.ndarray, float, float, float], np.ndarray]
_NAMES = ("PASSTHRU", "LOGISTIC", "TANH", "RELU", "SOFTRELU", "ABS", "POWER", "CLIPPED_RELU", "LEAKY_RELU", "ELU",
          "HARDSWISH", "CLAMP")


def _mode(mode) -> int:
    """A mode given as miopenActivationMode_t's value or name (any case)."""
    return _NAMES.index(mode.upper()) if isinstance(mode, str) else int(mode)


def _power(x, a, b, g):
    arg = a + b * x
    return np.where(arg <= EPSILON, 0.0, np.power(np.maximum(arg, EPSILON), g))


def _power_derivative(x, a, b, g):
    arg = a + b * x
    return np.where(arg <= EPSILON, 0.0, g * b * np.power(np.maximum(arg, EPSILON), g - 1.0))


def _logistic(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


# Keyed by miopenActivationMode_t: 0 PASSTHRU, 1 LOGISTIC, 2 TANH, 3 RELU, 4 SOFTRELU, 5 ABS, 6 POWER,
# 7 CLIPPED_RELU, 8 LEAKY_RELU, 9 ELU, and miopy's 10 HARDSWISH and 11 CLAMP (see miopy.activation.ActivationMode).
_FORWARD: dict[int, Formula] = {
    0: lambda x, a, b, g: x,
    1: lambda x, a, b, g: _logistic(x),
    2: lambda x, a, b, g: b * np.tanh(a * x),
    3: lambda x, a, b, g: np.maximum(x, 0.0),
    4: lambda x, a, b, g: np.logaddexp(0.0, x),
    5: lambda x, a, b, g: np.abs(x),
    6: _power,
    7: lambda x, a, b, g: np.minimum(a, np.maximum(x, 0.0)),
    8: lambda x, a, b, g: np.where(x > 0, x, a * x),
    9: lambda x, a, b, g: np.where(x > 0, x, a * np.expm1(np.minimum(x, 0.0))),
    10: lambda x, a, b, g: x * np.clip(a * x + b, 0.0, 1.0),
    11: lambda x, a, b, g: np.minimum(a, np.maximum(x, b)),
}

_DERIVATIVE: dict[int, Formula] = {
    0: lambda x, a, b, g: np.ones_like(x),
    1: lambda x, a, b, g: _logistic(x) * (1.0 - _logistic(x)),
    2: lambda x, a, b, g: a * b * (1.0 - np.tanh(a * x) ** 2),
    3: lambda x, a, b, g: (x > 0).astype(np.float64),
    4: lambda x, a, b, g: _logistic(np.minimum(x, SOFTRELU_THRESHOLD)),
    5: lambda x, a, b, g: np.where(x > 0, 1.0, -1.0),
    6: _power_derivative,
    7: lambda x, a, b, g: ((x > 0) & (x <= a)).astype(np.float64),
    8: lambda x, a, b, g: np.where(x > 0, 1.0, a),
    9: lambda x, a, b, g: np.where(x > 0, 1.0, a * np.exp(np.minimum(x, 0.0))),
    10: lambda x, a, b, g: np.where(a * x + b <= 0, 0.0, np.where(a * x + b >= 1, 1.0, 2 * a * x + b)),
    11: lambda x, a, b, g: ((x > b) & (x <= a)).astype(np.float64),
}


def forward_reference(mode, x, alpha: float = 1.0, beta: float = 1.0, gamma: float = 1.0) -> np.ndarray:
    """y = f(x) in float64."""
    return _FORWARD[_mode(mode)](np.asarray(x, np.float64), alpha, beta, gamma)


def derivative_reference(mode, x, alpha: float = 1.0, beta: float = 1.0, gamma: float = 1.0) -> np.ndarray:
    """f'(x) in float64 (the one-sided value MIOpen uses at kinks)."""
    return _DERIVATIVE[_mode(mode)](np.asarray(x, np.float64), alpha, beta, gamma)


def backward_reference(mode, dy, x, alpha: float = 1.0, beta: float = 1.0, gamma: float = 1.0) -> np.ndarray:
    """dx = dy * f'(x) in float64."""
    return np.asarray(dy, np.float64) * derivative_reference(mode, x, alpha, beta, gamma)


def reference_outputs(problem: ActivationProblem, tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The registry's reference hook: {output role: float64 expected} for the problem's scalars()."""
    alpha, beta, gamma = (float(v) for v in problem.scalars().values())
    if problem.direction is Direction.FORWARD:
        return {"y": forward_reference(problem.mode, tensors["x"], alpha, beta, gamma)}
    return {"dx": backward_reference(problem.mode, tensors["dy"], tensors["x"], alpha, beta, gamma)}


def prepare_inputs(problem: ActivationProblem, host: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    """The registry's prepare hook: a backward's y is the forward's output on its x (in place)."""
    if problem.direction is Direction.BACKWARD:
        alpha, beta, gamma = (float(v) for v in problem.scalars().values())
        x = host["x"].astype(np.float64)
        host["y"][...] = forward_reference(problem.mode, x, alpha, beta, gamma).astype(host["y"].dtype)
