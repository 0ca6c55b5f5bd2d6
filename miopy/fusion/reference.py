"""Float64 answer to a fused problem: the convolution's reference, then the epilogue's (epilogue.apply_reference)."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..conv.reference import solve
from .epilogue import apply_reference
from .problem import FusedProblem


def reference_outputs(problem: FusedProblem, tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The registry's reference hook: {"y": float64 expected} for the problem's scalars()."""
    value = tensors["x"] if problem.conv is None else solve(problem.conv, tensors)
    return {"y": apply_reference(problem.epilogue, value, {**tensors, **problem.scalars()})}
