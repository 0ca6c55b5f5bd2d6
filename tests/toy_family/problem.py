"""The toy problem: one direction of y = scale * x^2 on one tensor shape (any strides)."""
from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from miopy.pointwise import check_same_dims
from miopy.solver import Registry
from miopy.tensor import DataType, TensorDesc

CHECK_SCALE = 1.5   # the scale find, tuning and the tests run with (the reference hook's)


class Direction(enum.IntEnum):
    FORWARD = 1
    BACKWARD = 2


ROLES = {Direction.FORWARD: ("x", "y"), Direction.BACKWARD: ("dx", "dy", "x")}


@dataclass(frozen=True)
class SquareProblem:
    """Forward: y = scale * x^2. Backward: dx = 2 * scale * x * dy."""

    registry: ClassVar[Registry]

    direction: Direction
    tensors_: tuple[tuple[str, TensorDesc], ...]

    @classmethod
    def create(cls, direction: Direction, **tensors: TensorDesc) -> SquareProblem:
        roles = ROLES[Direction(direction)]
        check_same_dims("x_desc", tensors["x"], {f"{r}_desc": tensors[r] for r in roles if r != "x"})
        return cls(Direction(direction), tuple((role, tensors[role]) for role in roles))

    @property
    def dtype(self) -> DataType:
        return self.tensors_[0][1].dtype

    def key(self) -> str:
        x = self.tensors()["x"]
        strides = "_".join(".".join(map(str, t.strides)) for _, t in self.tensors_)
        return f"toy-square-{'x'.join(map(str, x.dims))}-s{strides}-{self.dtype.value}-{self.direction.name[0]}"

    def tensors(self) -> Mapping[str, TensorDesc]:
        return dict(self.tensors_)

    def outputs(self) -> tuple[str, ...]:
        return ("y",) if self.direction is Direction.FORWARD else ("dx",)

    def reduction_length(self) -> int:
        return 1

    def scalars(self) -> dict[str, np.float32]:
        return {"scale": np.float32(CHECK_SCALE)}
