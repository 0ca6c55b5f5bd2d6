"""The toy family's descriptor: the scale of y = scale * x^2."""
from __future__ import annotations

from dataclasses import dataclass

from miopy.tensor import as_real


@dataclass(frozen=True)
class SquareDesc:
    """y = scale * x^2; scale is a per-call number (never compiled in)."""

    scale: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "scale", as_real(self.scale, "scale"))
