"""Sample softmax problems: every direction, algorithm and mode on small odd shapes (the conformance test over
every registry), and posed on any tensor (the limits tests)."""
from __future__ import annotations

from ..tensor import DataType, TensorDesc
from .descriptor import SoftmaxAlgorithm, SoftmaxDesc, SoftmaxMode
from .problem import Direction, SoftmaxProblem

SHAPES = [(2, 5, 3, 4), (3, 40, 1, 1), (1, 3, 7, 9), (2, 300, 1, 2)]   # rows shorter and longer than a work-group


def problems(dtype: DataType) -> list[SoftmaxProblem]:
    """Every direction, algorithm and mode, each on one of the shapes in turn (one strided: NHWC)."""
    out = []
    cases = [(a, m) for a in SoftmaxAlgorithm for m in SoftmaxMode]
    for i, (algorithm, mode) in enumerate(cases):
        dims = SHAPES[i % len(SHAPES)]
        n, c, h, w = dims
        strides = (c * h * w, 1, w * c, c) if i == 1 else None
        for direction in Direction:
            out.append(_problem(direction, SoftmaxDesc(algorithm, mode), TensorDesc(dtype, dims, strides)))
    return out


def problems_on(x: TensorDesc) -> list[SoftmaxProblem]:
    """Both directions of an accurate channel softmax on tensors of x's dims and dtype."""
    return [_problem(direction, SoftmaxDesc(), x) for direction in Direction]


def _problem(direction: Direction, desc: SoftmaxDesc, t: TensorDesc) -> SoftmaxProblem:
    if direction is Direction.FORWARD:
        return SoftmaxProblem.create(direction, desc, x=t, y=t)
    return SoftmaxProblem.create(direction, desc, y=t, dy=t, dx=t)
