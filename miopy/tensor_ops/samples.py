"""Sample OpTensor problems: every op with B as A's shape, a per-channel bias, a broadcast plane and a scalar,
packed and channels-last (the conformance test), and posed on any tensor (the limits tests)."""
from __future__ import annotations

from ..tensor import DataType, TensorDesc
from .descriptor import TensorOp
from .problem import TensorOpProblem

SHAPES = [  # (a dims, b dims, a strides)
    ((2, 3, 4, 5), (2, 3, 4, 5), None),
    ((2, 3, 5, 3), (2, 3, 5, 3), None),            # 90 elements: not a multiple of 4
    ((2, 3, 4, 5), (1, 3, 1, 1), None),            # a per-channel bias
    ((2, 3, 4, 5), (2, 1, 4, 5), (60, 1, 15, 3)),  # channels-last a
    ((2, 3, 4, 5), (1, 1, 1, 1), None),
]


def problems(dtype: DataType) -> list[TensorOpProblem]:
    out = []
    for op in TensorOp:
        for a_dims, b_dims, strides in SHAPES:
            a = TensorDesc(dtype, a_dims, strides)
            out.append(TensorOpProblem.create(op, a, TensorDesc(dtype, b_dims), a))
    return out


def problems_on(x: TensorDesc) -> list[TensorOpProblem]:
    """Every op on x with B of x's shape and with a per-channel B."""
    bias = TensorDesc(x.dtype, (1, x.c, 1, 1))
    return [TensorOpProblem.create(op, x, b, x) for op in TensorOp for b in (x, bias)]
