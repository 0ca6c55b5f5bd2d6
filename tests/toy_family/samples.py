"""Sample toy problems: both directions, packed and channels-last."""
from __future__ import annotations

from miopy.tensor import DataType, TensorDesc

from .problem import ROLES, Direction, SquareProblem


def problems(dtype: DataType) -> list[SquareProblem]:
    shapes = [TensorDesc(dtype, (2, 3, 5, 7)), TensorDesc(dtype, (2, 3, 4, 5), (60, 1, 15, 3))]
    return [problem for t in shapes for problem in problems_on(t)]


def problems_on(x: TensorDesc) -> list[SquareProblem]:
    return [SquareProblem.create(d, **dict.fromkeys(ROLES[d], x)) for d in Direction]
