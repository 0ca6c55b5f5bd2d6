"""ConvCpuGemm: convolution as register-tiled GEMMs over channels-last copies, for CPU OpenCL devices."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...device import DeviceInfo, index_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, require, require_none, round_up
from ..problem import ConvProblem, Direction
from .common import ConvSolver

KERNEL_FILE = "conv_cpu_gemm.cl"
MAX_VW = 16               # the grid's widest vector: channel padding is sized for it
MAX_T = 12                # the grid's largest pixel tile: padded rows are sized for it
MAX_TILE_FLOATS = 128     # accumulator floats per work-item (16 AVX2 registers' worth)
PACK_WG = 8


@dataclass(frozen=True)
class Gemm:
    """The forward-shaped GEMM one direction runs: in (N x HI x WI x CI, channels-last, padded) times packed
    weights -> out (N x CO x PO x QO, NCHW), at strides SH SW and dilations DH DW."""

    ci: int
    co: int
    hi: int
    wi: int
    po: int
    qo: int
    top: int
    left: int
    flip: bool
    stride: tuple[int, int]


def forward_gemm(p: ConvProblem) -> Gemm:
    """Forward: x padded by the pads; backward-data at stride 1: dy padded by the filter's reach less the
    pads, with the filter rotated and its channel roles swapped (the forward of the transposed problem)."""
    rows = (MAX_T + (p.out_w if p.direction is Direction.FORWARD else p.in_w))
    if p.direction is Direction.FORWARD:
        return Gemm(p.c, p.k, (p.out_h - 1) * p.stride_h + (p.r - 1) * p.dil_h + 1,
                    (rows - 1) * p.stride_w + (p.s - 1) * p.dil_w + 1, p.out_h, p.out_w, p.pad_h, p.pad_w, False,
                    (p.stride_h, p.stride_w))
    reach_h, reach_w = (p.r - 1) * p.dil_h, (p.s - 1) * p.dil_w
    return Gemm(p.k, p.c, p.in_h + reach_h, rows + reach_w, p.in_h, p.in_w, reach_h - p.pad_h, reach_w - p.pad_w,
                True, (1, 1))


def weights_rows(p: ConvProblem) -> tuple[int, int]:
    """Backward-weights: rows and columns of x's padded channels-last copy."""
    return ((p.out_h - 1) * p.stride_h + (p.r - 1) * p.dil_h + 1, (p.out_w - 1) * p.stride_w + (p.s - 1) * p.dil_w + 1)


def _packed_elements(p: ConvProblem) -> tuple[int, int]:
    """Elements of the packed input and (forward, backward-data) the packed weights."""
    if p.direction is Direction.BACKWARD_WEIGHTS:
        hi, wi = weights_rows(p)
        return p.n * hi * wi * round_up(p.c, MAX_VW), 0
    g = forward_gemm(p)
    return p.n * g.hi * g.wi * g.ci, p.r * p.s * g.ci * round_up(g.co, MAX_VW)


class ConvCpuGemm(ConvSolver):
    """Convolution as GEMMs whose inner dimension is the input channels (forward; backward-data at stride 1
    as the forward of the transposed problem) or the N*P*Q output pixels (backward-weights), over a
    zero-padded channels-last copy of the input in the workspace (conv_cpu_gemm.cl). A work-item holds T
    pixels x VW output channels (forward) or T filters x VW input channels (backward-weights) in float
    vectors along channels, so small feature maps (7x7, 14x14) fill every lane, unlike ConvCpuDirect whose
    vectors run along rows; no local memory, work-group size left to the runtime.

    Applies to CPU devices only, groups = 1, packed tensors; backward-data at stride 1 only (ConvCpuDirect
    covers strided backward-data). Pays a channels-last copy of the input per call, so ConvCpuDirect usually
    wins on large feature maps.
    """

    id = "ConvCpuGemm"
    algorithm = "gemm"
    directions = frozenset(Direction)
    device_class = "CPU"
    grid = {"VW": (8, 16, 4), "T": (8, 4, 6, 12, 3, 2, 1)}
    param_doc = {"VW": "vector width along channels (output channels forward, input channels backward-weights)",
                 "T": "output pixels per work-item (backward-weights: filters per work-item)"}

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(self.device_class in str(dev.device_type),
                f"device type {dev.device_type} is not CPU (other devices keep their own solvers)")
        require(problem.groups == 1, "grouped convolution (ConvCpuDirect covers groups)")
        require(problem.is_packed, "tensors must be packed NCHW")
        require(problem.direction is not Direction.BACKWARD_DATA or (problem.stride_h, problem.stride_w) == (1, 1),
                "backward-data with stride > 1 (ConvCpuDirect covers it)")
        require_none(index_reason(*(d.element_span for d in (problem.x, problem.w, problem.y)),
                                  sum(_packed_elements(problem))))

    def invalid_reason(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason is not None:
            return reason
        vw, t = params["VW"], params["T"]
        weights = problem.direction is Direction.BACKWARD_WEIGHTS
        if weights and problem.k % t:
            return f"T={t} does not divide K={problem.k}"
        if t * vw > MAX_TILE_FLOATS:
            return f"tile of {t * vw} accumulators > {MAX_TILE_FLOATS}"
        channels = problem.c if weights else forward_gemm(problem).co
        if vw > min(self.grid["VW"]) and round_up(channels, vw) > 2 * channels:
            return f"VW={vw} covers more than twice the {channels} channels"
        return None

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        """16 channels x 4 pixels (or filters) where there are 16 channels or more, else 8 x 8 (8 AVX2
        registers of accumulators either way); backward-weights takes the largest such T that divides K.
        Measured on PoCL: 16 x 4 and 8 x 8 within 15% of the best grid point on ResNet / VGG layers."""
        weights = problem.direction is Direction.BACKWARD_WEIGHTS
        channels = problem.c if weights else forward_gemm(problem).co
        vw = next(v for v in (16, 8, 4) if round_up(channels, v) <= 1.5 * channels or v == 4)
        t = max(x for x in self.grid["T"] if x * vw <= 64 and (not weights or problem.k % x == 0))
        return {"VW": vw, "T": t}

    def workspace_bytes(self, problem: ConvProblem) -> int:
        return problem.dtype.itemsize * sum(_packed_elements(problem))

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        if problem.direction is Direction.BACKWARD_WEIGHTS:
            launches = _weights_launches(problem, params)
        else:
            launches = _forward_launches(problem, params)
        return Solution(self.id, dict(params), launches, self.workspace_bytes(problem))


def _pack_input(p: ConvProblem, role: str, channels: int, padded_channels: int, src_hw: tuple[int, int],
                dst_hw: tuple[int, int], top: int, left: int) -> KernelLaunch:
    defines = {"PACK_INPUT": 1, "PLANES_N": p.n, "CH": channels, "CH_P": padded_channels, "SRC_H": src_hw[0],
               "SRC_W": src_hw[1], "DST_H": dst_hw[0], "DST_W": dst_hw[1], "TOP": top, "LEFT": left, **p.dtype.defines}
    spec = KernelSpec.make(KERNEL_FILE, "cpu_pack_nhwc", defines)
    return KernelLaunch(spec, (round_up(p.n * dst_hw[0], PACK_WG),), (PACK_WG,), (role, "workspace", np.int32(0)))


def _forward_launches(p: ConvProblem, params: Params) -> tuple[KernelLaunch, ...]:
    g, vw, pt = forward_gemm(p), params["VW"], params["T"]
    in_role, out_role = ("x", "y") if p.direction is Direction.FORWARD else ("y", "x")
    in_hw = (p.in_h, p.in_w) if p.direction is Direction.FORWARD else (p.out_h, p.out_w)
    pack = _pack_input(p, in_role, g.ci, g.ci, in_hw, (g.hi, g.wi), g.top, g.left)
    co_p, wp_off = round_up(g.co, MAX_VW), p.n * g.hi * g.wi * g.ci
    wdefs = {"PACK_WEIGHTS": 1, "K": p.k, "C": p.c, "R": p.r, "S": p.s, "CO_P": co_p, "FLIP": int(g.flip),
             **p.dtype.defines}
    wspec = KernelSpec.make(KERNEL_FILE, "cpu_pack_weights", wdefs)
    wpack = KernelLaunch(wspec, (round_up(p.r * p.s * g.ci, PACK_WG),), (PACK_WG,),
                         ("w", "workspace", np.int32(wp_off)))
    defines = {"N": p.n, "CI": g.ci, "CO": g.co, "R": p.r, "S": p.s, "HI": g.hi, "WI": g.wi, "PO": g.po,
               "QO": g.qo, "SH": g.stride[0], "SW": g.stride[1], "DH": p.dil_h, "DW": p.dil_w, "CO_P": co_p,
               "VW": vw, "PT": pt, **p.dtype.defines}
    spec = KernelSpec.make(KERNEL_FILE, "cpu_gemm_fwd", defines, ("-cl-mad-enable",))
    size = (-(-g.qo // pt), g.po, p.n * co_p // vw)
    run = KernelLaunch(spec, size, None, ("workspace", "workspace", out_role, np.int32(0), np.int32(wp_off)))
    return pack, wpack, run


def _weights_launches(p: ConvProblem, params: Params) -> tuple[KernelLaunch, ...]:
    vw, kt = params["VW"], params["T"]
    hi, wi = weights_rows(p)
    c_p = round_up(p.c, MAX_VW)
    pack = _pack_input(p, "x", p.c, c_p, (p.in_h, p.in_w), (hi, wi), p.pad_h, p.pad_w)
    defines = {"N": p.n, "C": p.c, "K": p.k, "R": p.r, "S": p.s, "HI": hi, "WI": wi, "P": p.out_h, "Q": p.out_w,
               "SH": p.stride_h, "SW": p.stride_w, "DH": p.dil_h, "DW": p.dil_w, "C_P": c_p, "VW": vw, "KT": kt,
               **p.dtype.defines}
    spec = KernelSpec.make(KERNEL_FILE, "cpu_gemm_bwd_weights", defines, ("-cl-mad-enable",))
    size = (-(-p.c // vw), p.r * p.s, p.k // kt)
    return pack, KernelLaunch(spec, size, None, ("workspace", "w", "y", np.int32(0)))
