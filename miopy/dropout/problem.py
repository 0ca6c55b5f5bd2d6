"""The dropout problem: forward (draw or reuse the mask, y = x * mask / (1 - p)) or backward (dx = dy *
mask / (1 - p)) over one data shape, and the byte buffers beside the data (reserve space, RNG state)."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..device import INT_LIMIT
from ..errors import NotSupported, check
from ..solver import Registry
from ..tensor import DataType, TensorDesc
from .descriptor import rate_scalars

DTYPES = frozenset({DataType.FLOAT32, DataType.FLOAT16})
STATE_BYTES = 16   # uint4: key (seed low, seed high), offset (low, high)


class _Bytes:
    """The 'data type' of a raw byte buffer: arrays passed for one must be uint8."""

    numpy = np.dtype(np.uint8)
    value = "U8"


@dataclass(frozen=True)
class ByteBufferDesc:
    """A raw byte buffer (reserve space, RNG state) as a plan operand: only its size is checked. It reads as a
    packed 1-D tensor of bytes, so find, tuning and the tests make, poison and read it like any tensor."""

    nbytes: int
    dtype: ClassVar[_Bytes] = _Bytes()
    is_packed: ClassVar[bool] = True

    @property
    def dims(self) -> tuple[int]:
        return (self.nbytes,)

    @property
    def strides(self) -> tuple[int]:
        return (1,)

    @property
    def element_count(self) -> int:
        return self.nbytes

    @property
    def element_span(self) -> int:
        return self.nbytes


class DropoutDirection(enum.Enum):
    FORWARD = "fwd"
    BACKWARD = "bwd"


# The rate find, tuning and the tests run with (the reference hook answers for it).
CHECK_RATE = 0.5


@dataclass(frozen=True)
class DropoutProblem:
    """x -> y forward (dy -> dx backward: x is dy's descriptor, y dx's); use_mask: the forward reuses the
    reserve space's mask instead of drawing one; state_evo: the forward advances the RNG state after."""

    direction: DropoutDirection
    x: TensorDesc
    y: TensorDesc
    use_mask: bool = False
    state_evo: bool = False
    _key: str = field(init=False, repr=False, compare=False)
    registry: ClassVar[Registry]

    def __post_init__(self):
        object.__setattr__(self, "_key", self._make_key())

    @classmethod
    def create(cls, direction: DropoutDirection, x: TensorDesc, y: TensorDesc, noise_shape: TensorDesc | None = None,
               use_mask: bool = False, state_evo: bool = False, names: tuple[str, str] = ("x_desc", "y_desc")
               ) -> DropoutProblem:
        x_name, y_name = names
        check(isinstance(x, TensorDesc), x_name, "must be a TensorDesc")
        check(isinstance(y, TensorDesc), y_name, "must be a TensorDesc")
        check(y.dims == x.dims, f"{y_name}.dims", f"{y.dims} != {x_name} dims {x.dims}")
        check(y.dtype is x.dtype, f"{y_name}.dtype", f"{y.dtype.value} != {x_name} dtype {x.dtype.value}")
        if noise_shape is not None:
            check(isinstance(noise_shape, TensorDesc), "noise_shape", "must be a TensorDesc")
            if noise_shape.dims != x.dims:
                raise NotSupported(f"noise_shape {noise_shape.dims}: only a noise shape equal to the data's "
                                   f"{x.dims} is supported (as MIOpen)")
        if x.dtype not in DTYPES:
            raise NotSupported(f"{x_name}: dropout of {x.dtype.value} is not implemented")
        if max(x.element_span, y.element_span) >= INT_LIMIT:
            raise NotSupported(f"{x_name}: tensors of 2^31 elements or more are not supported (32-bit indices)")
        forward = direction is DropoutDirection.FORWARD
        return cls(direction, x, y, use_mask and forward, state_evo and forward)

    @property
    def dtype(self) -> DataType:
        return self.x.dtype

    def key(self) -> str:
        return self._key

    def _make_key(self) -> str:
        key = f"dropout-{self.direction.value}-{'x'.join(map(str, self.x.dims))}-{self.x.dtype.value}"
        if self.direction is DropoutDirection.FORWARD:
            key += f"-m{int(self.use_mask)}e{int(self.state_evo)}"
        if not (self.x.is_packed and self.y.is_packed):
            key += "-s" + "_".join(",".join(map(str, d.strides)) for d in (self.x, self.y))
        return key

    def tensors(self) -> dict:
        """Roles -> descriptors (the reserve space and states as ByteBufferDesc)."""
        reserve = ByteBufferDesc(self.x.element_count)
        if self.direction is DropoutDirection.BACKWARD:
            return {"dy": self.x, "dx": self.y, "reserve_space": reserve}
        return {"x": self.x, "y": self.y, "reserve_space": reserve, "states": ByteBufferDesc(STATE_BYTES)}

    def outputs(self) -> tuple[str, ...]:
        if self.direction is DropoutDirection.BACKWARD:
            return ("dx",)
        return ("y",) + (() if self.use_mask else ("reserve_space",)) + (("states",) if self.state_evo else ())

    def reduction_length(self) -> int:
        return 1

    def updated_roles(self) -> tuple[str, ...]:
        """Outputs read before they are written: the RNG state the forward advances."""
        return ("states",) if self.state_evo else ()

    def scalars(self) -> dict[str, np.generic]:
        """The per-call arguments (the rate's threshold and scale) at CHECK_RATE: what find, tuning and the tests
        bind, and what the reference hook answers for."""
        threshold, scale = rate_scalars(CHECK_RATE)
        if self.direction is DropoutDirection.BACKWARD:
            return {"scale": scale}
        return {"threshold": threshold, "scale": scale}

    @property
    def packed(self) -> bool:
        return self.x.is_packed and self.y.is_packed
