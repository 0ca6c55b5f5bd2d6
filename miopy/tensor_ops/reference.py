"""The float64 answer to an OpTensor problem (its registry's reference hook), from miopy.reference.tensor_ops."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..reference import tensor_ops as ref
from .problem import TensorOpProblem


def reference_outputs(problem: TensorOpProblem, t: Mapping[str, np.ndarray], alpha1: float = 1.0,
                      alpha2: float = 1.0, beta: float = 0.0) -> dict[str, np.ndarray]:
    """{"c": float64 expected} (the hook answers for alpha1 = alpha2 = 1, beta = 0 unless given)."""
    return {"c": ref.op_tensor(int(problem.op), t["a"], t["b"], t["c"], alpha1, alpha2, beta)}
