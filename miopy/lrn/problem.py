"""The LRN problem: one direction of one LRN descriptor on one tensor shape."""
from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from ..errors import check
from ..solver import Registry
from ..tensor import DataType, TensorDesc
from .descriptor import LRNDesc


class Direction(enum.IntEnum):
    FORWARD = 1
    BACKWARD = 2


@dataclass(frozen=True)
class LRNProblem:
    """Forward: x -> y (and the scale when save_scale). Backward: dy, x, scale -> dx (the forward's y is
    not needed: y / scale is recomputed from x and the scale). The scale is a packed tensor of x's dims."""

    registry: ClassVar[Registry]

    direction: Direction
    desc: LRNDesc
    tensors_: tuple[tuple[str, TensorDesc], ...]

    @classmethod
    def create(cls, direction: Direction, desc: LRNDesc, save_scale: bool = False, **tensors: TensorDesc) -> LRNProblem:
        """Validate: forward takes x, y; backward dy, x, dx; all TensorDescs of one dims and dtype."""
        check(isinstance(desc, LRNDesc), "lrn_desc", "must be an LRNDesc")
        for role, t in tensors.items():
            check(isinstance(t, TensorDesc), f"{role}_desc", "must be a TensorDesc")
        first, ref = next(iter(tensors.items()))
        for role, t in tensors.items():
            check(t.dims == ref.dims, f"{role}_desc.dims", f"{t.dims} != {first}_desc dims {ref.dims}")
            check(t.dtype is ref.dtype, f"{role}_desc.dtype", f"{t.dtype.value} != {first}_desc {ref.dtype.value}")
        if direction is Direction.BACKWARD or save_scale:
            tensors["scale"] = TensorDesc(ref.dtype, ref.dims)
        return cls(Direction(direction), desc, tuple(tensors.items()))

    @property
    def shape(self) -> TensorDesc:
        return self.tensors_[0][1]

    @property
    def dtype(self) -> DataType:
        return self.shape.dtype

    @property
    def save_scale(self) -> bool:
        return self.direction is Direction.FORWARD and "scale" in self.tensors()

    def key(self) -> str:
        d = self.desc
        n, c, h, w = self.shape.dims
        packed = all(t.is_packed for _, t in self.tensors_)
        layout = "NCHW" if packed else "S" + "_".join(".".join(map(str, t.strides)) for _, t in self.tensors_)
        direction = "F" if self.direction is Direction.FORWARD else "B"
        return (f"lrn-{d.mode.name.lower()}-{d.n}-{d.pre}-a{d.alpha!r}-b{d.beta!r}-k{d.k!r}-{c}-{h}-{w}-{n}-{layout}"
                f"-{self.dtype.value}-{direction}{'-S' if self.save_scale else ''}")

    def tensors(self) -> Mapping[str, TensorDesc]:
        return dict(self.tensors_)

    def outputs(self) -> tuple[str, ...]:
        if self.direction is Direction.BACKWARD:
            return ("dx",)
        return ("y", "scale") if self.save_scale else ("y",)

    def reduction_length(self) -> int:
        return self.desc.area

    def positive_roles(self) -> tuple[str, ...]:
        """Inputs find's random data must keep positive: the backward's scale (k + a sum of squares)."""
        return ("scale",) if self.direction is Direction.BACKWARD else ()

    def bytes(self) -> int:
        """Bytes a kernel must move at least: each tensor read or written once."""
        return len(self.tensors_) * self.shape.element_count * self.dtype.itemsize
