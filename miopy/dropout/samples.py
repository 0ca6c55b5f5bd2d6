"""Sample dropout problems: both directions, drawing or reusing the mask, with and without state evolution,
packed and channels-last, with and without a tail block (the conformance test), and posed on any tensor (the
limits tests)."""
from __future__ import annotations

from ..tensor import DataType, TensorDesc
from .problem import DropoutDirection, DropoutProblem

SHAPES = [((2, 3, 5, 7), None), ((1, 4, 8, 8), None), ((2, 3, 5, 7), (105, 1, 21, 3))]


def problems(dtype: DataType) -> list[DropoutProblem]:
    out = []
    for dims, strides in SHAPES:
        t = TensorDesc(dtype, dims, strides)
        out += [DropoutProblem.create(DropoutDirection.FORWARD, t, t, use_mask=use_mask, state_evo=evo)
                for use_mask, evo in ((False, True), (True, False), (False, False))]
        out.append(DropoutProblem.create(DropoutDirection.BACKWARD, t, t))
    return out


def problems_on(x: TensorDesc) -> list[DropoutProblem]:
    """Both directions on tensors of x's dims and dtype."""
    return [DropoutProblem.create(d, x, x) for d in DropoutDirection]
