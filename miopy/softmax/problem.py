"""The softmax problem: one direction of one algorithm and mode on one tensor shape."""
from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from ..errors import check
from ..solver import Registry
from ..tensor import DataType, TensorDesc
from .descriptor import SoftmaxDesc


class Direction(enum.IntEnum):
    FORWARD = 1
    BACKWARD = 2


@dataclass(frozen=True)
class SoftmaxProblem:
    """Forward: x -> y. Backward: y, dy -> dx. Tensors share their dims (strides may differ)."""

    registry: ClassVar[Registry]

    direction: Direction
    desc: SoftmaxDesc
    tensors_: tuple[tuple[str, TensorDesc], ...]

    @classmethod
    def create(cls, direction: Direction, desc: SoftmaxDesc, **tensors: TensorDesc) -> SoftmaxProblem:
        """Validate: forward takes x, y; backward y, dy, dx; all TensorDescs of one dims and dtype."""
        check(isinstance(desc, SoftmaxDesc), "softmax_desc", "must be a SoftmaxDesc")
        first = next(iter(tensors))
        for role, t in tensors.items():
            check(isinstance(t, TensorDesc), f"{role}_desc", "must be a TensorDesc")
        ref = tensors[first]
        for role, t in tensors.items():
            check(t.dims == ref.dims, f"{role}_desc.dims", f"{t.dims} != {first}_desc dims {ref.dims}")
            check(t.dtype is ref.dtype, f"{role}_desc.dtype", f"{t.dtype.value} != {first}_desc {ref.dtype.value}")
        return cls(Direction(direction), desc, tuple(tensors.items()))

    @property
    def shape(self) -> TensorDesc:
        return self.tensors_[0][1]

    @property
    def dtype(self) -> DataType:
        return self.shape.dtype

    @property
    def rows(self) -> int:
        return self.desc.rows(self.shape)[0]

    @property
    def length(self) -> int:
        """Elements per row (the reduction length)."""
        return self.desc.rows(self.shape)[1]

    def key(self) -> str:
        n, c, h, w = self.shape.dims
        packed = all(t.is_packed for _, t in self.tensors_)
        layout = "NCHW" if packed else "S" + "_".join(".".join(map(str, t.strides)) for _, t in self.tensors_)
        return (f"softmax-{self.desc.algorithm.name.lower()}-{self.desc.mode.name.lower()}-{c}-{h}-{w}-{n}-{layout}"
                f"-{self.dtype.value}-{'F' if self.direction is Direction.FORWARD else 'B'}")

    def tensors(self) -> Mapping[str, TensorDesc]:
        return dict(self.tensors_)

    def outputs(self) -> tuple[str, ...]:
        return ("y",) if self.direction is Direction.FORWARD else ("dx",)

    def reduction_length(self) -> int:
        return self.length

    def bytes(self) -> int:
        """Bytes a kernel must move at least: each tensor read or written once."""
        return len(self.tensors_) * self.shape.element_count * self.dtype.itemsize
