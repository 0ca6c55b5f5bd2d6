"""MIOpen's dropout descriptor: the rate (with the threshold and scale the kernels take), the seed, the flags and
the RNG state buffer."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import BadParam
from ..tensor import as_real

SEED_LIMIT = 2**64


def rate_scalars(dropout, field_name: str = "dropout") -> tuple[np.uint64, np.float32]:
    """(threshold, scale) of a dropout rate p in [0, 1]: a word is kept when >= round(p * 2^32) (2^32 at
    p = 1 keeps nothing); kept values are scaled by 1 / (1 - p) (0 at p = 1)."""
    p = as_real(dropout, field_name)
    if not 0.0 <= p <= 1.0:
        raise BadParam(field_name, f"must be in [0, 1], got {dropout!r}")
    return np.uint64(min(round(p * 2.0**32), 2**32)), np.float32(0.0 if p == 1.0 else 1.0 / (1.0 - p))


@dataclass(frozen=True, eq=False)
class DropoutDescriptor:
    """MIOpen's dropout descriptor: the rate, the seed, the flags and the RNG state buffer it uses."""

    dropout: float
    seed: int
    use_mask: bool
    state_evo: bool
    states: Any
    threshold: np.uint64 = field(init=False, repr=False)
    scale: np.float32 = field(init=False, repr=False)

    def __post_init__(self):
        threshold, scale = rate_scalars(self.dropout)
        object.__setattr__(self, "threshold", threshold)
        object.__setattr__(self, "scale", scale)
