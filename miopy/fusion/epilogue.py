"""The epilogue a fused kernel applies before storing each output: bias, batch-norm inference, the residual
add of a second tensor z (MIOpen's "z" term), activation.

An ``Epilogue`` is what solvers receive through the hook ``solution(problem, params, epilogue)``: its
``defines()`` select the structure in ``kernels/fused_epilogue.h`` and its ``args`` are the role names of
the extra kernel arguments, in the order the header declares them. Buffers ("bias", "bn_scale", ...) and
numbers ("activ_alpha", "bn_epsilon", ...) are both bound by role at execute time, so new argument values
never recompile: only the structure is compiled in.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..activation import ActivationMode
from ..activation.reference import forward_reference
from ..batchnorm import BatchNormMode
from ..errors import check

BIAS_ROLES = ("bias",)
BATCHNORM_ROLES = ("bn_scale", "bn_shift", "bn_mean", "bn_var", "bn_epsilon")
ADD_ROLES = ("z", "z_alpha")
ACTIVATION_ROLES = ("activ_alpha", "activ_beta", "activ_gamma")


_FUSE_BN = {BatchNormMode.SPATIAL: 1, BatchNormMode.PER_ACTIVATION: 2}   # the header's FUSE_BN values


@dataclass(frozen=True)
class Epilogue:
    """Which ops follow the value (in this order: bias, batch norm, residual add, activation), and their modes.

    plane is the number of elements per channel plane (P*Q of a convolution's output); only
    per-activation batch norm, whose operands are per element, needs it. add: v += z_alpha * z with z a
    tensor of the output's layout.
    """

    bias: bool = False
    batchnorm: BatchNormMode | None = None
    activation: ActivationMode | None = None
    plane: int = 0
    add: bool = False

    def __post_init__(self):
        per_activation = self.batchnorm is BatchNormMode.PER_ACTIVATION
        check(not per_activation or self.plane > 0, "plane", "per-activation batch norm needs the plane size")

    @property
    def ops(self) -> frozenset[str]:
        """The op names present: a subset of {"bias", "batchnorm", "add", "activation"}."""
        present = {"bias": self.bias, "batchnorm": self.batchnorm is not None, "add": self.add,
                   "activation": self.activation is not None}
        return frozenset(name for name, on in present.items() if on)

    def defines(self) -> dict[str, int]:
        """-D defines for fused_epilogue.h (structure only; never a number that changes per call)."""
        defines = {"MIOPY_FUSED": 1, "FUSE_BIAS": int(self.bias),
                   "FUSE_BN": _FUSE_BN[self.batchnorm] if self.batchnorm is not None else 0,
                   "FUSE_ACTIV": int(self.activation is not None)}
        if self.add:
            defines["FUSE_ADD"] = 1
        if self.batchnorm is BatchNormMode.PER_ACTIVATION:
            defines["FUSE_PLANE"] = self.plane
        if self.activation is not None:
            defines["ACTIV_MODE"] = int(self.activation)
        return defines

    @property
    def args(self) -> tuple[str, ...]:
        """Role names of the extra kernel arguments, in MIOPY_EPILOGUE_PARAMS order."""
        return ((BIAS_ROLES if self.bias else ()) + (BATCHNORM_ROLES if self.batchnorm is not None else ())
                + (ADD_ROLES if self.add else ()) + (ACTIVATION_ROLES if self.activation is not None else ()))

    def key(self) -> str:
        """Readable and unique per structure, e.g. "bias+bn_spatial+add+activ_relu"."""
        parts = ["bias"] if self.bias else []
        if self.batchnorm is not None:
            parts.append(f"bn_{self.batchnorm.name.lower()}")
            if self.batchnorm is BatchNormMode.PER_ACTIVATION:
                parts[-1] += f"@{self.plane}"
        if self.add:
            parts.append("add")
        if self.activation is not None:
            parts.append(f"activ_{self.activation.name.lower()}")
        return "+".join(parts) or "none"


def apply_reference(epilogue: Epilogue, value: np.ndarray, operands: Mapping[str, Any]) -> np.ndarray:
    """The epilogue in float64 on value (N, C, H, W); operands maps the roles of epilogue.args to arrays
    (bias and spatial batch-norm operands of C elements, per-activation ones of C*H*W, z of value's shape)
    and numbers.
    """
    out = np.asarray(value, np.float64)
    channels, plane_shape = out.shape[1], out.shape[2:]

    def operand(role: str, per_element: bool) -> np.ndarray:
        shape = (1, channels, *plane_shape) if per_element else (1, channels, 1, 1)
        return np.asarray(operands[role], np.float64).reshape(shape)

    if epilogue.bias:
        out = out + operand("bias", False)
    if epilogue.batchnorm is not None:
        per_element = epilogue.batchnorm is BatchNormMode.PER_ACTIVATION
        scale, shift, mean, var = (operand(r, per_element) for r in BATCHNORM_ROLES[:4])
        out = scale * (out - mean) / np.sqrt(var + float(operands["bn_epsilon"])) + shift
    if epilogue.add:
        out = out + float(operands["z_alpha"]) * np.asarray(operands["z"], np.float64).reshape(out.shape)
    if epilogue.activation is not None:
        out = forward_reference(epilogue.activation, out, *(float(operands[r]) for r in ACTIVATION_ROLES))
    return out
