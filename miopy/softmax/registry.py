"""The softmax family's solver registry. Order is the default preference (a work-group per row); the
ranking puts one work-item per row first for many short rows."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..reference import softmax as ref
from ..solver import Registry, Solver
from .problem import Direction, SoftmaxProblem
from .solvers.block_per_row import SoftmaxBlockPerRow
from .solvers.item_per_row import SoftmaxItemPerRow

MANY_ROWS = 4096   # enough rows to fill a GPU with one work-item each


def reference_outputs(problem: SoftmaxProblem, tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The registry's reference hook: {output role: float64 expected}."""
    algo, mode = int(problem.desc.algorithm), int(problem.desc.mode)
    if problem.direction is Direction.FORWARD:
        return {"y": ref.softmax_forward(tensors["x"], algo, mode)}
    return {"dx": ref.softmax_backward(tensors["y"], tensors["dy"], algo, mode)}


def rank(problem: SoftmaxProblem, candidates: Sequence[Solver]) -> list[Solver]:
    """One work-item per row first when there are many short rows, else one work-group per row first."""
    item_first = problem.rows >= MANY_ROWS
    return sorted(candidates, key=lambda s: (s.id == "SoftmaxItemPerRow") != item_first)


REGISTRY = Registry("softmax", SoftmaxProblem, (
    SoftmaxBlockPerRow(),
    SoftmaxItemPerRow(),
), reference=reference_outputs, rank=rank)
