"""The heuristic ranking that fast find mode and immediate mode use when the find DB has no record.

It is deliberately small and explainable: an algorithm preference that depends on the problem's shape,
then registry order (most specialised first) within an algorithm, and the naive fallback always last.

- depthwise (groups == C, K a multiple of C): the depthwise solver first, then direct, then GEMM;
- 1x1 filters: GEMM first (the 1x1 solver precedes im2col in the registry), then direct, then Winograd;
- 3x3, stride 1, dilation 1 with C and K per group >= 16: Winograd first, then direct, then GEMM
  (backward-weights: the Winograd weight gradients, F(2x2,3x3) before F(4x4,3x3), the more accurate);
- 5x5, stride 1, dilation 1 with C and K per group >= 32: FFT first, then Winograd, in every direction
  where the padded planes take a 32-point FFT (AlexNet conv2 at 27x27: ConvFFT measured 1.5-2x faster than
  Winograd F(3x3,5x5) in each direction on the H100, and rounds less); otherwise Winograd (F(3x3,5x5)
  before F(2x2,5x5)) first, except backward-weights: direct first (the 5x5 weight gradients' hybrid error is
  4-10x direct's on long reductions), then Winograd;
- anything else: direct, then GEMM (im2col), then Winograd.
Algorithms the table does not name come after the named ones and before naive. Tensor-core solvers (which
are candidates only where they apply: NVIDIA, fp16 data or math mode "tf32") come first: their peak is
several times the fp32 pipes'. Solvers written for one class of device (``device_class``: ConvCpuDirect,
ConvCpuGemm on CPUs) apply only there and come first wherever they apply: on a CPU the GPU-shaped tiles of
the other families run several times slower. Between the two, GEMM first for backward-weights where its
channels-last copy of x stays in a core's cache (up to CPU_GEMM_WEIGHTS_BYTES, 16 channels or more: each
work-item streams the whole copy), direct first otherwise (benchmarks/results/cpu-pocl.json: 2-17x apart
on either side of that line).

When a model trained on find records serves the device (miopy.conv.heuristic_model: shipped per device
family, or MIOPY_HEURISTIC_MODEL), it reorders the solvers it knows by predicted slowdown within the places
this rule gives them, and the others keep this rule's places; with no model for the device, or a model file
that cannot be read, this rule ranks alone.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..device import DeviceInfo
from ..solver import Solver
from . import heuristic_model
from .geometry import plane_size
from .problem import ConvProblem, Direction

WINOGRAD_MIN_CHANNELS = 16
WINOGRAD_5X5_MIN_CHANNELS = 32
CPU_GEMM_WEIGHTS_BYTES = 1 << 20
FFT_FIRST_PLANE = 32   # 5x5 layers whose padded planes need a 32-point FFT (AlexNet's 27x27): FFT first


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
    if ((p.r, p.s) == (5, 5) and (p.stride_h, p.stride_w) == (1, 1) and (p.dil_h, p.dil_w) == (1, 1)
            and min(p.c_per_group, p.k_per_group) >= WINOGRAD_5X5_MIN_CHANNELS):
        if p.groups == 1 and plane_size(p) == FFT_FIRST_PLANE:   # AlexNet conv2: 1.5-2x Winograd's speed
            return ("fft", "winograd", "direct", "gemm"), "5x5 stride 1 on 32x32 FFT planes: FFT first"
        if p.direction is Direction.BACKWARD_WEIGHTS:   # 5x5 weight gradients round 4-10x more than direct
            return ("direct", "winograd", "gemm"), "5x5 backward-weights: direct first (Winograd's error)"
        return ("winograd", "direct", "gemm"), f"5x5 stride 1 with C, K >= {WINOGRAD_5X5_MIN_CHANNELS}: Winograd first"
    return ("direct", "gemm", "winograd"), "general shape: direct first"


def cpu_gemm_first(problem: ConvProblem, gemm: Solver) -> bool:
    """Whether the CPU GEMM solver goes before the CPU direct one (backward-weights on a cached input)."""
    return (problem.direction is Direction.BACKWARD_WEIGHTS and problem.c_per_group >= 16
            and gemm.workspace_bytes(problem) <= CPU_GEMM_WEIGHTS_BYTES)


def rank(problem: ConvProblem, solvers: Sequence[Solver], dev: DeviceInfo | None = None) -> list[Solver]:
    """solvers in the order to try on dev: by dev's model where one serves it, else by the shape rule."""
    by_shape = shape_rank(problem, solvers)
    model = heuristic_model.model_for(dev.name) if dev is not None else None
    if model is None:
        return by_shape
    return heuristic_model.rank_by_model(model, problem, by_shape)


def shape_rank(problem: ConvProblem, solvers: Sequence[Solver]) -> list[Solver]:
    """solvers (in registry order) sorted by the shape rule's preference; stable within an algorithm."""
    order, _ = preference(problem)
    cpu_gemm = next((s for s in solvers if getattr(s, "device_class", None) and s.algorithm == "gemm"), None)
    gemm_first = cpu_gemm is not None and cpu_gemm_first(problem, cpu_gemm)

    def score(solver: Solver) -> int:
        if getattr(solver, "device_class", None) is not None:
            return -2 if (solver.algorithm == "gemm") == gemm_first else -1
        if getattr(solver, "tensor_cores", False):
            return -1
        if solver.algorithm == "naive":
            return len(order) + 1
        return order.index(solver.algorithm) if solver.algorithm in order else len(order)

    return sorted(solvers, key=score)
