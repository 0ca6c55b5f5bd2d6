"""Sample batch-norm problems: every computation and mode, with and without running and saved statistics,
packed and channels-last, and channels long enough to split (the conformance test); posed on any tensor (the
limits tests)."""
from __future__ import annotations

from ..tensor import DataType, TensorDesc
from .descriptor import BatchNormMode, derive_bn_tensor_descriptor
from .problem import BatchNormProblem, BnDirection

SHAPES = [((3, 4, 5, 7), None), ((3, 4, 5, 7), (3 * 5 * 7 * 4, 1, 7 * 4, 4)), ((3, 2, 37, 41), None)]
FLAGS = [(False, False), (True, True), (True, False), (False, True)]   # (running, saved)


def problems(dtype: DataType) -> list[BatchNormProblem]:
    out = []
    for i, (dims, strides) in enumerate(SHAPES):
        x = TensorDesc(dtype, dims, strides)
        for mode in BatchNormMode:
            out.append(_problem(BnDirection.FORWARD_INFERENCE, mode, x))
            running, saved = FLAGS[i % len(FLAGS)]
            out.append(_problem(BnDirection.FORWARD_TRAINING, mode, x, running, saved))
            out.append(_problem(BnDirection.BACKWARD, mode, x, saved=saved))
            out.append(_problem(BnDirection.FORWARD_TRAINING, mode, x, not running, not saved))
            out.append(_problem(BnDirection.BACKWARD, mode, x, saved=not saved))
    return out


def problems_on(x: TensorDesc) -> list[BatchNormProblem]:
    """Every computation of spatial batch norm on x."""
    return [_problem(direction, BatchNormMode.SPATIAL, x) for direction in BnDirection]


def _problem(direction: BnDirection, mode: BatchNormMode, x: TensorDesc, running: bool = False,
             saved: bool = False) -> BatchNormProblem:
    dy = x if direction is BnDirection.BACKWARD else None
    return BatchNormProblem.create(direction, mode, x, x, derive_bn_tensor_descriptor(x, mode), dy, running, saved)
