"""The activation problem: one direction of one activation mode on one tensor shape."""
from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import check
from ..pointwise import check_same_dims
from ..solver import Registry
from ..tensor import DataType, TensorDesc
from .descriptor import ActivationMode

# The kernels' per-call arguments (MIOpen's activation alpha, beta, gamma), by role.
SCALAR_ROLES = ("activ_alpha", "activ_beta", "activ_gamma")
# The values find, tuning and the conformance test run with: on normal inputs power's (1.3 + 0.8 x)^1.7 takes
# both branches, clamp and clipped ReLU clip on both sides.
CHECK_ALPHA, CHECK_BETA, CHECK_GAMMA = 1.3, 0.8, 1.7


class Direction(enum.IntEnum):
    FORWARD = 1
    BACKWARD = 2


ROLES = {Direction.FORWARD: ("x", "y"), Direction.BACKWARD: ("dx", "dy", "x", "y")}


@dataclass(frozen=True)
class ActivationProblem:
    """Forward: y = f(x). Backward: dx = dy * f'(x), given dy, x and the forward's y (MIOpen's signature).
    Every tensor has the same dims and dtype; strides are free."""

    registry: ClassVar[Registry]

    direction: Direction
    mode: ActivationMode
    tensors_: tuple[tuple[str, TensorDesc], ...]

    @classmethod
    def create(cls, direction: Direction, mode: ActivationMode | int | str, **tensors: TensorDesc) -> ActivationProblem:
        """Validate: forward takes x, y; backward dx, dy, x, y; one dims and dtype (FP32 or FP16)."""
        direction, mode = Direction(direction), ActivationMode.of(mode)
        roles = ROLES[direction]
        check(set(tensors) == set(roles), "tensors", f"{direction.name.lower()} takes {roles}, got {sorted(tensors)}")
        check_same_dims("x_desc", tensors["x"], {f"{role}_desc": tensors[role] for role in roles if role != "x"})
        return cls(direction, mode, tuple((role, tensors[role]) for role in roles))

    @property
    def x(self) -> TensorDesc:
        return self.tensors()["x"]

    @property
    def dtype(self) -> DataType:
        return self.x.dtype

    def key(self) -> str:
        packed = all(t.is_packed for _, t in self.tensors_)
        layout = "NCHW" if packed else "S" + "_".join(".".join(map(str, t.strides)) for _, t in self.tensors_)
        dims = "-".join(map(str, self.x.dims))
        return (f"activ-{self.mode.name.lower()}-{dims}-{layout}-{self.dtype.value}"
                f"-{'F' if self.direction is Direction.FORWARD else 'B'}")

    def tensors(self) -> Mapping[str, TensorDesc]:
        return dict(self.tensors_)

    def outputs(self) -> tuple[str, ...]:
        return ("y",) if self.direction is Direction.FORWARD else ("dx",)

    def reduction_length(self) -> int:
        return 1

    def scalars(self) -> dict[str, np.float32]:
        """The per-call arguments with the values find, tuning and the tests bind (the reference's defaults)."""
        return dict(zip(SCALAR_ROLES, map(np.float32, (CHECK_ALPHA, CHECK_BETA, CHECK_GAMMA))))

    def bytes(self) -> int:
        """Bytes a kernel must move at least: each tensor read or written once."""
        return len(self.tensors_) * self.x.element_count * self.dtype.itemsize
