"""miopenActivationMode_t (enum_member, the parser every family's mode enums share, lives in miopy.tensor)."""
from __future__ import annotations

import enum

from ..tensor import enum_member


class ActivationMode(enum.IntEnum):
    """miopenActivationMode_t: values are MIOpen's."""

    PASSTHRU = 0        # x
    LOGISTIC = 1        # 1 / (1 + e^-x)
    TANH = 2            # beta * tanh(alpha * x)
    RELU = 3            # max(0, x)
    SOFTRELU = 4        # log(1 + e^x)
    ABS = 5             # |x|
    POWER = 6           # (alpha + beta * x)^gamma, 0 where alpha + beta * x <= EPSILON
    CLIPPED_RELU = 7    # min(alpha, max(0, x))
    LEAKY_RELU = 8      # x > 0 ? x : alpha * x
    ELU = 9             # x > 0 ? x : alpha * (e^x - 1)
    HARDSWISH = 10      # x * min(1, max(0, alpha * x + beta)): miopy's, for ONNX (alpha = 1/6, beta = 1/2)
    CLAMP = 11          # min(alpha, max(beta, x)): miopy's, for ONNX's Clip (CLIPPED_RELU with beta as the floor)

    @classmethod
    def of(cls, value: ActivationMode | int | str, field: str = "mode") -> ActivationMode:
        """Accept a member, its int value or its name (any case); else BadParam(field)."""
        return enum_member(cls, value, field, "activation mode")
