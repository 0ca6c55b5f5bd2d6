"""The softmax family's solver registry. Order is the default preference (a work-group per row); the
ranking puts one work-item per row first for many short rows."""
from __future__ import annotations

from collections.abc import Sequence

from ..solver import Registry, Solver
from .problem import SoftmaxProblem
from .reference import reference_outputs
from .solvers.block_per_row import SoftmaxBlockPerRow
from .solvers.item_per_row import SoftmaxItemPerRow

MANY_ROWS = 4096   # enough rows to fill a GPU with one work-item each


def rank(problem: SoftmaxProblem, candidates: Sequence[Solver]) -> list[Solver]:
    """One work-item per row first when there are many short rows, else one work-group per row first."""
    item_first = problem.rows >= MANY_ROWS
    return sorted(candidates, key=lambda s: (s.id == "SoftmaxItemPerRow") != item_first)


REGISTRY = Registry("softmax", SoftmaxProblem, (
    SoftmaxBlockPerRow(),
    SoftmaxItemPerRow(),
), reference=reference_outputs, rank=rank)
