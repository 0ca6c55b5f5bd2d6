"""Float64 ground truth of the toy family, and its registry's reference hook."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .problem import Direction, SquareProblem


def square_forward(x, scale: float) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return scale * x * x


def square_backward(dy, x, scale: float) -> np.ndarray:
    return 2.0 * scale * np.asarray(x, np.float64) * np.asarray(dy, np.float64)


def reference_outputs(problem: SquareProblem, tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    scale = float(problem.scalars()["scale"])
    if problem.direction is Direction.FORWARD:
        return {"y": square_forward(tensors["x"], scale)}
    return {"dx": square_backward(tensors["dy"], tensors["x"], scale)}
