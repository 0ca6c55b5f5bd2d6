"""How far a result may be from float64 and still count as right: one rule for find's accuracy check,
tuning's final check, ``miopy-driver -V`` and the tests.

The measure is Boda's hybrid error max |a - e| / (1 + |e|) against the float64 answer e computed from the
same (already rounded) inputs (max_error). The bound is the stored output's rounding (the
dtype's unit roundoff: 2^-11 for FP16) plus the arithmetic's bound: Boda's 1e-3 for an fp32 sum, or a
solver's own (Winograd's transforms round more), raised to the math mode's (TF32 rounds both operands of
each product to 10 mantissa bits), growing like a random walk of rounding errors with the number of terms
summed into each output once that passes BASE_REDUCTION. See docs/guide/fp16.md and docs/guide/find_and_tuning.md.
"""
from __future__ import annotations

import numpy as np

from .tensor import STRICT, DataType

# Boda's bound for an fp32 sum's hybrid error.
FP32_BOUND = 1e-3
# The arithmetic's bound under each math mode (products of operands rounded to TF32 keep ~3 decimal digits).
MATH_MODE_BOUND = {STRICT: FP32_BOUND, "tf32": 1e-2}
# Sums up to this long keep the base bound; longer ones grow it like sqrt(length / BASE_REDUCTION).
BASE_REDUCTION = 1024


def tolerance(dtype: DataType, reduction_length: int = 1, math_mode: str | None = STRICT,
              solver_bound: float | None = None) -> float:
    """The largest hybrid error a result stored as dtype, computed under math_mode and summing
    reduction_length terms per output, may have against float64. solver_bound is a solver's own bound for
    its fp32 arithmetic (None: a direct sum's); an unknown math mode counts as the loosest known."""
    bound = max(solver_bound or FP32_BOUND, MATH_MODE_BOUND.get(math_mode or STRICT, max(MATH_MODE_BOUND.values())))
    return dtype.unit_roundoff + bound * max(1.0, (max(reduction_length, 1) / BASE_REDUCTION) ** 0.5)


def problem_tolerance(problem, solver_bound: float | None = None) -> float:
    """tolerance() for a family's problem: its dtype, reduction_length() and math_mode (strict when the
    problem has none)."""
    return tolerance(problem.dtype, problem.reduction_length(), getattr(problem, "math_mode", STRICT), solver_bound)


def max_error(actual, expected) -> float:
    """Largest |actual - expected| / (1 + |expected|): the hybrid relative/absolute error of Boda."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if actual.size == 0:
        return 0.0
    err = np.abs(actual - expected) / (1.0 + np.abs(expected))
    return float(np.nan_to_num(err, nan=np.inf).max())
