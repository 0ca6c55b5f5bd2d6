"""Sample fused problems: a convolution followed by each epilogue (bias, both batch-norm modes, the residual
add, activations) and batch norm (+ add, + activation) alone (the conformance test); posed on any tensor (the
limits tests)."""
from __future__ import annotations

from ..activation import ActivationMode
from ..batchnorm import BatchNormMode
from ..conv.descriptor import ConvDesc
from ..conv.problem import ConvProblem, Direction
from ..tensor import DataType, TensorDesc
from .epilogue import Epilogue
from .problem import FusedProblem

SPATIAL, PER_ACTIVATION = BatchNormMode.SPATIAL, BatchNormMode.PER_ACTIVATION
RELU = ActivationMode.RELU
# (bias, batch norm, activation, add): the epilogues, their plane (per-activation batch norm) set per problem
CONV_EPILOGUES = [(True, None, RELU, False), (False, None, ActivationMode.TANH, False), (False, None, None, False),
                  (False, SPATIAL, ActivationMode.LEAKY_RELU, False), (True, PER_ACTIVATION, ActivationMode.ELU, False),
                  (True, None, RELU, True)]
ALONE = [(False, SPATIAL, ActivationMode.CLIPPED_RELU, False), (False, PER_ACTIVATION, ActivationMode.POWER, False),
         (False, SPATIAL, RELU, True)]
CONVOLUTIONS = [  # (x dims, w dims, convolution): 3x3, strided 1x1, 5x5, depthwise, fully connected
    ((2, 5, 9, 8), (6, 5, 3, 3), ConvDesc(1)),
    ((1, 4, 10, 10), (8, 4, 1, 1), ConvDesc(0, 2)),
    ((2, 4, 9, 8), (6, 4, 5, 5), ConvDesc(2)),
    ((2, 8, 10, 9), (8, 1, 3, 3), ConvDesc(1, groups=8)),
    ((33, 72, 1, 1), (13, 72, 1, 1), ConvDesc(0)),
]


def problems(dtype: DataType) -> list[FusedProblem]:
    """Each epilogue after each convolution, and batch norm (+ add, + activation) alone."""
    out = [fused_conv(TensorDesc(dtype, x_dims), TensorDesc(dtype, w_dims), conv, ops)
           for x_dims, w_dims, conv in CONVOLUTIONS for ops in CONV_EPILOGUES]
    if dtype is DataType.FLOAT32:   # under math mode "tf32" too: the tensor-core solvers' only fp32 mode
        x_dims, w_dims, conv = CONVOLUTIONS[0]
        tf32 = ConvDesc(conv.pads, conv.stride, conv.dilation, conv.groups, math_mode="tf32")
        out += [fused_conv(TensorDesc(dtype, x_dims), TensorDesc(dtype, w_dims), tf32, ops) for ops in CONV_EPILOGUES]
    out += [fused_alone(TensorDesc(dtype, (2, 3, 5, 7)), ops) for ops in ALONE]
    return out


def problems_on(x: TensorDesc) -> list[FusedProblem]:
    """Batch norm + ReLU on x, and a 3x3 convolution + bias + ReLU on x."""
    w = TensorDesc(x.dtype, (x.c, x.c, 3, 3))
    return [fused_alone(x, (False, SPATIAL, RELU, False)), fused_conv(x, w, ConvDesc(1), (True, None, RELU, False))]


def fused_conv(x: TensorDesc, w: TensorDesc, conv: ConvDesc, ops: tuple) -> FusedProblem:
    """conv(x, w) followed by the epilogue ops (bias, batch norm, activation, add)."""
    problem = ConvProblem.create(Direction.FORWARD, x, w, conv)
    return FusedProblem(x, problem.y, _epilogue(ops, problem.y), problem)


def fused_alone(x: TensorDesc, ops: tuple) -> FusedProblem:
    """The epilogue ops (bias, batch norm, activation, add) on x alone (no convolution)."""
    y = TensorDesc(x.dtype, x.dims)
    return FusedProblem(x, y, _epilogue(ops, y))


def _epilogue(ops: tuple, y: TensorDesc) -> Epilogue:
    bias, batchnorm, activation, add = ops
    return Epilogue(bias, batchnorm, activation, y.h * y.w if batchnorm is PER_ACTIVATION else 0, add)
