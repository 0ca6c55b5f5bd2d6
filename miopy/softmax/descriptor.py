"""miopenSoftmaxAlgorithm_t, miopenSoftmaxMode_t and the softmax descriptor (algorithm + mode)."""
from __future__ import annotations

import enum
from dataclasses import dataclass

from ..tensor import TensorDesc, enum_member


class SoftmaxAlgorithm(enum.IntEnum):
    """miopenSoftmaxAlgorithm_t: values are MIOpen's."""

    FAST = 0        # exp(x) / sum exp(x): no max subtracted, overflows for logits above ~88
    ACCURATE = 1    # exp(x - max) / sum exp(x - max)
    LOG = 2         # x - max - log(sum exp(x - max))

    @classmethod
    def of(cls, value: SoftmaxAlgorithm | int | str, field: str = "algorithm") -> SoftmaxAlgorithm:
        return enum_member(cls, value, field, "softmax algorithm")


class SoftmaxMode(enum.IntEnum):
    """miopenSoftmaxMode_t: values are MIOpen's."""

    INSTANCE = 0    # over C x H x W, per image
    CHANNEL = 1     # over C, per (n, h, w)

    @classmethod
    def of(cls, value: SoftmaxMode | int | str, field: str = "mode") -> SoftmaxMode:
        return enum_member(cls, value, field, "softmax mode")


@dataclass(frozen=True)
class SoftmaxDesc:
    """A softmax: algorithm and mode (MIOpen's miopenSetSoftmaxDescriptor without alpha / beta, which the
    calls take). Hashable; compares by value."""

    algorithm: SoftmaxAlgorithm = SoftmaxAlgorithm.ACCURATE
    mode: SoftmaxMode = SoftmaxMode.CHANNEL

    def __init__(self, algorithm=SoftmaxAlgorithm.ACCURATE, mode=SoftmaxMode.CHANNEL):
        object.__setattr__(self, "algorithm", SoftmaxAlgorithm.of(algorithm))
        object.__setattr__(self, "mode", SoftmaxMode.of(mode))

    def rows(self, desc: TensorDesc) -> tuple[int, int]:
        """(number of rows, row length) the softmax reduces over for tensors of desc's dims."""
        n, c, h, w = desc.dims
        return (n, c * h * w) if self.mode is SoftmaxMode.INSTANCE else (n * h * w, c)
