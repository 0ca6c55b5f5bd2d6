"""The fused problem: x -> [forward convolution] -> epilogue (bias, batch-norm inference, residual add of z,
activation) -> y, as a fusion plan describes it."""
from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..activation.problem import CHECK_ALPHA, CHECK_BETA, CHECK_GAMMA
from ..batchnorm import BatchNormMode
from ..conv.problem import ConvProblem
from ..solver import Registry
from ..tensor import STRICT, DataType, TensorDesc
from .epilogue import ACTIVATION_ROLES, BATCHNORM_ROLES, Epilogue

# The per-call values find-style timing, tuning and the tests run with (the reference hook reads them).
CHECK_EPSILON, CHECK_Z_ALPHA = 1e-5, 0.75


class Direction(enum.IntEnum):
    FORWARD = 1   # fusion plans run forward (inference) only


@dataclass(frozen=True)
class FusedProblem:
    """What a fusion plan computes: x -> [forward convolution] -> epilogue -> y.

    Roles: x, y; w with a convolution; bias (1 x K x 1 x 1, the data's dtype); bn_scale, bn_shift, bn_mean,
    bn_var (1 x C x 1 x 1 spatial, 1 x C x H x W per-activation, FP32); z (y's descriptor) for the residual add.
    """

    registry: ClassVar[Registry]
    direction: ClassVar[Direction] = Direction.FORWARD

    x: TensorDesc
    y: TensorDesc
    epilogue: Epilogue
    conv: ConvProblem | None = None

    @property
    def dtype(self) -> DataType:
        return self.x.dtype

    @property
    def math_mode(self) -> str:
        return self.conv.math_mode if self.conv is not None else STRICT

    def key(self) -> str:
        if self.conv is not None:
            base = self.conv.key()
        else:
            base = "x".join(map(str, self.x.dims)) + f"-{self.x.dtype.value}"
            if not (self.x.is_packed and self.y.is_packed):
                base += "-s" + "_".join(",".join(map(str, d.strides)) for d in (self.x, self.y))
        return f"{base}+{self.epilogue.key()}"

    def describe(self) -> str:
        """The op sequence in words, e.g. "conv -> bias -> activation(RELU)"."""
        ep = self.epilogue
        steps = (["conv"] if self.conv is not None else []) + (["bias"] if ep.bias else [])
        steps += [f"batchnorm({ep.batchnorm.name})"] if ep.batchnorm is not None else []
        steps += ["add(z)"] if ep.add else []
        steps += [f"activation({ep.activation.name})"] if ep.activation is not None else []
        return " -> ".join(steps)

    def tensors(self) -> Mapping[str, TensorDesc]:
        roles = {"x": self.x, "y": self.y}
        if self.conv is not None:
            roles["w"] = self.conv.w
        _, c, h, w = self.y.dims
        if self.epilogue.bias:
            roles["bias"] = TensorDesc(self.dtype, (1, c, 1, 1))
        if self.epilogue.batchnorm is not None:
            per_element = self.epilogue.batchnorm is BatchNormMode.PER_ACTIVATION
            param = TensorDesc(DataType.FLOAT32, (1, c, h, w) if per_element else (1, c, 1, 1))
            roles.update(dict.fromkeys(BATCHNORM_ROLES[:4], param))
        if self.epilogue.add:
            roles["z"] = self.y
        return roles

    def outputs(self) -> tuple[str, ...]:
        return ("y",)

    def reduction_length(self) -> int:
        return self.conv.reduction_length() if self.conv is not None else 1

    def flops(self) -> float:
        return self.conv.flops() if self.conv is not None else float(self.y.element_count)

    def positive_roles(self) -> tuple[str, ...]:
        """Inputs random data must keep positive: the batch-norm variance."""
        return ("bn_var",)

    def scalars(self) -> dict[str, np.float32]:
        """The epilogue's per-call numbers with the values find-style timing and the tests bind."""
        values: dict[str, float] = {}
        if self.epilogue.batchnorm is not None:
            values["bn_epsilon"] = CHECK_EPSILON
        if self.epilogue.add:
            values["z_alpha"] = CHECK_Z_ALPHA
        if self.epilogue.activation is not None:
            values.update(zip(ACTIVATION_ROLES, (CHECK_ALPHA, CHECK_BETA, CHECK_GAMMA)))
        return {role: np.float32(value) for role, value in values.items()}
