"""ConvDirectLocal: direct convolution as an implicit GEMM tiled through local memory, all directions."""
from __future__ import annotations

from dataclasses import dataclass

from ...device import (
    MAX_GRID_DIM,
    SPLIT_WORKSPACE_CAP,
    DeviceInfo,
    accurate_split,
    grid_reason,
    index_reason,
    local_memory_reason,
    work_group_reason,
)
from ...device import sum_steps as device_sum_steps
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, require, require_none, round_up
from ...tensor import FLOAT_BYTES
from ..problem import ConvProblem, Direction
from .common import ConvSolver, problem_defines, stride_defines

KERNEL_FILE = "conv_direct_local.cl"
LOCAL_PAD = 4                 # floats of padding per local-memory row (bank spread, keeps float4 alignment)
MAX_ACCUMULATORS = 64         # sums per work-item: beyond this registers spill
MIN_TILE = 4                  # smallest tile side the grid can form (4 work-items x 1)
MAX_SPLIT = 256
MIN_SPLIT_CHUNK = 256         # backward-weights: N*P*Q elements per split, at least
REDUCE_WG = 64


@dataclass(frozen=True)
class ImplicitGemm:
    """The implicit GEMM of one group: out (m x n) = A (m x k) * B (k x n)."""

    m: int
    n: int
    k: int


def gemm_shape(p: ConvProblem) -> ImplicitGemm:
    """Per-group GEMM sizes of p's direction (see conv_direct_local.cl for the index mapping)."""
    crs, krs = p.c_per_group * p.r * p.s, p.k_per_group * p.r * p.s
    if p.direction is Direction.FORWARD:
        return ImplicitGemm(p.k_per_group, p.n * p.out_h * p.out_w, crs)
    if p.direction is Direction.BACKWARD_DATA:
        return ImplicitGemm(p.c_per_group, p.n * p.in_h * p.in_w, krs)
    return ImplicitGemm(p.k_per_group, crs, p.n * p.out_h * p.out_w)


def inner_channels(p: ConvProblem) -> int:
    """Channels of the inner dimension that CHANNEL_BLOCKS blocks: C/G forward, K/G backward-data."""
    return p.c_per_group if p.direction is Direction.FORWARD else p.k_per_group


def inner_fill(p: ConvProblem, params: Params) -> float:
    """Useful fraction of the inner loop's work (the rest is zero padding up to whole slices)."""
    k_blk = params["K_BLK"]
    size = inner_channels(p) if params["CHANNEL_BLOCKS"] else gemm_shape(p).k
    return size / round_up(size, k_blk)


def max_split(p: ConvProblem) -> int:
    """Most partial sums backward-weights may use on p (a power of two; 1 for the other directions)."""
    if p.direction is not Direction.BACKWARD_WEIGHTS:
        return 1
    cap = min(MAX_SPLIT, gemm_shape(p).k // MIN_SPLIT_CHUNK, SPLIT_WORKSPACE_CAP // (FLOAT_BYTES * p.w.element_count))
    return _pow2_floor(max(cap, 1))


def min_split(p: ConvProblem) -> int:
    """The split the defaults start from: chunks of at most ACCURATE_SPLIT_CHUNK terms where max_split allows."""
    if p.direction is not Direction.BACKWARD_WEIGHTS:
        return 1
    return accurate_split(gemm_shape(p).k, ConvDirectLocal.grid["SPLIT"], max_split(p))


def sum_steps(p: ConvProblem, params: Params) -> int:
    """Backward-weights: slices per register block before the compensated running total, where the
    reduction needs one (device.blocked_sums: a second register tile costs occupancy); else 0."""
    if p.direction is not Direction.BACKWARD_WEIGHTS:
        return 0
    return device_sum_steps(gemm_shape(p).k, split_chunk(p, params["SPLIT"], params["K_BLK"]), params["K_BLK"])


def split_chunk(p: ConvProblem, split: int, k_blk: int, terms: int | None = None) -> int:
    """N*P*Q elements (or terms: a padded count) each split sums: a multiple of K_BLK, so only the last split has
    a ragged end."""
    return round_up(-(-(gemm_shape(p).k if terms is None else terms) // split), k_blk)


def local_bytes(params: Params) -> int:
    """Local memory of one work-group: K_BLK rows of the A and B tiles, padded, once or twice."""
    rows = params["K_BLK"] * (params["M_DIM"] * params["M_PER"] + params["N_DIM"] * params["N_PER"] + 2 * LOCAL_PAD)
    return FLOAT_BYTES * rows * (2 if params["DOUBLE_BUF"] else 1)


def _pow2_floor(value: int) -> int:
    return 1 << (value.bit_length() - 1)


def _pow2_ceil(value: int) -> int:
    return 1 << max(value - 1, 0).bit_length()


def _fetch_divides(k_blk: int, blk: int, threads: int, kk_fast: bool) -> bool:
    """Whether a K_BLK x blk slice splits into whole passes of `threads` work-items (see the kernel)."""
    fast, slow = (k_blk, blk) if kk_fast else (blk, k_blk)
    step = min(threads, fast)
    return fast % step == 0 and slow % (threads // step) == 0 and threads % step == 0


class ConvDirectLocal(ConvSolver):
    """Direct convolution as an implicit GEMM (no im2col buffer) tiled through local memory.

    Forward is K/G x N*P*Q over C/G*R*S; backward-data C/G x N*H*W over K/G*R*S; backward-weights
    K/G x C/G*R*S over N*P*Q, split into chunks whose partial sums a second kernel adds in a fixed order
    (deterministic). Each work-item keeps a register tile of sums; input slices are gathered with zero
    padding straight into local memory; layer sizes are compile-time constants. Forward and
    backward-data step either through blocks of channels one filter tap at a time (one bounds check per
    slice; channels padded to the slice depth) or through the flat channel x tap index (for few channels).

    Wins: large layers of any filter size, pad, stride, dilation and groups (AlexNet-like 3x3 / 5x5 with
    many channels), where it runs at SGEMM-like efficiency with no workspace in forward. Loses to
    Winograd on 3x3 stride-1 layers and to a plain GEMM on 1x1 layers; backward-data with stride > 1
    wastes stride_h*stride_w of its work on taps that land between outputs; very small problems leave
    tiles mostly empty. Does not apply to FP16 or to tensors spanning 2^31 elements or more (int indices).
    """

    id = "ConvDirectLocal"
    algorithm = "direct"
    directions = frozenset(Direction)
    supports_epilogue = True
    grid = {"M_DIM": (4, 8, 16, 32), "N_DIM": (4, 8, 16, 32), "M_PER": (1, 2, 4, 8, 16), "N_PER": (1, 2, 4, 8, 16),
            "K_BLK": (4, 8, 16), "VEC": (1, 2, 4), "DOUBLE_BUF": (False, True), "CHANNEL_BLOCKS": (False, True),
            "SPLIT": (1, 2, 4, 8, 16, 32, 64, 128, 256)}
    param_doc = {
        "M_DIM": "work-group rows: work-items along the GEMM's m (output channels; input channels in bwd-data)",
        "N_DIM": "work-group columns: work-items along the GEMM's n (output pixels; filter taps in bwd-weights)",
        "M_PER": "sums per work-item along m (the tile is M_DIM*M_PER rows)",
        "N_PER": "sums per work-item along n (the tile is N_DIM*N_PER columns)",
        "K_BLK": "slice of the inner dimension staged in local memory per step",
        "VEC": "width of local-memory reads (float, float2, float4); divides M_PER and N_PER",
        "DOUBLE_BUF": "two local buffers: the next slice is staged while others still read this one",
        "CHANNEL_BLOCKS": "forward / backward-data: loop over (K_BLK channels, one tap) slices, one bounds check "
                          "per slice, channels padded to K_BLK; else over the flat channel x tap index",
        "SPLIT": "backward-weights only: partial sums over that many chunks of N*P*Q, then a fixed-order sum",
    }

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require_none(index_reason(*(d.element_span for d in (problem.x, problem.w, problem.y))))
        require(problem.groups <= MAX_GRID_DIM, f"more than {MAX_GRID_DIM} groups")

    def invalid_reason(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason is None:
            reason = _work_item_reason(params) or _device_reason(params, dev) or _shape_reason(problem, params)
        return reason

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        candidates = _gpu_candidates(problem) if dev.is_gpu else _cpu_candidates(problem)
        valid = [c for c in candidates if self.is_valid(problem, c, dev)]
        if not valid:
            return dict(SMALLEST)
        return max(valid, key=lambda c: _gpu_score(problem, c, dev)) if dev.is_gpu else valid[0]

    def workspace_bytes(self, problem: ConvProblem) -> int:
        split = max_split(problem)
        return FLOAT_BYTES * split * problem.w.element_count if split > 1 else 0

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        shape, split = gemm_shape(problem), params["SPLIT"]
        defines = {**problem_defines(problem), **stride_defines(problem), "DIRECTION": int(problem.direction),
                   **{name: params[name] for name in self.grid},
                   "SPLIT_CHUNK": split_chunk(problem, split, params["K_BLK"]),
                   "SUM_STEPS": sum_steps(problem, params)}
        args = ("x", "w", "y") + (("workspace",) if split > 1 else ())
        if epilogue is not None:
            defines.update(epilogue.defines())
            args = args + tuple(epilogue.args)
        spec = KernelSpec.make(KERNEL_FILE, "conv_direct_local", defines, ("-cl-mad-enable",))
        m_blk, n_blk = params["M_DIM"] * params["M_PER"], params["N_DIM"] * params["N_PER"]
        global_size = (-(-shape.n // n_blk) * params["N_DIM"], -(-shape.m // m_blk) * params["M_DIM"],
                       problem.groups * split)
        launches = [KernelLaunch(spec, global_size, (params["N_DIM"], params["M_DIM"], 1), args)]
        if split > 1:
            reduce = KernelSpec.make(KERNEL_FILE, "reduce_splits", defines, ("-cl-mad-enable",))
            count = problem.w.element_count
            launches.append(KernelLaunch(reduce, (round_up(count, REDUCE_WG),), (REDUCE_WG,), ("workspace", "w")))
        return Solution(self.id, dict(params), tuple(launches), self.workspace_bytes(problem))


def _work_item_reason(params: Params) -> str | None:
    """Limits on one work-item's registers and read width."""
    if params["M_PER"] % params["VEC"] or params["N_PER"] % params["VEC"]:
        return f"VEC={params['VEC']} does not divide M_PER={params['M_PER']} and N_PER={params['N_PER']}"
    if params["M_PER"] * params["N_PER"] > MAX_ACCUMULATORS:
        return f"M_PER*N_PER={params['M_PER'] * params['N_PER']} sums per work-item > {MAX_ACCUMULATORS}"
    return None


def _device_reason(params: Params, dev: DeviceInfo) -> str | None:
    """Work-group size and local memory against dev (two work-groups per compute unit must fit)."""
    return (work_group_reason(dev, (params["N_DIM"], params["M_DIM"]))
            or local_memory_reason(dev, local_bytes(params), groups_per_unit=2))


def _shape_reason(problem: ConvProblem, params: Params) -> str | None:
    """Tiles against the problem: whole fetch passes, no tile twice too big, SPLIT within bounds."""
    shape, threads = gemm_shape(problem), params["M_DIM"] * params["N_DIM"]
    m_blk, n_blk, k_blk = params["M_DIM"] * params["M_PER"], params["N_DIM"] * params["N_PER"], params["K_BLK"]
    b_kk_fast = problem.direction is Direction.BACKWARD_WEIGHTS
    if not (_fetch_divides(k_blk, m_blk, threads, True) and _fetch_divides(k_blk, n_blk, threads, b_kk_fast)):
        return f"{threads} work-items do not split the {k_blk}x{m_blk} and {k_blk}x{n_blk} slices evenly"
    if params["CHANNEL_BLOCKS"] and problem.direction is Direction.BACKWARD_WEIGHTS:
        return "CHANNEL_BLOCKS applies to forward and backward-data only"
    k_size = inner_channels(problem) if params["CHANNEL_BLOCKS"] else shape.k
    for name, blk, size in (("M", m_blk, shape.m), ("N", n_blk, shape.n), ("K", k_blk, k_size)):
        if blk > max(MIN_TILE, _pow2_ceil(size)):
            return f"{name} tile {blk} > {size} rounded up to a power of two"
    if params["SPLIT"] > max_split(problem):
        return f"SPLIT={params['SPLIT']} > {max_split(problem)} (1 unless backward-weights)"
    return grid_reason((0, -(-shape.m // m_blk), problem.groups * params["SPLIT"]))


# -- default params ---------------------------------------------------------------------------------------
# Valid on any applicable problem and device: 4x4 work-items of one sum each, 4-deep slices.
SMALLEST = {"M_DIM": 4, "N_DIM": 4, "M_PER": 1, "N_PER": 1, "K_BLK": 4, "VEC": 1, "DOUBLE_BUF": False,
            "CHANNEL_BLOCKS": False, "SPLIT": 1}
_GPU_TILES = ((16, 16, 8, 8), (8, 16, 8, 8), (16, 8, 8, 8), (8, 8, 8, 8), (16, 16, 4, 4), (8, 32, 4, 4),
              (32, 8, 4, 4), (8, 8, 4, 4))   # (M_DIM, N_DIM, M_PER, N_PER), SGEMM-style 128x128 down to 32x32


def _gpu_candidates(problem: ConvProblem) -> list[Params]:
    splits = [s for s in ConvDirectLocal.grid["SPLIT"] if min_split(problem) <= s <= max_split(problem)]
    return [_shrunk(problem, {"M_DIM": md, "N_DIM": nd, "M_PER": mp, "N_PER": np_, "K_BLK": 8, "VEC": 4,
                              "DOUBLE_BUF": True, "CHANNEL_BLOCKS": blocks, "SPLIT": s})
            for md, nd, mp, np_ in _GPU_TILES for s in splits for blocks in (True, False)]


def _cpu_candidates(problem: ConvProblem) -> list[Params]:
    """Small tiles (PoCL compiles them fast); channel blocks where they waste nothing."""
    base = {"M_DIM": 8, "N_DIM": 8, "M_PER": 2, "N_PER": 2, "K_BLK": 8, "VEC": 2, "DOUBLE_BUF": False,
            "CHANNEL_BLOCKS": False, "SPLIT": max(min(2, max_split(problem)), min_split(problem))}
    blocked = {**base, "CHANNEL_BLOCKS": problem.direction is not Direction.BACKWARD_WEIGHTS}
    ordered = [blocked, base] if inner_fill(problem, blocked) == 1.0 else [base]
    return [_shrunk(problem, c) for c in ordered] + [_shrunk(problem, {**base, "K_BLK": 4})]


def _shrunk(problem: ConvProblem, params: Params) -> Params:
    """params with tiles halved (per-work-item sums first) until they fit the problem's GEMM."""
    shape, out = gemm_shape(problem), dict(params)
    for dim, per, size in (("M_DIM", "M_PER", shape.m), ("N_DIM", "N_PER", shape.n)):
        while out[dim] * out[per] > max(MIN_TILE, _pow2_ceil(size)):
            if out[per] > 1:
                out[per] //= 2
            else:
                out[dim] //= 2
    k_size = inner_channels(problem) if out["CHANNEL_BLOCKS"] else shape.k
    out["K_BLK"] = min(out["K_BLK"], max(MIN_TILE, _pow2_ceil(k_size)))
    out["VEC"] = min(out["VEC"], out["M_PER"], out["N_PER"])
    return out


def _gpu_score(problem: ConvProblem, params: Params, dev: DeviceInfo) -> float:
    """Rough throughput model: useful fraction of the tiles and of the inner loop x wave quantisation x
    register-tile reuse (local-memory reads per FMA) x tile reuse (global reads per FMA) / overheads."""
    shape, threads = gemm_shape(problem), params["M_DIM"] * params["N_DIM"]
    m_per, n_per = params["M_PER"], params["N_PER"]
    m_blk, n_blk = params["M_DIM"] * m_per, params["N_DIM"] * n_per
    tiles_m, tiles_n = -(-shape.m // m_blk), -(-shape.n // n_blk)
    fill = shape.m * shape.n / (tiles_m * m_blk * tiles_n * n_blk)
    groups = tiles_m * tiles_n * problem.groups * params["SPLIT"]
    per_cu = max(1, min(65536 // (threads * (m_per * n_per + m_per + n_per + 32)), 2048 // threads, 32))
    slots = dev.compute_units * per_cu
    waves = -(-groups // slots)
    register_reuse = (m_per * n_per / (m_per + n_per) / 4) ** 0.5         # 1 for 8x8 per work-item
    tile_reuse = min(1.0, m_blk * n_blk / (m_blk + n_blk) / 64) ** 0.25  # 1 for 128x128 tiles
    split_cost = 1 + 0.05 * (params["SPLIT"] - 1)
    fetch_cost = 1.0 if params["CHANNEL_BLOCKS"] else 1.15    # flat order: index arithmetic per row
    return (fill * inner_fill(problem, params) * groups / (waves * slots) * register_reuse * tile_reuse
            / (split_cost * fetch_cost))
