"""miopenTensorOp_t: the element-wise operation of OpTensor."""
from __future__ import annotations

import enum

from ..tensor import enum_member


class TensorOp(enum.IntEnum):
    """miopenTensorOp_t: values 0 to 3 are MIOpen's; DIV is miopy's (MIOpen has no division)."""

    ADD = 0   # alpha1 * a + alpha2 * b
    MUL = 1   # (alpha1 * a) * (alpha2 * b)
    MIN = 2   # min(alpha1 * a, alpha2 * b)
    MAX = 3   # max(alpha1 * a, alpha2 * b)
    DIV = 4   # (alpha1 * a) / (alpha2 * b)

    @classmethod
    def of(cls, value: TensorOp | int | str, field: str = "tensor_op") -> TensorOp:
        return enum_member(cls, value, field, "tensor op")
