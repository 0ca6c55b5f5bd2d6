"""Winograd backward-weights (weight gradient): the F(m x m, r x r) solvers' transforms and batched GEMM
(winograd.py, conv_winograd.h) run the other way round, four kernels over a workspace.

Forward computes y_t = A^T [(G g G^T) . (B^T d_t B)] A per output tile t, so the gradient of the
transformed filter is dU = sum_t (A dy_t A^T) . (B^T d_t B) and the weight gradient dw = G^T dU G:

1. ``wino_input_transform``: V^T[xi][t][c] = (B^T d B)[xi] for every input patch of x (the forward's pads);
2. ``wino_grad_output_transform``: M^T[xi][t][k] = (A dy A^T)[xi] for every m x m tile of dy;
3. ``wino_gemm``: ALPHA^2 GEMMs dU[xi] (K x C) = M^T[xi]^T V^T[xi], whose reduction over the
   N * ceil(P/m) * ceil(Q/m) tiles is cut into SPLIT chunks, each summed by its own work-groups into a
   partial dU in the workspace (in blocks of 64 or 16 tiles beside a compensated running total where a
   chunk is long: winograd.sum_block);
4. ``wino_grad_filter_transform``: the SPLIT partials added in a fixed order, then dw = G^T dU G.

Steps 1-3 run once per pass over at most PASS_BYTES of transformed tiles, each pass's GEMM adding into the
same partials, so the workspace does not grow with N*H*W.

Deterministic (no atomics); the blocks and the compensated adds keep the sums' rounding that of a short
sum whatever N*P*Q, but G^T amplifies it and the transforms' own rounding, so each solver states its
rounding (rounding_units) and is not applicable where its predicted error passes 1e-3 (accuracy_reason).
"""
from __future__ import annotations

import math

import numpy as np

from ...device import DeviceInfo, accurate_split
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, require_none, round_up
from ...tensor import FLOAT_BYTES
from ..problem import ConvProblem, Direction
from .winograd import (
    _FALLBACK_DEFAULTS,
    REDUCE_WG,
    TRANSFORM_WG,
    WinogradLayout,
    WinogradTiling,
    _ConvWinograd3x3,
    _gemm_launch,
    _input_launch,
)

SPLITS = (1, 2, 4, 8, 16, 32, 64)
FILL = 4   # GPU default: work-groups of the GEMM per compute unit, at least, where the split allows
UNIT_ROUNDOFF = 2.0 ** -24
MAX_PREDICTED_ERROR = 1e-3   # issue 16's backward-weights target against float64


class _ConvWinogradWrW(_ConvWinograd3x3):
    """Shared machinery of the Winograd backward-weights solvers (subclasses set tile, filter_size, file)."""

    directions = frozenset({Direction.BACKWARD_WEIGHTS})
    supports_epilogue = False
    grid = {**_ConvWinograd3x3.grid, "SPLIT": SPLITS}
    param_doc = {**_ConvWinograd3x3.param_doc,
                 "TILE_M": "GEMM block of output channels (dy's) per work-group",
                 "TILE_N": "GEMM block of input channels (x's) per work-group",
                 "WORK_N": "input channels per work-item (register block columns)",
                 "K_BLK": "tiles staged in local memory per step",
                 "SPLIT": "partial sums of dU over that many chunks of the tiles, then a fixed-order sum"}

    # rms error of dw over u * rms(dw) on long reductions (16-tile compensated blocks): rounding of the
    # transforms and of the sums, amplified by G^T (benchmarks/wrw_accuracy.py, docs/notes/performance.md)
    rounding_units = 3.5    # F(2x2,3x3): refused beyond 23M terms per weight

    def fallback_params(self) -> tuple[Params, ...]:
        return tuple({**p, "SPLIT": 1} for p in _FALLBACK_DEFAULTS)

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require_none(accuracy_reason(problem.reduction_length(), self.rounding_units))

    def invalid_reason(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason is not None:
            return reason
        plan = WinogradLayout.of(problem, self.tile)
        in_cp, out_cp, _ = plan.padded
        if out_cp % params["TILE_M"] or in_cp % params["TILE_N"]:
            return (f"TILE_M={params['TILE_M']}, TILE_N={params['TILE_N']} do not divide the padded channels "
                    f"({out_cp} out, {in_cp} in)")
        if params["SPLIT"] > plan.max_split:
            return (f"SPLIT={params['SPLIT']} > {plan.max_split} (chunks of at least 128 of a pass's "
                    f"{plan.reduction} tiles, partials within the workspace rule)")
        return None

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        plan = WinogradLayout.of(problem, self.tile)
        split = accurate_split(plan.reduction, SPLITS, plan.max_split)
        candidates = [{**p, "SPLIT": split} for p in self.fallback_params()]
        if dev.is_gpu:
            candidates = [*_gpu_defaults(plan, dev, split), *candidates]
        return next(dict(p) for p in candidates if self.is_valid(problem, p, dev))

    def workspace_bytes(self, problem: ConvProblem) -> int:
        return WinogradLayout.of(problem, self.tile).offsets[3] * FLOAT_BYTES

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        plan, file, split = WinogradLayout.of(problem, self.tile), self.transform_file, params["SPLIT"]
        tiling = WinogradTiling.of(params)
        launches = [launch for first in range(0, plan.tiles, plan.pass_tiles)
                    for launch in (_input_launch(plan, file, first), _grad_output_launch(plan, file, first),
                                   _gemm_launch(plan, tiling, split, accumulate=first > 0))]
        launches.append(_grad_filter_launch(plan, file, split))
        return Solution(self.id, dict(params), tuple(launches), self.workspace_bytes(problem))


def accuracy_reason(length: int, units: float) -> str | None:
    """Why a reduction of length terms per weight is too long for a weight gradient that rounds like units
    (its predicted rms error units * u * sqrt(length), on unit-variance inputs relative to the gradients'
    rms, passes 1e-3), or None."""
    predicted = units * UNIT_ROUNDOFF * math.sqrt(length)
    if predicted <= MAX_PREDICTED_ERROR:
        return None
    return (f"predicted fp32 error {predicted:.1e} over {length} terms per weight exceeds {MAX_PREDICTED_ERROR:g} "
            f"(transforms and sums round like {units:g} units; at most {max_reduction(units)} terms)")


def max_reduction(units: float) -> int:
    """The longest reduction (N*P*Q) whose predicted error units * u * sqrt(length) stays within 1e-3."""
    return int((MAX_PREDICTED_ERROR / (units * UNIT_ROUNDOFF)) ** 2)


def _gpu_defaults(plan: WinogradLayout, dev: DeviceInfo, split: int) -> tuple[Params, ...]:
    """GPU choices, best first: blocks of 128 channels where there are more than 64 (else 64), 256
    work-items of 8x8 or 4x4 sums; the split raised until the GEMM fills the device FILL times over (the
    K x C x ALPHA^2 blocks alone are few: 64 channels at F(2x2,3x3) are 16 work-groups)."""
    in_cp, out_cp, _ = plan.padded
    tile_m, tile_n = min(128 if plan.out_c > 64 else 64, out_cp), min(128 if plan.in_c > 64 else 64, in_cp)
    blocks = plan.alpha ** 2 * -(-plan.out_c // tile_m) * -(-plan.in_c // tile_n)
    while split < plan.max_split and blocks * split < FILL * dev.compute_units:
        split *= 2
    shape = {"TILE_M": tile_m, "TILE_N": tile_n, "WORK_M": max(4, tile_m // 16), "WORK_N": max(4, tile_n // 16),
             "K_BLK": 8 if max(tile_m, tile_n) == 128 else 16, "SPLIT": split}
    return (shape, {"TILE_M": 64, "TILE_N": 64, "WORK_M": 4, "WORK_N": 4, "K_BLK": 16, "SPLIT": split})


def _grad_output_launch(plan: WinogradLayout, file: str, first_tile: int) -> KernelLaunch:
    _, out_cp, tiles_p = plan.padded
    spec = KernelSpec.make(file, "wino_grad_output_transform", plan.transform_defines(), ("-cl-mad-enable",))
    return KernelLaunch(spec, (out_cp * tiles_p,), (TRANSFORM_WG,), (plan.out_role, "workspace", np.int32(first_tile)))


def _grad_filter_launch(plan: WinogradLayout, file: str, split: int) -> KernelLaunch:
    spec = KernelSpec.make(file, "wino_grad_filter_transform", {**plan.transform_defines(), "SPLIT": split},
                           ("-cl-mad-enable",))
    return KernelLaunch(spec, (round_up(plan.in_c, REDUCE_WG), plan.out_c), (REDUCE_WG, 1), ("workspace", "w"))


class ConvWinograd3x3F2WrW(_ConvWinogradWrW):
    """Winograd F(2x2, 3x3) backward-weights: 3x3, stride 1, dilation 1, padding 0-2, FP32 or FP16 (fp32
    transforms and sums).

    16 GEMMs of K x C over the N * ceil(P/2) * ceil(Q/2) tiles (2.25x fewer multiplies than a direct weight
    gradient), split over work-groups with a fixed-order second pass. The transforms' weights are 0, +-1 and
    +-1/2 (A and G^T), so it rounds little more than a direct sum; bound 2e-3 (the forward's), grown with the
    reduction length by the project's rule. Wins on 3x3 layers with many channels and large images (VGG),
    where the GEMM dominates; loses when C or K is small (transform traffic of 16 x (C + K) floats per 2x2
    tile). Not applicable: other filter sizes, strides or dilations, padding over 2, groups.
    """

    id = "ConvWinograd3x3F2WrW"
    tile = 2
    tolerance = 2e-3


class ConvWinograd3x3F4WrW(_ConvWinogradWrW):
    """Winograd F(4x4, 3x3) backward-weights: 3x3, stride 1, dilation 1, padding 0-2, FP32 or FP16.

    36 GEMMs of K x C over the N * ceil(P/4) * ceil(Q/4) tiles (4x fewer multiplies than direct) and 4x
    fewer tiles to transform than F2. A's entries reach 8 and G^T's 16/15, so the products summed are some
    10x larger than the inputs and it rounds more than F2; bound 5e-3 (the forward's), grown with the
    reduction length. Meant for the larger 3x3 layers (VGG at 28x28 and up); loses on small images (edge
    tiles) and few channels. Not applicable: other filter sizes, strides or dilations, padding over 2, groups.
    """

    id = "ConvWinograd3x3F4WrW"
    tile = 4
    tolerance = 5e-3
    rounding_units = 15.0   # refused beyond 1.25M terms per weight (docs/notes/performance.md)


class ConvWinograd5x5F2WrW(_ConvWinogradWrW):
    """Winograd F(2x2, 5x5) backward-weights: 5x5, stride 1, dilation 1, padding 0-4, FP32 or FP16.

    36 GEMMs of K x C over the N * ceil(P/2) * ceil(Q/2) tiles (2.8x fewer multiplies than direct), the
    transposed Toom-Cook matrices of ConvWinograd5x5F2; bound 5e-3. Meant for AlexNet conv2 and other 5x5
    layers with many channels. Not applicable: other filter sizes, strides, dilations, padding over 4, groups.
    """

    id = "ConvWinograd5x5F2WrW"
    tile = 2
    filter_size = 5
    transform_file = "conv_winograd_large.cl"
    tolerance = 5e-3
    # The 5x5 weight gradients' error sits in a few taps (G^T's last rows), so their largest hybrid error runs
    # several times the rms-based 16 units: their units are the H100's worst measured hybrid error over
    # u * sqrt(terms) (GoogLeNet 5x5 2.6e-4 at 6272 terms, AlexNet conv2 1.0e-3 at 93312, 16->32 channels at
    # 1M terms 2.4e-3: 55, 55, 39; benchmarks/results/h100-weak-fft.json, h100-wrw-accuracy.json)
    rounding_units = 55.0   # refused beyond 93k terms per weight (AlexNet conv2 at N=128 is just over)


class ConvWinograd5x5F3WrW(_ConvWinogradWrW):
    """Winograd F(3x3, 5x5) backward-weights: 5x5, stride 1, dilation 1, padding 0-4, FP32 or FP16.

    49 GEMMs over the N * ceil(P/3) * ceil(Q/3) tiles (4.6x fewer multiplies than direct); larger constants
    than F2 (A up to 4, G^T down to 1/60); bound 1e-2. Meant for 5x5 layers whose output divides into 3x3
    tiles (27x27: AlexNet conv2). Not applicable: other filter sizes, strides, dilations, padding over 4,
    groups.
    """

    id = "ConvWinograd5x5F3WrW"
    tile = 3
    filter_size = 5
    transform_file = "conv_winograd_large.cl"
    tolerance = 1e-2
    # measured hybrid errors over u * sqrt(terms): GoogLeNet 5x5 8.7e-4 (184), AlexNet-v2 conv2 3.5e-3 (192),
    # AlexNet conv2 2.5e-3 (137), 16->32 channels at 1M terms 1.8e-3 (30); the rms-based figure was 34
    rounding_units = 192.0   # refused beyond 7.6k terms per weight: GoogLeNet 5x5 (7x7) up to N=155, not AlexNet
