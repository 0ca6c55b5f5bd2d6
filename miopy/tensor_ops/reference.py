"""Float64 tensor operations of MIOpen: OpTensor (add, mul, min, max with B broadcast over A), SetTensor,
ScaleTensor and TransformTensor. Ops by miopenTensorOp_t's values: 0 add, 1 mul, 2 min, 3 max, and miopy's 4 div."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .problem import TensorOpProblem

_OPS = (np.add, np.multiply, np.minimum, np.maximum, np.divide)


def op_tensor(op: int, a, b, c, alpha1: float = 1.0, alpha2: float = 1.0, beta: float = 0.0) -> np.ndarray:
    """c = op(alpha1 * a, alpha2 * b) + beta * c, b broadcast over a (c is not read when beta is 0); IEEE
    division (a zero divisor gives inf or NaN)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = _OPS[op](alpha1 * a, alpha2 * np.broadcast_to(b, a.shape))
    return out if beta == 0 else out + beta * np.asarray(c, np.float64)


def set_tensor(shape, value: float) -> np.ndarray:
    return np.full(shape, float(value))


def scale_tensor(y, alpha: float) -> np.ndarray:
    return alpha * np.asarray(y, np.float64)


def transform_tensor(x, y, alpha: float = 1.0, beta: float = 0.0) -> np.ndarray:
    """y = alpha * x + beta * y (y not read when beta is 0)."""
    out = alpha * np.asarray(x, np.float64)
    return out if beta == 0 else out + beta * np.asarray(y, np.float64)


def reference_outputs(problem: TensorOpProblem, t: Mapping[str, np.ndarray], alpha1: float = 1.0,
                      alpha2: float = 1.0, beta: float = 0.0) -> dict[str, np.ndarray]:
    """{"c": float64 expected} (the hook answers for alpha1 = alpha2 = 1, beta = 0 unless given)."""
    return {"c": op_tensor(int(problem.op), t["a"], t["b"], t["c"], alpha1, alpha2, beta)}
