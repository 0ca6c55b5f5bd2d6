"""The float64 answer to a dropout problem (its registry's reference hook), from miopy.reference.dropout."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..reference import dropout as ref
from .problem import DropoutDirection, DropoutProblem

DEFAULT_P = 0.5   # the rate the hook answers for (a problem does not carry it)


def reference_outputs(problem: DropoutProblem, t: Mapping[str, np.ndarray], p: float = DEFAULT_P) -> dict:
    """{"y" or "dx": float64 expected}; the mask is the reserve space's (backward, use_mask) or the one the
    state t["states"] (4 uint32: seed low, seed high, offset low, offset high) draws."""
    if problem.direction is DropoutDirection.BACKWARD:
        return {"dx": ref.backward(t["dy"], np.asarray(t["reserve_space"])[:problem.x.element_count], p)}
    if problem.use_mask:
        mask = np.asarray(t["reserve_space"])[:problem.x.element_count]
    else:
        s = np.asarray(t["states"]).view(np.uint32).astype(np.uint64)
        mask = ref.keep_mask(problem.x.element_count, p, int(s[0] | (s[1] << 32)), int(s[2] | (s[3] << 32)))
    return {"y": ref.forward(t["x"], mask, p)}
