"""ConvImplicitGemmMma's default params: a constant-time pick, no timing.

A throughput model (_score) ranks the mma.sync candidates (register path, two stages); then rules switch on what
runs faster on an H100 where it applies, in order: the cp.async pipeline (_pipelined), narrow tiles for narrow
GEMMs (_narrow), the channel-fastest copy of x / dy (_copied), Hopper's wgmma (wgmma_defaults). Few input channels
in backward-data take COL2IM. The thresholds are data (measured.CHOICES); the measurements behind them are in
docs/notes/tensor_core_defaults.md.
"""
from __future__ import annotations

from ....device import DeviceInfo, local_memory_reason
from ....solver import Params, round_up
from ....tensor import DataType
from ...problem import ConvProblem, Direction
from ..direct_local import inner_channels
from . import measured
from .geometry import (
    PTX_CP_ASYNC,
    WARP,
    column_tiles,
    gemm_shape,
    gemm_view,
    kernel_warps,
    local_bytes,
    phased,
    phases,
    split_limit,
    threads_of,
)
from .params import GRID, SMALLEST, Valid
from .validity import MAX_ACCUMULATORS
from .wgmma_defaults import wgmma_defaults
from .workspace import col2im_fits, col2im_problem


def default_params(problem: ConvProblem, dev: DeviceInfo, valid: Valid) -> Params:
    """The default params of problem (gemm_view'd) on dev: always valid (SMALLEST where no candidate is)."""
    if col2im_wanted(problem):
        gemm = default_params(gemm_view(col2im_problem(problem)), dev, valid)
        trial = dict(gemm, CHANNEL_BLOCKS=True, TRANSFORM_W=True, SPLIT=1, COL2IM=True)
        if valid(problem, trial, dev):
            return trial
    candidates = [c for c in _candidates(problem, dev, valid) if valid(problem, c, dev)]
    if not candidates:
        return dict(SMALLEST)
    best = max(candidates, key=lambda c: _score(problem, c, dev))
    params = _copied(problem, _narrow(problem, _pipelined(problem, best, dev, valid), dev, valid), dev, valid)
    return wgmma_defaults(problem, params, dev, valid)


def col2im_wanted(problem: ConvProblem) -> bool:
    """COL2IM by default: where it fits and the input has at most col2im_channels channels (C rows of the direct
    GEMM fill that fraction of the mma's 16)."""
    return col2im_fits(problem) and problem.c <= measured.CHOICES.col2im_channels


def _candidates(problem: ConvProblem, dev: DeviceInfo, valid: Valid) -> list[Params]:
    """The score model's points: each candidate tile, slice depth, loop order and split, with _featured's
    switches; fp32 with one stage only on the shallowest slices (deeper ones spill registers)."""
    choices = measured.CHOICES
    splits = [s for s in GRID["SPLIT"] if s <= split_limit(problem)]
    k_blks = choices.k_blks_fp16 if problem.dtype is DataType.FLOAT16 else choices.k_blks_fp32
    blocks = (True, False) if problem.direction is not Direction.BACKWARD_WEIGHTS else (False,)
    most = choices.wgrad_max_sums if problem.direction is Direction.BACKWARD_WEIGHTS else MAX_ACCUMULATORS
    out = []
    for m, n, wm, wn in (tile for tile in choices.tiles if tile[0] * tile[1] // (WARP * tile[2] * tile[3]) <= most):
        for k in k_blks:
            for cb in blocks:
                for s in splits:
                    base = dict(SMALLEST, M_BLK=m, N_BLK=n, K_BLK=k, WARPS_M=wm, WARPS_N=wn, STAGES=2,
                                CHANNEL_BLOCKS=cb, SPLIT=s)
                    featured = _featured(problem, base, dev, valid)
                    if problem.dtype is DataType.FLOAT16 or featured["STAGES"] == 2 or k == min(k_blks):
                        out.append(featured)
    return out


def _featured(problem: ConvProblem, params: Params, dev: DeviceInfo, valid: Valid) -> Params:
    """params with what runs faster on an H100 switched on where valid: one stage where two do not fit, the
    weight copy where the weights are strided along k, ldmatrix and vector fetches of A."""
    out = dict(params, TRANSFORM_W=params["CHANNEL_BLOCKS"] and (
        problem.r * problem.s > 1 or problem.direction is Direction.BACKWARD_DATA))
    if local_memory_reason(dev, local_bytes(out, problem.dtype, problem.direction)):
        out["STAGES"] = 1
    for name in ("LDMATRIX", "VECTOR_A"):
        trial = dict(out, **{name: True})
        if valid(problem, trial, dev):
            out = trial
    return out


def _score(problem: ConvProblem, params: Params, dev: DeviceInfo) -> float:
    """Rough throughput model: useful fraction of tiles and inner loop x wave quantisation x tile reuse."""
    shape = gemm_shape(problem)
    m_blk, n_blk, k_blk = params["M_BLK"], params["N_BLK"], params["K_BLK"]
    tiles_m, tiles_n = -(-shape.m // m_blk), column_tiles(problem, n_blk) * phases(problem)
    columns = problem.n * problem.in_h * problem.in_w if phased(problem) else shape.n   # PHASED: dx's pixels
    fill = shape.m * columns / (tiles_m * m_blk * tiles_n * n_blk)
    k_size = inner_channels(problem) if params["CHANNEL_BLOCKS"] else shape.k
    k_fill = k_size / round_up(k_size, k_blk)
    busy = _busy(problem, params, dev, tiles_m * tiles_n * problem.groups * params["SPLIT"])
    warps_m, warps_n = kernel_warps(params)
    warp_m, warp_n = m_blk // warps_m, n_blk // warps_n
    tile_reuse = min(1.0, m_blk * n_blk / (m_blk + n_blk) / 64) ** 0.5    # 1 for 128x128 tiles
    tile_reuse *= min(1.0, warp_m * warp_n / (warp_m + warp_n) / 32) ** 0.3   # local reads per mma: 64x64 warps
    # fp16 likes 32-deep slices, fp32 16 (32 with one stage spills registers)
    depth = min(1.0, k_blk / (32 if problem.dtype is DataType.FLOAT16 else 16)) ** 0.25
    depth *= 1.0 if params["STAGES"] >= 2 else 0.9
    split_cost = _split_cost(problem, params)
    fetch_cost = 1.0 if params["CHANNEL_BLOCKS"] else 1.1
    return fill * k_fill * busy * tile_reuse * depth / (split_cost * fetch_cost)


def _busy(problem: ConvProblem, params: Params, dev: DeviceInfo, groups: int) -> float:
    """The busy fraction of the compute units over groups work-groups: one partial wave, a little more for more
    resident work-groups (latency hiding); several waves, the last wave's tail."""
    m_blk, n_blk, k_blk = params["M_BLK"], params["N_BLK"], params["K_BLK"]
    threads = threads_of(params)
    registers = m_blk * n_blk // threads + (m_blk + n_blk) * k_blk // threads + 48    # per lane, roughly
    lbytes = max(local_bytes(params, problem.dtype, problem.direction), 1)
    per_cu = max(1, min(65536 // (threads * registers), 4 * dev.local_mem_bytes // lbytes, 2048 // threads))
    slots = dev.compute_units * per_cu
    if groups <= slots:
        return min(1.0, groups / dev.compute_units) * (groups / slots) ** 0.15
    return groups / (-(-groups // slots) * slots)


def _split_cost(problem: ConvProblem, params: Params) -> float:
    """Split-K's cost factor: each split writes the output's partials and the reduction reads them back (8 bytes an
    element at about 2.5 TB/s, against 2 flops a term at about 200 TFLOP/s TF32, 400 fp16: split_cost_fp32 /
    split_cost_fp16 terms), and each chunk fills the pipeline once (about STAGES + 1 slices): cheap where the
    reduction is long (backward-weights over N*P*Q)."""
    split = params["SPLIT"]
    if split == 1:
        return 1.0
    choices = measured.CHOICES
    per_split = (choices.split_cost_fp32 if problem.dtype is DataType.FLOAT32 else choices.split_cost_fp16) \
        + (params["STAGES"] + 1) * params["K_BLK"]
    return 1 + split * per_split / gemm_shape(problem).k


def _pipelined(problem: ConvProblem, params: Params, dev: DeviceInfo, valid: Valid) -> Params:
    """The cp.async pipeline where it runs faster than the register path: TF32 forward and backward-data in two
    stages; TF32 backward-weights in three, 128x128 tiles halved to 128x64 and, where the filter is larger than 1x1
    and the output planes at least halved_split_min_plane, the split halved_tile_split times the score model's;
    fp16 forward / backward-data in two stages on tiles of at least pipeline_fp16_min_tile (smaller ones stay on
    registers). fp16 backward-weights stays on the register path here (_copied gives it cp.async with the copy of
    x where that pays)."""
    choices = measured.CHOICES
    if PTX_CP_ASYNC not in dev.ptx_mma:
        return params
    if problem.dtype is DataType.FLOAT16 and (problem.direction is Direction.BACKWARD_WEIGHTS
                                              or params["M_BLK"] * params["N_BLK"] < choices.pipeline_fp16_min_tile):
        return params
    trials = [dict(params, CP_ASYNC=True, STAGES=2)]
    if problem.direction is Direction.BACKWARD_WEIGHTS:   # TF32 only (fp16 returned above)
        halved = dict(N_BLK=params["N_BLK"] // 2, WARPS_N=max(1, params["WARPS_N"] // 2)) \
            if params["M_BLK"] == params["N_BLK"] == 128 else {}
        trials = [dict(params, CP_ASYNC=True, STAGES=3, **halved), dict(params, CP_ASYNC=True, STAGES=3)] + trials
        if halved and problem.r * problem.s > 1 and problem.out_h * problem.out_w >= choices.halved_split_min_plane \
                and params["SPLIT"] * choices.halved_tile_split <= split_limit(problem):
            trials.insert(0, dict(trials[0], SPLIT=params["SPLIT"] * choices.halved_tile_split))
    return next((t for t in trials if valid(problem, t, dev)), params)


def _narrow(problem: ConvProblem, params: Params, dev: DeviceInfo, valid: Valid) -> Params:
    """Forward / backward-data GEMMs of at most narrow_columns columns (a phase's: fully-connected layers, small
    images at small batch) are bound by streaming A, the weights: narrow_tile's 64 rows by four warps of 16 put more
    of it in flight per work-group than one-warp tiles, and at most gemv_columns columns (a matrix times a few
    vectors, hundreds of slices deep) also split the reduction gemv_split ways. A wider GEMM whose long reduction
    the score model splits keeps that pick."""
    choices = measured.CHOICES
    columns = gemm_shape(problem).n // phases(problem)
    if problem.direction is Direction.BACKWARD_WEIGHTS or columns > choices.narrow_columns \
            or columns > choices.gemv_columns and params["SPLIT"] > 1:
        return params
    split = min(choices.gemv_split, split_limit(problem)) if columns <= choices.gemv_columns else 1
    while split >= 1:
        trial = dict(params, **choices.narrow_tile, SPLIT=split)
        if valid(problem, trial, dev):
            return trial
        split //= 2
    return params


def _copied(problem: ConvProblem, params: Params, dev: DeviceInfo, valid: Valid) -> Params:
    """TRANSFORM_X where it runs faster than the same params without it (the copy's time included), for filters
    larger than 1x1 only (the copy costs as much as a 1x1 layer's gather saves): fp16 backward-weights by cp.async
    (_copied_wgrad_fp16), else where _copy_wanted."""
    p = problem
    if p.r * p.s == 1:
        return params
    if p.direction is Direction.BACKWARD_WEIGHTS and p.dtype is DataType.FLOAT16:
        point = _copied_wgrad_fp16(problem, params, dev, valid)
        if point is not None:
            return point
    if params["TRANSFORM_X"]:
        return params
    trial = dict(params, TRANSFORM_X=True)
    return trial if _copy_wanted(problem) and valid(problem, trial, dev) else params


def _copied_wgrad_fp16(problem: ConvProblem, params: Params, dev: DeviceInfo, valid: Valid) -> Params | None:
    """fp16 backward-weights reading the copy by cp.async in wgrad_fp16_copy_stages stages (0: never) where that
    fits the slice depth: over even output planes (dy's pairs along N*P*Q aligned), and over odd planes (pairs
    straddling planes) with dy's zero-padded copy (PAD_DY: 16-byte A vectors) where N*P*Q is at least
    wgrad_fp16_pad_min_terms, in two stages where three do not fit; or None."""
    p, choices = problem, measured.CHOICES
    odd = p.out_h * p.out_w % 2 == 1
    if not choices.wgrad_fp16_copy_stages or odd and not (
            choices.wgrad_fp16_pad_odd and p.n * p.out_h * p.out_w >= choices.wgrad_fp16_pad_min_terms):
        return None
    trial = dict(params, TRANSFORM_X=True, CP_ASYNC=True, STAGES=choices.wgrad_fp16_copy_stages, PAD_DY=odd)
    points = [dict(trial, VECTOR_A=True), trial] + ([dict(trial, VECTOR_A=True, STAGES=2)] if odd else [])
    return next((point for point in points if valid(problem, point, dev)), None)


def _copy_wanted(problem: ConvProblem) -> bool:
    """Where the copy of x / dy pays on the register path or cp.async alike:
    - backward-weights at stride 1 over output planes of at least copy_wgrad_min_plane and N*P*Q of at least
      copy_wgrad_min_terms: fp16 (its 2-byte gather leaves the register path's scalar loads), TF32 where the copy
      is also small against the GEMM (K/G*R*S*P*Q at least copy_wgrad_tf32_ratio times H*W);
    - TF32 forward / backward-data with rows (K forward, C backward-data) x R*S of at least copy_fb_min_rows_taps
      and N*P*Q of at least copy_fb_min_terms (fp16 forward / backward-data: no rule separates wins from losses)."""
    p, choices = problem, measured.CHOICES
    terms = p.n * p.out_h * p.out_w
    if p.direction is Direction.BACKWARD_WEIGHTS:
        return p.stride_h == p.stride_w == 1 and p.out_h * p.out_w >= choices.copy_wgrad_min_plane \
            and terms >= choices.copy_wgrad_min_terms and (p.dtype is DataType.FLOAT16 or p.k_per_group * p.r * p.s
                                                           * p.out_h * p.out_w >= choices.copy_wgrad_tf32_ratio
                                                           * p.in_h * p.in_w)
    rows = p.k_per_group if p.direction is Direction.FORWARD else p.c_per_group
    return p.dtype is DataType.FLOAT32 and rows * p.r * p.s >= choices.copy_fb_min_rows_taps \
        and terms >= choices.copy_fb_min_terms
