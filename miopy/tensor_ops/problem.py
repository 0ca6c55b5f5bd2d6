"""The OpTensor problem (MIOpen's miopenOpTensor): C = op(alpha1 * A, alpha2 * B) + beta * C, with B
broadcast over A the way MIOpen allows: each of B's dims equals A's or is 1."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..device import INT_LIMIT
from ..errors import NotSupported, check
from ..solver import Registry
from ..tensor import DataType, TensorDesc
from .descriptor import TensorOp

DTYPES = frozenset({DataType.FLOAT32, DataType.FLOAT16})


def check_data(field: str, desc, reference: TensorDesc | None = None, reference_field: str = "") -> TensorDesc:
    """desc is a TensorDesc of a supported dtype (with reference's dims and dtype when given)."""
    check(isinstance(desc, TensorDesc), field, "must be a TensorDesc")
    if reference is not None:
        check(desc.dims == reference.dims, f"{field}.dims", f"{desc.dims} != {reference_field} dims {reference.dims}")
        check(desc.dtype is reference.dtype, f"{field}.dtype",
              f"{desc.dtype.value} != {reference_field} dtype {reference.dtype.value}")
    if desc.dtype not in DTYPES:
        raise NotSupported(f"{field}: {desc.dtype.value} is not implemented")
    if desc.element_span >= INT_LIMIT:
        raise NotSupported(f"{field}: tensors of 2^31 elements or more are not supported (32-bit indices)")
    return desc


class Direction(enum.IntEnum):
    FORWARD = 1   # OpTensor has one direction


@dataclass(frozen=True)
class TensorOpProblem:
    """op over a (the shape of the result), b (broadcast over a) and c (a's dims, written)."""

    op: TensorOp
    a: TensorDesc
    b: TensorDesc
    c: TensorDesc
    _key: str = field(init=False, repr=False, compare=False)
    registry: ClassVar[Registry]
    direction: ClassVar[Direction] = Direction.FORWARD

    def __post_init__(self):
        object.__setattr__(self, "_key", self._make_key())

    @classmethod
    def create(cls, op, a: TensorDesc, b: TensorDesc, c: TensorDesc) -> TensorOpProblem:
        """Validated as MIOpen does: C has A's dims and dtype; B has their dtype and each dim equal or 1."""
        op = TensorOp.of(op)
        check_data("a_desc", a)
        check_data("c_desc", c, a, "a_desc")
        check(isinstance(b, TensorDesc), "b_desc", "must be a TensorDesc")
        check(b.dtype is a.dtype, "b_desc.dtype", f"{b.dtype.value} != a_desc dtype {a.dtype.value}")
        for axis, (lb, la) in zip("NCHW", zip(b.dims, a.dims)):
            check(lb in (1, la), "b_desc.dims", f"B's {axis} is {lb}: each of B's dims must equal A's ({a.dims}) "
                                                "or be 1")
        check_data("b_desc", b)
        return cls(op, a, b, c)

    @property
    def dtype(self) -> DataType:
        return self.a.dtype

    def key(self) -> str:
        return self._key

    def _make_key(self) -> str:
        key = (f"top-{self.op.name.lower()}-{'x'.join(map(str, self.a.dims))}-b{'x'.join(map(str, self.b.dims))}"
               f"-{self.a.dtype.value}")
        if not all(d.is_packed for d in (self.a, self.b, self.c)):
            key += "-s" + "_".join(",".join(map(str, d.strides)) for d in (self.a, self.b, self.c))
        return key

    def tensors(self) -> dict[str, TensorDesc]:
        return {"a": self.a, "b": self.b, "c": self.c}

    def outputs(self) -> tuple[str, ...]:
        return ("c",)

    def reduction_length(self) -> int:
        return 1

    def scalars(self) -> dict[str, np.float32]:
        """The per-call arguments with the values find, tuning and the tests bind (c = op(a, b)): the reference
        hook's."""
        return {"alpha1": np.float32(1.0), "alpha2": np.float32(1.0), "beta": np.float32(0.0)}

    @property
    def broadcast(self) -> bool:
        return self.b.dims != self.a.dims
