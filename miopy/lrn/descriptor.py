"""miopenLRNMode_t and the LRN descriptor: mode, window size n, alpha, beta, k (and the window's offset)."""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

from ..errors import BadParam, check
from ..tensor import TensorDesc, as_int, enum_member


class LRNMode(enum.IntEnum):
    """miopenLRNMode_t: values are MIOpen's."""

    WITHIN_CHANNEL = 0   # an n x n spatial window in each channel, alpha / n^2
    CROSS_CHANNEL = 1    # n neighbouring channels at each pixel, alpha / n

    @classmethod
    def of(cls, value: LRNMode | int | str, field: str = "mode") -> LRNMode:
        """A member, its int value or its name (any case; MIOpenDriver's within / cross too)."""
        aliases = {"WITHIN": cls.WITHIN_CHANNEL, "CROSS": cls.CROSS_CHANNEL}
        if isinstance(value, str) and value.upper() in aliases:
            return aliases[value.upper()]
        return enum_member(cls, value, field, "LRN mode")


@dataclass(frozen=True, eq=False)
class LRNDesc:
    """LRN (MIOpen's miopenSetLRNDescriptor): scale = k + alpha / area * sum of x^2 over the window,
    y = x * scale^-beta, area n (cross-channel) or n * n (within-channel).

    The window spans `pre` elements before the centre and n - 1 - pre after, zero outside the tensor;
    pre defaults to MIOpen's and ONNX's (n - 1) // 2 (PyTorch's local_response_norm uses n // 2: the two
    differ for even n). k must be positive and alpha non-negative, so the scale is positive.
    Hashable; compares by value.
    """

    mode: LRNMode
    n: int
    alpha: float
    beta: float
    k: float
    pre: int
    _hash: int = field(init=False, repr=False, compare=False)

    def __init__(self, mode, n: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0, pre: int | None = None):
        size = as_int(n, "n")
        check(size >= 1, "n", f"must be at least 1, got {size}")
        values = {name: _finite(v, name) for name, v in (("alpha", alpha), ("beta", beta), ("k", k))}
        check(values["alpha"] >= 0, "alpha", f"must be non-negative, got {alpha}")
        check(values["k"] > 0, "k", f"must be positive (the scale's floor), got {k}")
        before = (size - 1) // 2 if pre is None else as_int(pre, "pre")
        check(0 <= before < size, "pre", f"must be in [0, {size}), got {before}")
        items = (LRNMode.of(mode), size, values["alpha"], values["beta"], values["k"], before)
        for name, value in zip(("mode", "n", "alpha", "beta", "k", "pre"), items):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_hash", hash(items))

    def _items(self) -> tuple:
        return (self.mode, self.n, self.alpha, self.beta, self.k, self.pre)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, LRNDesc):
            return NotImplemented
        return self._hash == other._hash and self._items() == other._items()

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        return (LRNDesc, self._items())

    @property
    def post(self) -> int:
        """Window elements after the centre."""
        return self.n - 1 - self.pre

    @property
    def area(self) -> int:
        return self.n if self.mode is LRNMode.CROSS_CHANNEL else self.n * self.n

    def workspace_bytes(self, y_desc: TensorDesc) -> int:
        """Bytes of the scale a forward with do_backward saves for the backward (miopenLRNGetWorkSpaceSize):
        one element of the data type per output element."""
        check(isinstance(y_desc, TensorDesc), "y_desc", "must be a TensorDesc")
        return y_desc.element_count * y_desc.dtype.itemsize


def _finite(value, field: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise BadParam(field, f"expected a number, got {value!r}") from None
    check(math.isfinite(number) and not isinstance(value, bool), field, f"must be a finite number, got {value!r}")
    return number
