"""Sample activation problems: every mode in both directions, packed and strided (the conformance test), and
posed on any tensor (the limits tests)."""
from __future__ import annotations

from ..tensor import DataType, TensorDesc
from .descriptor import ActivationMode
from .problem import ROLES, ActivationProblem, Direction

SHAPES = [((2, 3, 5, 7), None), ((2, 3, 4, 5), (60, 1, 15, 3))]   # packed, and channels-last


def problems(dtype: DataType) -> list[ActivationProblem]:
    out = []
    for i, mode in enumerate(ActivationMode):
        dims, strides = SHAPES[i % len(SHAPES)]
        out += _both(mode, TensorDesc(dtype, dims, strides))
    return out


def problems_on(x: TensorDesc) -> list[ActivationProblem]:
    """Both directions of ReLU on tensors of x's dims and dtype."""
    return _both(ActivationMode.RELU, x)


def _both(mode: ActivationMode, t: TensorDesc) -> list[ActivationProblem]:
    return [ActivationProblem.create(d, mode, **dict.fromkeys(ROLES[d], t)) for d in Direction]
