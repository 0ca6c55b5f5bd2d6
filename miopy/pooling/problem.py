"""The pooling problem: one direction of one pooling descriptor on one input / output pair."""
from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from ..errors import check
from ..solver import Registry
from ..tensor import DataType, TensorDesc
from .descriptor import INDEX_BYTES, PoolingDesc


class Direction(enum.IntEnum):
    FORWARD = 1
    BACKWARD = 2


@dataclass(frozen=True)
class PoolingProblem:
    """Forward: x -> y (and the max's indices when save_indices); backward: dy (and indices) -> dx.

    Roles: forward x, y, indices; backward dx (the input's gradient, x's shape), dy, indices. The indices
    role is max pooling's int32 workspace; tensors() describes it with a 4-byte element type of y's dims
    (the buffer size find and tuning allocate), and the descriptor API binds it unchecked by dtype.
    """

    registry: ClassVar[Registry]

    direction: Direction
    desc: PoolingDesc
    x: TensorDesc
    y: TensorDesc
    save_indices: bool = False

    @classmethod
    def create(cls, direction: Direction, desc: PoolingDesc, x: TensorDesc, y: TensorDesc | None = None,
               save_indices: bool = False) -> PoolingProblem:
        """Validate the descriptors (y defaults to the packed output of x) and build the problem."""
        check(isinstance(desc, PoolingDesc), "pool_desc", "must be a PoolingDesc")
        check(isinstance(x, TensorDesc), "x_desc", "must be a TensorDesc")
        dims = desc.output_dims(x)
        y = desc.output_desc(x) if y is None else y
        check(isinstance(y, TensorDesc), "y_desc", "must be a TensorDesc")
        check(y.dims == dims, "y_desc.dims", f"{y.dims} != the pooling output {dims} of x_desc {x.dims}")
        check(y.dtype is x.dtype, "y_desc.dtype", f"{y.dtype.value} != x_desc dtype {x.dtype.value}")
        save = direction is Direction.FORWARD and desc.is_max and bool(save_indices)
        return cls(Direction(direction), desc, x, y, save)

    @property
    def dtype(self) -> DataType:
        return self.x.dtype

    @property
    def uses_indices(self) -> bool:
        """Whether a solution reads or writes the index workspace."""
        return self.save_indices or (self.direction is Direction.BACKWARD and self.desc.is_max)

    @property
    def index_desc(self) -> TensorDesc:
        """The index workspace as a packed tensor of y's dims with 4-byte elements."""
        return TensorDesc(DataType.FLOAT32, self.y.dims)

    def key(self) -> str:
        d = self.desc
        n, c, h, w = self.x.dims
        pads = ".".join(map(str, d.pads))
        layout = "" if self.x.is_packed and self.y.is_packed else f"-xs{'.'.join(map(str, self.x.strides))}" \
                                                                  f"-ys{'.'.join(map(str, self.y.strides))}"
        tail = "-I" if self.save_indices else ""
        return (f"pool-{d.mode.name.lower()}-{c}-{h}-{w}-{d.window[0]}x{d.window[1]}-{self.y.h}-{self.y.w}-{n}"
                f"-p{pads}-s{d.strides[0]}x{d.strides[1]}-{'ceil' if d.ceil_mode else 'floor'}{layout}"
                f"-{self.dtype.value}-{'F' if self.direction is Direction.FORWARD else 'B'}{tail}")

    def tensors(self) -> Mapping[str, TensorDesc]:
        roles = {"x": self.x, "y": self.y} if self.direction is Direction.FORWARD else {"dx": self.x, "dy": self.y}
        if self.uses_indices:
            roles["indices"] = self.index_desc
        return roles

    def outputs(self) -> tuple[str, ...]:
        if self.direction is Direction.BACKWARD:
            return ("dx",)
        return ("y", "indices") if self.save_indices else ("y",)

    def reduction_length(self) -> int:
        kh, kw = self.desc.window
        if self.direction is Direction.FORWARD:
            return 1 if self.desc.is_max else kh * kw
        sh, sw = self.desc.strides
        return -(-kh // sh) * -(-kw // sw)

    def bytes(self) -> int:
        """Bytes a kernel must move at least: read the input side once, write the output side once."""
        moved = self.x.element_count + self.y.element_count
        indices = self.y.element_count * INDEX_BYTES if self.uses_indices else 0
        return moved * self.dtype.itemsize + indices
