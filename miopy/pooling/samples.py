"""Sample pooling problems: every direction and mode over windows with per-side pads, strides, ceil mode and
whole-plane windows, saving the max's indices (the conformance test), and posed on any tensor (the limits
tests)."""
from __future__ import annotations

from ..tensor import DataType, TensorDesc
from .descriptor import PoolingDesc, PoolingMode
from .problem import Direction, PoolingProblem

GEOMETRIES = [  # (dims, window, pads (top, bottom, left, right), strides, ceil_mode)
    ((2, 3, 9, 11), (3, 3), (1, 1, 1, 1), (2, 2), False),
    ((1, 4, 8, 7), (2, 3), (0, 1, 1, 0), (2, 1), True),
    ((2, 2, 6, 6), (2, 2), (0, 0, 0, 0), (2, 2), False),
]
WHOLE_PLANE = (2, 5, 7, 6)   # a window covering the plane: global pooling


def problems(dtype: DataType) -> list[PoolingProblem]:
    out = []
    for mode in PoolingMode:
        for dims, window, pads, strides, ceil_mode in GEOMETRIES:
            desc = PoolingDesc(mode, window, pads, strides, ceil_mode)
            out += _both(desc, TensorDesc(dtype, dims))
        out += _both(PoolingDesc(mode, WHOLE_PLANE[2:]), TensorDesc(dtype, WHOLE_PLANE))
        small = (2, 3, 2, 3)   # many small planes: the staged global average
        out += _both(PoolingDesc(mode, small[2:]), TensorDesc(dtype, small))
    return out


def problems_on(x: TensorDesc) -> list[PoolingProblem]:
    """Both directions of 2x2 max and average pooling on x (the max saving its indices)."""
    return [problem for mode in (PoolingMode.MAX, PoolingMode.AVERAGE) for problem in _both(PoolingDesc(mode, 2), x)]


def _both(desc: PoolingDesc, x: TensorDesc) -> list[PoolingProblem]:
    return [PoolingProblem.create(direction, desc, x, save_indices=desc.is_max) for direction in Direction]
