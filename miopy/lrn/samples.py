"""Sample LRN problems: every direction and mode, odd and even windows, MIOpen's and PyTorch's window offsets,
fewer channels than the window (the conformance test), and posed on any tensor (the limits tests)."""
from __future__ import annotations

from ..tensor import DataType, TensorDesc
from .descriptor import LRNDesc, LRNMode
from .problem import Direction, LRNProblem

ALPHA, BETA, K = 0.9, 0.75, 1.5   # a large alpha, so the window sum matters
GEOMETRIES = [(LRNMode.CROSS_CHANNEL, 5, None), (LRNMode.CROSS_CHANNEL, 4, 2), (LRNMode.WITHIN_CHANNEL, 3, None),
              (LRNMode.WITHIN_CHANNEL, 4, 0)]   # (mode, n, pre)
SHAPES = [(2, 7, 5, 6), (1, 2, 3, 4), (2, 3, 19, 37)]


def problems(dtype: DataType) -> list[LRNProblem]:
    """Every geometry on every shape, forward (saving the scale) and backward."""
    out = []
    for mode, n, pre in GEOMETRIES:
        for dims in SHAPES:
            desc, t = LRNDesc(mode, n, ALPHA, BETA, K, pre), TensorDesc(dtype, dims)
            out.append(LRNProblem.create(Direction.FORWARD, desc, True, x=t, y=t))
            out.append(LRNProblem.create(Direction.BACKWARD, desc, x=t, dy=t, dx=t))
    return out


def problems_on(x: TensorDesc) -> list[LRNProblem]:
    """Both directions and modes of a 5-wide LRN on tensors of x's dims and dtype."""
    out = []
    for mode in LRNMode:
        desc = LRNDesc(mode, 5)
        out.append(LRNProblem.create(Direction.FORWARD, desc, x=x, y=x))
        out.append(LRNProblem.create(Direction.BACKWARD, desc, x=x, dy=x, dx=x))
    return out
