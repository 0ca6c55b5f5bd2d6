"""The float64 answer to a batch-norm problem (its registry's reference hook), from miopy.reference.batchnorm."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..reference import batchnorm as ref
from .problem import BatchNormProblem, BnDirection

# The numbers a problem does not carry: the hook answers for these (alpha 1, beta 0).
DEFAULT_EPSILON = 1e-5
DEFAULT_FACTOR = 0.1


def reference_outputs(problem: BatchNormProblem, t: Mapping[str, np.ndarray], epsilon: float = DEFAULT_EPSILON,
                      factor: float = DEFAULT_FACTOR) -> dict[str, np.ndarray]:
    """{output role: float64 expected} for the tensors t (by role)."""
    if problem.direction is BnDirection.FORWARD_INFERENCE:
        return {"y": ref.forward_inference(t["x"], t["scale"], t["bias"], t["estimated_mean"],
                                           t["estimated_variance"], epsilon)}
    if problem.direction is BnDirection.BACKWARD:
        saved = (t["saved_mean"], t["saved_inv_variance"]) if problem.saved else (None, None)
        return ref.backward(t["x"], t["dy"], t["scale"], epsilon, problem.spatial, *saved)
    running = (t["running_mean"], t["running_var"]) if problem.running else (None, None)
    out = ref.forward_training(t["x"], t["scale"], t["bias"], epsilon, problem.spatial, factor, *running)
    return {role: out[role] for role in problem.outputs()}
