"""Winograd F(2x2,3x3) and F(4x4,3x3) solvers: four kernels over a workspace.

1. ``wino_filter_transform``: U = G g G^T for every filter pair (the 180-degree rotation and channel swap
   of backward-data happen in its addressing);
2. ``wino_input_transform``: V = B^T d B for every (ALPHA x ALPHA input patch, channel);
3. ``wino_gemm`` (conv_winograd_gemm.cl): ALPHA^2 independent GEMMs M[xi] = U[xi]^T V[xi], (out channels x
   in channels) times (in channels x tiles), tiled through local memory and register-blocked;
4. ``wino_output_transform``: y = A^T M A per tile, clipped at the edges, with the epilogue hook.

The weight gradients (winograd_wrw.py) reuse the layout, the input transform and the GEMM the other way
round: WinogradLayout's backward-weights form lays V^T and M^T out by tiles and adds the partial dU.

Split rather than fused: each stage is one coalesced pass or a plain GEMM, the GEMM is tunable on its own
and reaches GEMM speed, and correctness is easy to reason about. The price is the traffic through the
workspace (V and M are written once and read once), which a fused kernel would avoid at the cost of a
much harder kernel.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, TypeVar

import numpy as np

from ...device import (
    SPLIT_WORKSPACE_CAP,
    DeviceInfo,
    index_reason,
    local_memory_reason,
    work_group_reason,
)
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, ceil_div, require, require_none, round_up
from ...tensor import FLOAT_BYTES, DataType
from ..problem import ConvProblem, Direction
from .common import ConvSolver

MAX_TILE = 128        # largest TILE_M / TILE_N of the grid: workspace padding, so it never depends on params
MAX_K_BLK = 16        # largest K_BLK of the grid: the reduction axis is padded (with zeros) to a multiple
TRANSFORM_WG = 64     # work-group size of the three transform kernels
REGISTERS_PER_ITEM = 255       # most 32-bit registers one work-item may use (NVIDIA and AMD GPUs)
REGISTERS_PER_GROUP = 65536    # register file one work-group may fill (an NVIDIA SM / AMD SIMD)
MAX_SPLIT = 64        # backward-weights: most partial sums of dU (the grid's largest SPLIT)
MIN_SPLIT_CHUNK = 128 # backward-weights: tiles each partial sum covers, at least
SUM_BLOCK = 64        # backward-weights: tiles summed in registers before they join the compensated running total
LONG_SUM_BLOCK = 16   # ... on reductions of more than LONG_REDUCTION terms (N*P*Q), where accuracy costs time
LONG_REDUCTION = 1 << 18
BLOCKED_CHUNK = 256   # backward-weights: chunks of more tiles than this keep the blocks and the running total
REDUCE_WG = 64        # work-group size of the weight-gradient filter transform
PASS_BYTES = 1 << 30  # backward-weights: the transformed tiles of x and dy (V^T, M^T) per pass, at most


@dataclass(frozen=True)
class WinogradLayout:
    """The forward-equivalent geometry of a problem and its workspace layout for output tile size m.

    Backward-data at stride 1 is the forward convolution of dy with the filters rotated 180 degrees, the
    channel axes swapped and padding 2 - pad at each side; the plan describes that convolution (the kernels
    index with the begin pads and clip at the tensors' edges, so the end pads follow from the sizes).
    """

    m: int
    in_role: str
    out_role: str
    batch: int
    in_c: int
    out_c: int
    in_hw: tuple[int, int]
    out_hw: tuple[int, int]
    pad: tuple[int, int]
    in_strides: tuple[int, ...]
    out_strides: tuple[int, ...]
    filter_addressing: tuple[int, int, int, int, int]   # base, per out channel, per in channel, per r, per s
    dtype: DataType   # of the tensors (the workspace is float whatever it is)
    r: int = 3                                          # filter size (r x r)
    pass_tiles: int = 0                                 # backward-weights: tiles per pass (0: other directions)
    max_split: int = 0                                  # backward-weights: most partial dU

    @classmethod
    def of(cls, p: ConvProblem, m: int) -> WinogradLayout:
        ws_k, ws_c, ws_r, ws_s = p.w.strides
        common = dict(m=m, batch=p.n, dtype=p.dtype, r=p.r)
        back = p.r - 1   # backward-data: pad r-1-pad, filters read from their last tap backwards
        if p.direction is not Direction.BACKWARD_DATA:   # backward-weights: the forward's geometry, dy as out
            plan = cls(**common, in_role="x", out_role="y", in_c=p.c, out_c=p.k, in_hw=(p.in_h, p.in_w),
                       out_hw=(p.out_h, p.out_w), pad=(p.pad_h, p.pad_w), in_strides=p.x.strides,
                       out_strides=p.y.strides, filter_addressing=(0, ws_k, ws_c, ws_r, ws_s))
            if p.direction is Direction.BACKWARD_WEIGHTS:
                plan = replace(plan, pass_tiles=plan.tiles_per_pass())
                plan = replace(plan, max_split=plan.split_cap())
            return plan
        return cls(**common, in_role="y", out_role="x", in_c=p.k, out_c=p.c, in_hw=(p.out_h, p.out_w),
                   out_hw=(p.in_h, p.in_w), pad=(back - p.pad_h, back - p.pad_w), in_strides=p.y.strides,
                   out_strides=p.x.strides, filter_addressing=(back * (ws_r + ws_s), ws_c, ws_k, -ws_r, -ws_s))

    @property
    def alpha(self) -> int:
        return self.m + self.r - 1

    @property
    def tiles_hw(self) -> tuple[int, int]:
        return (-(-self.out_hw[0] // self.m), -(-self.out_hw[1] // self.m))

    @property
    def tiles(self) -> int:
        return self.batch * self.tiles_hw[0] * self.tiles_hw[1]

    @property
    def weights(self) -> bool:
        """Whether this is a backward-weights plan (V^T and M^T by tiles, partial dU; no U)."""
        return self.pass_tiles > 0

    def tiles_per_pass(self) -> int:
        """Backward-weights: the tiles whose V^T and M^T fit PASS_BYTES (a multiple of MAX_TILE, at least
        one), or all of them; the passes add into the same partial dU."""
        in_cp, out_cp = channel_padding(self.in_c), channel_padding(self.out_c)
        fit = PASS_BYTES // (self.alpha ** 2 * (in_cp + out_cp) * FLOAT_BYTES) // MAX_TILE * MAX_TILE
        return min(round_up(self.tiles, MAX_TILE), max(MAX_TILE, fit))

    @property
    def passes(self) -> int:
        return ceil_div(self.tiles, self.pass_tiles) if self.weights else 1

    @property
    def reduction(self) -> int:
        """Backward-weights: the tiles one pass sums (all but the last pass; the last may have fewer)."""
        return min(self.tiles, self.pass_tiles)

    @property
    def padded(self) -> tuple[int, int, int]:
        """(input channels, output channels, tiles) as padded in the workspace. Backward-weights pads both
        channel counts, its GEMM's rows and columns, to channel_padding (GEMM blocks must divide it)."""
        if self.weights:
            return channel_padding(self.in_c), channel_padding(self.out_c), self.pass_tiles
        return round_up(self.in_c, MAX_K_BLK), round_up(self.out_c, MAX_TILE), round_up(self.tiles, MAX_TILE)

    @property
    def offsets(self) -> tuple[int, int, int, int]:
        """Float offsets in the workspace of U, V, M and its total size in floats; backward-weights has no
        U but the max_split partial dU [split][AA][OUT_CP][IN_CP] after V^T and M^T (the first slot)."""
        in_cp, out_cp, tiles_p = self.padded
        aa = self.alpha ** 2
        v, m = aa * in_cp * tiles_p, aa * out_cp * tiles_p
        if self.weights:
            return v + m, 0, v, v + m + self.max_split * aa * out_cp * in_cp
        u = aa * in_cp * out_cp
        return 0, u, u + v, u + v + m

    def split_cap(self) -> int:
        """Most partial dU backward-weights may use (a power of two): chunks of at least MIN_SPLIT_CHUNK
        tiles, at most MAX_SPLIT, partials within SPLIT_WORKSPACE_CAP or the transformed tensors' own size
        (whichever is larger: the partials then at most double a workspace the transforms need anyway)."""
        in_cp, out_cp, tiles_p = self.padded
        aa = self.alpha ** 2
        partial, transformed = aa * out_cp * in_cp * FLOAT_BYTES, aa * (in_cp + out_cp) * tiles_p * FLOAT_BYTES
        room = max(SPLIT_WORKSPACE_CAP, transformed) // partial
        cap = max(1, min(MAX_SPLIT, self.reduction // MIN_SPLIT_CHUNK, room))
        return 1 << (cap.bit_length() - 1)

    def split_chunk(self, split: int, k_blk: int) -> int:
        """Tiles of a pass each of split partial sums covers: a multiple of k_blk (only the last is short)."""
        return round_up(ceil_div(self.reduction, split), k_blk)

    def transform_defines(self) -> dict[str, int]:
        in_cp, out_cp, tiles_p = self.padded
        u_off, v_off, m_off, _ = self.offsets
        v_strides = (1, in_cp) if self.weights else (tiles_p, 1)
        defines = {**self.dtype.defines, "WINO_M": self.m, "WINO_R": self.r, "N": self.batch, "IN_C": self.in_c,
                   "IN_H": self.in_hw[0],
                   "IN_W": self.in_hw[1], "OUT_C": self.out_c, "OUT_H": self.out_hw[0], "OUT_W": self.out_hw[1],
                   "PAD_H": self.pad[0], "PAD_W": self.pad[1], "TILES_H": self.tiles_hw[0],
                   "TILES_W": self.tiles_hw[1], "TILES": self.tiles, "IN_CP": in_cp, "OUT_CP": out_cp,
                   "TILES_P": tiles_p, "U_OFF": u_off, "V_OFF": v_off, "M_OFF": m_off, "V_CS": v_strides[0],
                   "V_TS": v_strides[1], "CHANNELS_FAST": int(self.weights)}
        if self.weights:
            defines["P_OFF"] = u_off
        for prefix, strides in (("IS", self.in_strides), ("OS", self.out_strides)):
            defines.update({f"{prefix}_{axis}": st for axis, st in zip("NCHW", strides)})
        defines.update(zip(("FS_BASE", "FS_OUT", "FS_IN", "FS_R", "FS_S"), self.filter_addressing))
        return defines

    def gemm_defines(self) -> dict[str, int]:
        in_cp, out_cp, tiles_p = self.padded
        u_off, v_off, m_off, _ = self.offsets
        if self.weights:   # partial dU[s][xi] (out x in channels) = M^T[xi]^T V^T[xi] over chunk s of the tiles
            return {"GEMM_M": out_cp, "GEMM_N": in_cp, "GEMM_K": tiles_p, "A_OFF": m_off, "B_OFF": v_off,
                    "C_OFF": u_off, "GEMM_BATCH": self.alpha ** 2}
        return {"GEMM_M": out_cp, "GEMM_N": tiles_p, "GEMM_K": in_cp, "A_OFF": u_off, "B_OFF": v_off,
                "C_OFF": m_off}

    @property
    def gemm_columns(self) -> int:
        """Columns of the batched GEMM's output: tiles, or input channels for the weight gradient."""
        return self.in_c if self.weights else self.tiles


def channel_padding(channels: int) -> int:
    """Channels rounded up to the next power of two from 32 to MAX_TILE, then to a multiple of MAX_TILE:
    a GEMM block of 32 fits any count, and few channels are not padded to MAX_TILE."""
    return round_up(channels, min(MAX_TILE, max(32, 1 << (channels - 1).bit_length())))


T = TypeVar("T", bound="WinogradTiling")


@dataclass(frozen=True)
class WinogradTiling:
    """The batched GEMM's tiling as the kernel sees it."""

    tile_m: int
    tile_n: int
    work_m: int
    work_n: int
    k_blk: int

    @classmethod
    def of(cls: type[T], params: Params) -> T:
        return cls(params["TILE_M"], params["TILE_N"], params["WORK_M"], params["WORK_N"], params["K_BLK"])

    @property
    def local_size(self) -> tuple[int, int]:
        return self.tile_n // self.work_n, self.tile_m // self.work_m

    @property
    def work_group_size(self) -> int:
        return self.local_size[0] * self.local_size[1]

    @property
    def local_mem_bytes(self) -> int:
        return 2 * self.k_blk * (self.tile_m + self.tile_n) * FLOAT_BYTES

    @property
    def registers_per_item(self) -> int:
        """Estimate: accumulators, operands, prefetched float4s and about 16 for addresses and indices."""
        loads = sum(-(-self.k_blk * t // 4 // self.work_group_size) for t in (self.tile_m, self.tile_n))
        return self.work_m * self.work_n + self.work_m + self.work_n + 4 * loads + 16

    def device_reason(self, dev: DeviceInfo) -> str | None:
        """Why the device cannot run this tiling (work-group, local memory, registers), or None."""
        reason = work_group_reason(dev, self.local_size) or local_memory_reason(dev, self.local_mem_bytes)
        if reason is not None:
            return reason
        if self.registers_per_item > REGISTERS_PER_ITEM:
            return f"needs about {self.registers_per_item} registers per work-item, over {REGISTERS_PER_ITEM}"
        if self.registers_per_item * self.work_group_size > REGISTERS_PER_GROUP:
            return (f"needs about {self.registers_per_item * self.work_group_size} registers per work-group, "
                    f"over {REGISTERS_PER_GROUP}")
        return None


class _ConvWinograd3x3(ConvSolver):
    """Shared machinery of the F(m x m, r x r) solvers; subclasses set ``tile`` (m) and ``id``, and for
    filters other than 3x3 ``filter_size`` (r) and the ``transform_file`` holding their transforms."""

    tile: ClassVar[int]
    filter_size: ClassVar[int] = 3
    transform_file: ClassVar[str] = "conv_winograd.cl"
    algorithm = "winograd"
    directions = frozenset({Direction.FORWARD, Direction.BACKWARD_DATA})
    supports_epilogue = True
    grid = {"TILE_M": (32, 64, 128), "TILE_N": (32, 64, 128), "WORK_M": (4, 8), "WORK_N": (4, 8),
            "K_BLK": (8, 16)}
    param_doc = {"TILE_M": "GEMM block of output channels per work-group",
                 "TILE_N": "GEMM block of tiles per work-group",
                 "WORK_M": "output channels per work-item (register block rows)",
                 "WORK_N": "tiles per work-item (register block columns)",
                 "K_BLK": "input channels staged in local memory per step"}

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        f = self.filter_size
        require((problem.r, problem.s) == (f, f), f"filter is {problem.r}x{problem.s}, not {f}x{f}")
        require((problem.stride_h, problem.stride_w) == (1, 1), f"stride {problem.conv.stride} is not 1x1")
        require((problem.dil_h, problem.dil_w) == (1, 1), f"dilation {problem.conv.dilation} is not 1x1")
        require(max(problem.conv.pads) <= f - 1, f"padding {problem.conv.pad_text()} is over {f - 1}")
        require(problem.groups == 1, "grouped convolution is not implemented")
        require_none(index_reason(*(d.element_span for d in (problem.x, problem.w, problem.y)),
                                  self.workspace_bytes(problem) // FLOAT_BYTES))
        require(any(self.is_valid(problem, p, dev) for p in self.fallback_params()),
                "no GEMM tiling fits the device")

    def invalid_reason(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason is not None:
            return reason
        return WinogradTiling.of(params).device_reason(dev)

    def fallback_params(self) -> tuple[Params, ...]:
        """Small tilings, smallest last, that fit any device: applicability needs one of them valid."""
        return _FALLBACK_DEFAULTS

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        candidates = _gpu_defaults(WinogradLayout.of(problem, self.tile), dev) if dev.is_gpu else ()
        return next(dict(p) for p in (*candidates, *self.fallback_params()) if self.is_valid(problem, p, dev))

    def workspace_bytes(self, problem: ConvProblem) -> int:
        return WinogradLayout.of(problem, self.tile).offsets[3] * FLOAT_BYTES

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        plan = WinogradLayout.of(problem, self.tile)
        file = self.transform_file
        launches = (_filter_launch(plan, file), _input_launch(plan, file),
                    _gemm_launch(plan, WinogradTiling.of(params)), _output_launch(plan, epilogue, file))
        return Solution(self.id, dict(params), launches, self.workspace_bytes(problem))


_FALLBACK_DEFAULTS = (
    {"TILE_M": 32, "TILE_N": 32, "WORK_M": 4, "WORK_N": 4, "K_BLK": 8},   # 64 work-items: any device
    {"TILE_M": 32, "TILE_N": 32, "WORK_M": 8, "WORK_N": 8, "K_BLK": 8},   # 16 work-items
)


def _gpu_defaults(plan: WinogradLayout, dev: DeviceInfo) -> tuple[Params, ...]:
    """GPU choices, best first: 128x128 blocks of 8x8 (256 work-items) when the output channels fill them
    and the blocks fill the device twice over; else 64-row blocks; 64x64 of 4x4 for small problems."""
    tiles = plan.tiles
    big_m = plan.out_c > 64
    blocks = plan.alpha ** 2 * -(-tiles // 128) * -(-plan.out_c // (128 if big_m else 64))
    if blocks >= 2 * dev.compute_units:
        tile_m = 128 if big_m else 64
        return ({"TILE_M": tile_m, "TILE_N": 128, "WORK_M": 8, "WORK_N": 8, "K_BLK": 8},
                {"TILE_M": 64, "TILE_N": 64, "WORK_M": 4, "WORK_N": 4, "K_BLK": 16})
    return ({"TILE_M": 64, "TILE_N": 64, "WORK_M": 4, "WORK_N": 4, "K_BLK": 16},)


def _filter_launch(plan: WinogradLayout, file: str) -> KernelLaunch:
    in_cp, out_cp, _ = plan.padded
    spec = KernelSpec.make(file, "wino_filter_transform", plan.transform_defines(), ("-cl-mad-enable",))
    return KernelLaunch(spec, (out_cp, in_cp), (TRANSFORM_WG, 1), ("w", "workspace"))


def _input_launch(plan: WinogradLayout, file: str, first_tile: int = 0) -> KernelLaunch:
    in_cp, _, tiles_p = plan.padded
    spec = KernelSpec.make(file, "wino_input_transform", plan.transform_defines(), ("-cl-mad-enable",))
    if plan.weights:   # CHANNELS_FAST: one axis; the pass's tiles from first_tile on
        return KernelLaunch(spec, (in_cp * tiles_p,), (TRANSFORM_WG,),
                            (plan.in_role, "workspace", np.int32(first_tile)))
    return KernelLaunch(spec, (tiles_p, in_cp), (TRANSFORM_WG, 1), (plan.in_role, "workspace"))


def sum_steps(plan: WinogradLayout, split: int, k_blk: int) -> int:
    """Backward-weights: K_BLK steps summed in registers before the compensated running total (types.h),
    where a split's chunk of tiles is longer than BLOCKED_CHUNK (5x5: than a block); else 0. Lower than the
    direct solvers' threshold (device.blocked_sums): the transformed products vary in size (over some 100x
    in F(4x4,3x3), whose A reaches 8), and 4096-tile running sums measured 4x the error of 256-tile blocks,
    F(2x2,3x3) included (16 channels, 512x512: hybrid error 8.3e-4 against 2.0e-4)."""
    if not plan.weights:
        return 0
    block = sum_block(plan)
    if plan.split_chunk(split, k_blk) <= (block if plan.r > 3 else BLOCKED_CHUNK):
        return 0
    return max(1, block // k_blk)


def sum_block(plan: WinogradLayout) -> int:
    """Backward-weights: tiles per register block. The sums' rounding, relative to the transformed products,
    comes back amplified by G^T (float32 emulation: a block of B tiles adds about 3.2 * sqrt(B / 2) units of
    u * |dw| at F(4x4,3x3)), so long reductions, where the 1e-3 target is at stake, take 16-tile blocks
    (F(2x2,3x3): 4.8 units at 64 tiles, 2.9 at 16; F(4x4,3x3): 20 and 13) at 3 adds per 16 multiply-adds,
    shorter ones 64-tile blocks; 5x5 filters, whose transforms amplify most, always 16."""
    long = plan.r > 3 or plan.batch * plan.out_hw[0] * plan.out_hw[1] > LONG_REDUCTION
    return LONG_SUM_BLOCK if long else SUM_BLOCK


def _gemm_launch(plan: WinogradLayout, shape: WinogradTiling, split: int = 1, accumulate: bool = False) -> KernelLaunch:
    defines = {**plan.gemm_defines(), "TILE_M": shape.tile_m, "TILE_N": shape.tile_n, "WORK_M": shape.work_m,
               "WORK_N": shape.work_n, "K_BLK": shape.k_blk}
    if plan.weights:
        defines.update(SPLIT=split, SPLIT_CHUNK=plan.split_chunk(split, shape.k_blk),
                       SUM_STEPS=sum_steps(plan, split, shape.k_blk), ACCUMULATE_ARG=1)
    spec = KernelSpec.make("conv_winograd_gemm.cl", "wino_gemm", defines, ("-cl-mad-enable",))
    local_n, local_m = shape.local_size
    global_size = (ceil_div(plan.gemm_columns, shape.tile_n) * local_n, ceil_div(plan.out_c, shape.tile_m) * local_m,
                   plan.alpha ** 2 * split)
    args = ("workspace", np.int32(accumulate)) if plan.weights else ("workspace",)   # later passes add to C
    return KernelLaunch(spec, global_size, (local_n, local_m, 1), args)


def _output_launch(plan: WinogradLayout, epilogue, file: str) -> KernelLaunch:
    defines, args = plan.transform_defines(), ("workspace", plan.out_role)
    if epilogue is not None:
        defines.update(epilogue.defines())
        args = args + tuple(epilogue.args)
    spec = KernelSpec.make(file, "wino_output_transform", defines, ("-cl-mad-enable",))
    global_size = (round_up(plan.tiles, TRANSFORM_WG), plan.out_c)
    return KernelLaunch(spec, global_size, (TRANSFORM_WG, 1), args)


class ConvWinograd3x3F2(_ConvWinograd3x3):
    """Winograd F(2x2, 3x3): 3x3, stride 1, dilation 1, padding 0-2, FP32 or FP16 (fp32 transforms), forward
    and backward-data.

    Computes each 2x2 output tile from a 4x4 input patch with 16 multiplies per channel pair instead of 36
    (2.25x fewer), as 16 batched GEMMs in the transformed domain. Its transforms' weights are 0, +-1 and
    +-1/2, so it rounds little more than a direct sum: measured hybrid error 2e-5 at C = K = 64 and 2e-4
    at 512, well inside its bound of 2e-3. It wins when C and K are large (>= 64) and the image is not
    tiny: the GEMMs dominate and run near GEMM speed. It loses to F4 on most
    such layers (F4 does 4x fewer multiplies), and to direct or GEMM solvers when C or K is small, where the
    transforms' memory traffic (workspace of 16 x (C + K) x tiles floats) outweighs the saved arithmetic.
    Not applicable: other filter sizes, strides or dilations, padding over 2, groups, FP16.
    """

    id = "ConvWinograd3x3F2"
    tile = 2
    tolerance = 2e-3


class ConvWinograd3x3F4(_ConvWinograd3x3):
    """Winograd F(4x4, 3x3): 3x3, stride 1, dilation 1, padding 0-2, FP32 or FP16 (fp32 transforms), forward
    and backward-data.

    Computes each 4x4 output tile from a 6x6 input patch with 36 multiplies per channel pair instead of 144
    (4x fewer), as 36 batched GEMMs in the transformed domain; its workspace per output pixel is also
    smaller than F2's (36/16 vs 16/4 floats per channel). It is meant to be the fastest solver on 3x3
    stride-1 layers with C and K >= 64 (ResNet, VGG). The transforms' larger constants (up to 8, 16/15)
    cost accuracy: the GEMM sums transformed values some 10x larger than the inputs, so the hybrid error
    grows with the reduction length (C forward, K backward), measured on standard normal inputs, pad 1:
    1.4e-4 at C = K = 64, 7e-4 at 256, 1.4e-3 at 512, 1.6e-3 at 1024. Its bound, 5e-3, leaves 3x. It loses
    when C or K is small or the image is tiny (transform traffic, and edge tiles: a 7x7 output fills
    2x2 tiles of 4x4, 77% useful). Not applicable: other filter sizes, strides or dilations, padding over 2,
    groups, FP16.
    """

    id = "ConvWinograd3x3F4"
    tile = 4
    tolerance = 5e-3
