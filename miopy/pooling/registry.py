"""The pooling family's ordered solver registry: the global-average reductions first (where they apply:
small planes staged many per work-group, then a work-group per plane), the windowed kernel that applies to
every problem last. Ids are stable strings."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..reference import pooling as ref
from ..solver import Registry
from .problem import Direction, PoolingProblem
from .solvers.global_average import PoolingGlobalAverage
from .solvers.global_average_staged import PoolingGlobalAverageStaged
from .solvers.windowed import PoolingWindowed


def reference_outputs(problem: PoolingProblem, tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The registry's reference hook: {output role: float64 expected} (y forward, dx backward; the saved
    indices are checked through the backward)."""
    d = problem.desc
    geometry = (int(d.mode), d.window, d.pads, d.strides, d.ceil_mode)
    if problem.direction is Direction.FORWARD:
        return {"y": ref.pool_forward(tensors["x"], *geometry)[0]}
    return {"dx": ref.pool_backward(tensors["dy"], problem.x.dims, *geometry, indices=tensors.get("indices"))}


REGISTRY = Registry("pooling", PoolingProblem, (
    PoolingGlobalAverageStaged(),
    PoolingGlobalAverage(),
    PoolingWindowed(),
), reference=reference_outputs)
