"""The LRN family's solver registry: tiles staged in local memory (within-channel), a work-item per element
(every mode) and a work-item per column (cross-channel); the ranking prefers the column walk where there
are enough columns to fill a GPU, else registry order."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..reference import lrn as ref
from ..solver import Registry, Solver
from .problem import Direction, LRNProblem
from .solvers.column import LRNCrossChannelColumn
from .solvers.direct import LRNDirect
from .solvers.within_tiled import LRNWithinChannelTiled

MANY_COLUMNS = 32768   # (n, h, w) columns that keep a GPU busy with one work-item each


def reference_outputs(problem: LRNProblem, tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The registry's reference hook: {output role: float64 expected} (the backward from the given scale)."""
    d = problem.desc
    geometry = (int(d.mode), d.n, d.alpha, d.beta, d.k, d.pre)
    if problem.direction is Direction.FORWARD:
        y, scale = ref.lrn_forward(tensors["x"], *geometry)
        return {"y": y, "scale": scale} if problem.save_scale else {"y": y}
    return {"dx": ref.lrn_backward(tensors["dy"], tensors["x"], *geometry, scale=tensors["scale"])}


def rank(problem: LRNProblem, candidates: Sequence[Solver]) -> list[Solver]:
    """The column walk first when there are many columns, else a work-item per element first."""
    n, _, h, w = problem.shape.dims
    column_first = n * h * w >= MANY_COLUMNS
    return sorted(candidates, key=lambda s: (s.id == "LRNCrossChannelColumn") != column_first)


REGISTRY = Registry("lrn", LRNProblem, (LRNWithinChannelTiled(), LRNDirect(), LRNCrossChannelColumn()),
                    reference=reference_outputs, rank=rank)
