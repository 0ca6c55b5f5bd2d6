"""The LRN family's solver registry: tiles staged in local memory (within-channel), a work-item per element
(every mode) and a work-item per column (cross-channel); the ranking prefers the column walk where there
are enough columns to fill a GPU, else registry order."""
from __future__ import annotations

from collections.abc import Sequence

from ..solver import Registry, Solver
from .problem import LRNProblem
from .reference import reference_outputs
from .solvers.column import LRNCrossChannelColumn
from .solvers.direct import LRNDirect
from .solvers.within_tiled import LRNWithinChannelTiled

MANY_COLUMNS = 32768   # (n, h, w) columns that keep a GPU busy with one work-item each


def rank(problem: LRNProblem, candidates: Sequence[Solver]) -> list[Solver]:
    """The column walk first when there are many columns, else a work-item per element first."""
    n, _, h, w = problem.shape.dims
    column_first = n * h * w >= MANY_COLUMNS
    return sorted(candidates, key=lambda s: (s.id == "LRNCrossChannelColumn") != column_first)


REGISTRY = Registry("lrn", LRNProblem, (LRNWithinChannelTiled(), LRNDirect(), LRNCrossChannelColumn()),
                    reference=reference_outputs, rank=rank)
