"""The heuristic ranking that fast find mode and immediate mode use when the find DB has no record.

It is deliberately small and explainable: an algorithm preference that depends on the problem's shape,
then registry order (most specialised first) within an algorithm, and the naive fallback always last.

- depthwise (groups == C, K a multiple of C): the depthwise solver first, then direct, then GEMM;
- 1x1 filters: GEMM first (the 1x1 solver precedes im2col in the registry), then direct, then Winograd;
- 3x3, stride 1, dilation 1 with C and K per group >= 16: Winograd first, then direct, then GEMM;
- anything else: direct, then GEMM (im2col), then Winograd.
Algorithms the table does not name come after the named ones and before naive.

Solvers written for one class of device (``device_class``: ConvCpuDirect, ConvCpuGemm on CPUs) apply only
there and come first wherever they apply: on a CPU the GPU-shaped tiles of the other families run several
times slower. Between them, GEMM first for backward-weights where its channels-last copy of x stays in a
core's cache (up to CPU_GEMM_WEIGHTS_BYTES, 16 channels or more: each work-item streams the whole copy),
direct first otherwise (benchmarks/results/cpu-pocl.json: 2-8x apart either side of that line).
"""
from __future__ import annotations

from collections.abc import Sequence

from ..solver import Solver
from .problem import ConvProblem, Direction

WINOGRAD_MIN_CHANNELS = 16
CPU_GEMM_WEIGHTS_BYTES = 1 << 20


def preference(problem: ConvProblem) -> tuple[tuple[str, ...], str]:
    """The algorithms in preferred order for problem's shape, and the rule that chose them."""
    p = problem
    if p.groups > 1 and p.groups == p.c and p.k % p.c == 0:
        return ("depthwise", "direct", "gemm", "winograd"), "depthwise: per-channel tiles first"
    if p.r == 1 and p.s == 1:
        return ("gemm", "direct", "winograd"), "1x1 filter: GEMM first"
    if ((p.r, p.s) == (3, 3) and (p.stride_h, p.stride_w) == (1, 1) and (p.dil_h, p.dil_w) == (1, 1)
            and min(p.c_per_group, p.k_per_group) >= WINOGRAD_MIN_CHANNELS):
        return ("winograd", "direct", "gemm"), f"3x3 stride 1 with C, K >= {WINOGRAD_MIN_CHANNELS}: Winograd first"
    return ("direct", "gemm", "winograd"), "general shape: direct first"


def cpu_gemm_first(problem: ConvProblem, gemm: Solver) -> bool:
    """Whether the CPU GEMM solver goes before the CPU direct one (backward-weights on a cached input)."""
    return (problem.direction is Direction.BACKWARD_WEIGHTS and problem.c_per_group >= 16
            and gemm.workspace_bytes(problem) <= CPU_GEMM_WEIGHTS_BYTES)


def rank(problem: ConvProblem, solvers: Sequence[Solver]) -> list[Solver]:
    """solvers (in registry order) sorted by the preference for problem; stable within an algorithm."""
    order, _ = preference(problem)
    cpu_gemm = next((s for s in solvers if getattr(s, "device_class", None) and s.algorithm == "gemm"), None)
    gemm_first = cpu_gemm is not None and cpu_gemm_first(problem, cpu_gemm)

    def score(solver: Solver) -> int:
        if getattr(solver, "device_class", None) is not None:
            return -2 if (solver.algorithm == "gemm") == gemm_first else -1
        if solver.algorithm == "naive":
            return len(order) + 1
        return order.index(solver.algorithm) if solver.algorithm in order else len(order)

    return sorted(solvers, key=score)
