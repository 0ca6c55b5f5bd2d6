"""How far a result may be from float64 and still count as right: one rule for find's accuracy check,
tuning's final check, ``miopy-driver -V`` and the tests.

The measure is Boda's hybrid error max |a - e| / (1 + |e|) against the float64 answer e (see
miopy.reference.max_error). The bound starts from the storage type and the math mode, is raised to a
solver's own declared bound (Winograd's transforms round more than a direct sum; a solver states its bound
for fp32 in strict mode and it scales with the type), and grows like a random walk of rounding errors with
the number of terms summed into each output once that passes BASE_REDUCTION.
"""
from __future__ import annotations

from .tensor import DataType

STRICT = "strict"
# Base bound for a direct sum in each storage type (fp32: Boda's 1e-3; fp16 keeps ~11 significant bits).
DTYPE_BASE = {DataType.FLOAT32: 1e-3, DataType.FLOAT16: 1e-2}
# Math modes that round operands before multiplying (TF32 keeps 10 mantissa bits, like fp16).
MATH_MODE_BASE = {STRICT: 0.0, "tf32": 1e-2}
# Sums up to this long keep the base bound; longer ones grow it like sqrt(length / BASE_REDUCTION).
BASE_REDUCTION = 1024


def tolerance(dtype: DataType, reduction_length: int = 1, math_mode: str | None = STRICT,
              solver_bound: float | None = None) -> float:
    """The largest hybrid error a result of this dtype and math mode, summing reduction_length terms per
    output, may have against float64. solver_bound is a solver's own bound for fp32 in strict mode (None:
    a direct sum's); it scales with the dtype's base. An unknown math mode is treated as the loosest known."""
    fp32 = DTYPE_BASE[DataType.FLOAT32]
    base = DTYPE_BASE.get(dtype, max(DTYPE_BASE.values()))
    mode = MATH_MODE_BASE.get(math_mode or STRICT, max(MATH_MODE_BASE.values()))
    base = max(base, mode)
    if solver_bound is not None:
        base = max(base, solver_bound * base / fp32)
    return base * max(1.0, (max(reduction_length, 1) / BASE_REDUCTION) ** 0.5)


def problem_tolerance(problem, solver_bound: float | None = None) -> float:
    """tolerance() for a family's problem: its dtype, reduction_length() and math_mode (strict when the
    problem has none)."""
    return tolerance(problem.dtype, problem.reduction_length(), getattr(problem, "math_mode", STRICT), solver_bound)
