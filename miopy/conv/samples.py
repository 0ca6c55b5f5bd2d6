"""Sample convolutions: structured shapes every solver can claim (3x3, 5x5, 1x1, strided, dilated, grouped,
depthwise with channel multipliers, fully connected), uneven padding, and seeded random ones, in every direction
(the conformance test); posed on any tensor (the limits tests)."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..tensor import DataType, TensorDesc
from .descriptor import ConvDesc
from .problem import ConvProblem, Direction

SHAPES = [  # (n, c, h, w, k, r, s, pad, stride, dilation, groups)
    (2, 8, 10, 10, 8, 3, 3, 1, 1, 1, 1),
    (2, 16, 9, 11, 12, 3, 3, 0, 1, 1, 1),
    (1, 6, 12, 12, 10, 3, 3, 2, 1, 1, 1),
    (2, 8, 9, 9, 16, 1, 1, 0, 1, 1, 1),
    (2, 12, 9, 9, 8, 1, 1, 0, 2, 1, 1),
    (2, 8, 11, 11, 8, 5, 5, 2, 1, 1, 1),
    (1, 8, 12, 12, 8, 3, 3, 1, 2, 1, 2),
    (2, 6, 13, 13, 4, 3, 3, 2, 1, 2, 1),
    (2, 8, 8, 8, 8, 3, 3, 1, 1, 1, 4),
    (1, 3, 23, 23, 8, 7, 7, 0, 4, 1, 1),
    (33, 72, 1, 1, 13, 1, 1, 0, 1, 1, 1),  # a classifier (fully connected): image groups, staged
    (3, 40, 1, 1, 9, 1, 1, 0, 1, 1, 1),    # ... and at small batch (its matrix-vector form)
    (2, 8, 10, 9, 8, 3, 3, 1, 1, 1, 8),    # depthwise (MobileNet)
    (1, 4, 11, 9, 8, 5, 5, 2, 2, 1, 4),    # depthwise with a channel multiplier of 2, stride 2
    (1, 24, 9, 9, 48, 3, 3, 1, 2, 1, 24),  # ... and with more channels
]
UNEVEN = [  # begin != end padding along each axis, in both senses (ONNX pads, auto_pad SAME_*)
    (2, 6, 9, 11, 8, 3, 3, (2, 0, 1, 2), 1, 1, 1),
    (1, 6, 14, 14, 8, 3, 3, (0, 1, 0, 1), 2, 1, 1),   # MIOpen's --pad_mode same: 14x14, 3x3, stride 2
    (2, 8, 10, 10, 8, 3, 3, (0, 1, 0, 1), 1, 1, 1),
    (2, 4, 9, 9, 6, 5, 5, (3, 1, 0, 2), 1, 1, 1),
    (1, 4, 11, 10, 4, 3, 3, (1, 0, 2, 0), (2, 1), 2, 2),
    (1, 4, 12, 12, 6, 3, 3, (1, 2, 2, 1), 2, 1, 1),
    (2, 6, 9, 10, 6, 3, 3, (2, 0, 1, 2), 1, 1, 6),    # depthwise
    (1, 4, 10, 9, 8, 3, 3, (0, 1, 1, 0), 2, 1, 4),    # depthwise, channel multiplier 2, stride 2
    (2, 6, 8, 8, 4, 1, 1, (1, 0, 0, 1), 1, 1, 1),     # a padded 1x1 (the 1x1 GEMMs refuse it)
]
RANDOM_PER_DIRECTION = 6


def problems(dtype: DataType) -> list[ConvProblem]:
    """Every direction of the structured, uneven and random shapes in dtype; FP32 also under math mode "tf32"
    (the tensor-core solvers' only fp32 mode)."""
    out = []
    for direction in Direction:
        rng = np.random.default_rng(1234 + int(direction))
        shapes = SHAPES + UNEVEN + [random_shape(rng) for _ in range(RANDOM_PER_DIRECTION)]
        posed = [pose(direction, shape, dtype) for shape in shapes]
        out += posed
        if dtype is DataType.FLOAT32:
            out += [dataclasses.replace(p, math_mode="tf32") for p in posed[:len(SHAPES)]]
    return out


def problems_on(x: TensorDesc) -> list[ConvProblem]:
    """Every direction of a 3x3 convolution with padding 1 and x's channels out, on x."""
    w = TensorDesc(x.dtype, (x.c, x.c, 3, 3))
    return [ConvProblem.create(direction, x, w, ConvDesc(1)) for direction in Direction]


def pose(direction: Direction, shape: tuple, dtype: DataType | str = "FP32") -> ConvProblem:
    """The problem of a (n, c, h, w, k, r, s, pad, stride, dilation, groups) shape in direction and dtype."""
    n, c, h, w, k, r, s, pad, stride, dilation, groups = shape
    x = TensorDesc(dtype, (n, c, h, w))
    wd = TensorDesc(dtype, (k, c // groups, r, s))
    return ConvProblem.create(direction, x, wd, ConvDesc(pad, stride, dilation, groups))


def random_shape(rng: np.random.Generator) -> tuple:
    """A small random convolution (any pad / stride / dilation / groups) with a non-empty output."""
    while True:
        groups = int(rng.choice([1, 1, 2, 3]))
        c, k = groups * int(rng.integers(1, 5)), groups * int(rng.integers(1, 5))
        r, s = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        pad = (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
        stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        h, w = int(rng.integers(3, 11)), int(rng.integers(3, 11))
        if all((size + 2 * p - d * (f - 1) - 1) >= 0 for size, p, d, f in zip((h, w), pad, dil, (r, s))):
            return (int(rng.integers(1, 3)), c, h, w, k, r, s, pad, stride, dil, groups)
