"""ConvImplicitGemmMma's default params on Hopper: where WGMMA (Hopper's wgmma) replaces the mma.sync defaults, on
which tiles, and backward-weights' split from a time model (the measurements: docs/notes/tensor_core_defaults.md)."""
from __future__ import annotations

from ....device import DeviceInfo
from ....solver import Params
from ....tensor import DataType
from ...problem import ConvProblem, Direction
from . import measured
from .geometry import PTX_WGMMA, column_tiles, gemm_shape, phases, split_limit, wgrad_terms
from .params import GRID, Valid
from .workspace import pad_dy_fits

# what WGMMA points set besides the tile: its requirements (validity.wgmma_reason) and one split
WGMMA_PARAMS = {"WGMMA": True, "WARPS_N": 1, "SPLIT": 1, "CHANNEL_BLOCKS": True, "TRANSFORM_W": True,
                "TRANSFORM_X": True, "VECTOR_A": True, "CP_ASYNC": True, "LDMATRIX": False, "VECTOR_B": 0}
# ... in backward-weights (no weight copy or channel blocks there; TF32 drops TRANSFORM_X; the split is chosen apart)
WGMMA_W_PARAMS = {"WGMMA": True, "WARPS_N": 1, "TRANSFORM_X": True, "VECTOR_A": True, "CP_ASYNC": True,
                  "LDMATRIX": False, "VECTOR_B": 0}


def wgmma_defaults(problem: ConvProblem, params: Params, dev: DeviceInfo, valid: Valid) -> Params:
    """params on WGMMA where it runs faster than the mma.sync defaults (devices with the wgmma probe only):
    forward and backward-data of filters larger than 1x1 over GEMMs of at least wgmma_min_columns columns, with the
    copies of x / dy and of the weights, no split; where 128x128 tiles make wgmma_wide_tiles waves, 128x128 in 3
    stages over inner dimensions of at least wgmma_deep ("deep"), 128x64 in 4 over shorter ones ("shallow"), else
    64x128 in 4 ("narrow"). Backward-data of 1x1 filters at stride > 1 takes 64x128 in 4 whatever its width; other
    1x1 layers and small GEMMs keep mma.sync. Backward-weights: _wgrad."""
    p, choices = problem, measured.CHOICES
    if PTX_WGMMA not in dev.ptx_mma:
        return params
    if p.direction is Direction.BACKWARD_WEIGHTS:
        return _wgrad(problem, params, dev, valid)
    base = dict(params, **WGMMA_PARAMS, K_BLK=choices.wgmma_row_bytes // p.dtype.itemsize)
    if p.direction is Direction.BACKWARD_DATA and p.r * p.s == 1 and (p.stride_h > 1 or p.stride_w > 1) \
            and not params["COL2IM"]:
        trial = dict(base, **choices.wgmma_tiles["narrow"])
        return trial if valid(p, trial, dev) else params
    shape = gemm_shape(problem)
    if p.r * p.s == 1 or params["COL2IM"] or shape.n // phases(p) < choices.wgmma_min_columns:
        return params
    wide = -(-shape.m // 128) * column_tiles(p, 128) * phases(p) * p.groups >= choices.wgmma_wide_tiles \
        * dev.compute_units
    names = (("deep", "narrow") if shape.k >= choices.wgmma_deep else ("shallow", "narrow")) if wide else ("narrow",)
    for name in names:
        trial = dict(base, **choices.wgmma_tiles[name])
        if valid(p, trial, dev):
            return trial
    return params


def _wgrad(problem: ConvProblem, params: Params, dev: DeviceInfo, valid: Valid) -> Params:
    """Backward-weights on WGMMA (where wgmma_w): 128x128 tiles in 3 stages (64x128 where K/G <= 64: 3 stages fp16,
    4 TF32), the split _wgmma_w_us predicts fastest.
    - fp16 where _copied chose the channel-fastest copy (B MN-major): 32-deep slices; dy's padded copy where its
      planes are not a multiple of 8 elements (PAD_DY), there only where N*P*Q >= wgmma_w_pad_min_terms.
    - TF32 over at least wgmma_w_tf32_min_terms terms and wgmma_w_tf32_min_outputs outputs: B K-major, gathered
      from x in place (TF32 wgmma reads no MN-major operand), 16-deep slices; dy and x reach the tensor cores
      truncated to TF32 (ConvImplicitGemmMma.truncates_tf32)."""
    p, shape, choices = problem, gemm_shape(problem), measured.CHOICES
    half, odd, terms = p.dtype is DataType.FLOAT16, pad_dy_fits(p), p.n * p.out_h * p.out_w   # odd: fp16 only
    if not choices.wgmma_w:
        return params
    if half and (not params["TRANSFORM_X"] or odd and terms < choices.wgmma_w_pad_min_terms):
        return params
    if not half and (terms < choices.wgmma_w_tf32_min_terms or shape.m * shape.n < choices.wgmma_w_tf32_min_outputs):
        return params
    narrow = shape.m <= 64
    tile = dict(choices.wgmma_tiles["narrow" if narrow else "deep"], K_BLK=choices.wgmma_row_bytes // p.dtype.itemsize,
                PAD_DY=odd, TRANSFORM_X=half)
    if half or not narrow:
        tile["STAGES"] = 3
    splits = [s for s in GRID["SPLIT"] if s <= split_limit(p)]
    for split in sorted(splits, key=lambda s: _wgmma_w_us(p, dict(tile, SPLIT=s), dev)):
        for vector in (True, False):
            trial = {**params, **WGMMA_W_PARAMS, **tile, "SPLIT": split, "VECTOR_A": vector}
            if valid(p, trial, dev):
                return trial
    return params


def _wgmma_w_us(problem: ConvProblem, params: Params, dev: DeviceInfo) -> float:
    """A WGMMA backward-weights kernel's time in microseconds as a function of its split (a model fitted per data
    type on an H100): the compute unit with the most work-groups runs them two at a time (one alone is slower:
    wgmma_w_slice_us, a slice of K_BLK terms), each over its chunk's slices plus wgmma_w_chunk_slices (pipeline
    fill, epilogue); then the split's fp32 partials are written and summed (wgmma_w_partial_gbs,
    wgmma_w_reduce_us)."""
    choices = measured.CHOICES
    shape = gemm_shape(problem)
    split = params["SPLIT"]
    groups = -(-shape.m // params["M_BLK"]) * column_tiles(problem, params["N_BLK"]) * problem.groups * split
    per_cu = -(-groups // dev.compute_units)
    slices = wgrad_terms(problem, params) / split / params["K_BLK"]
    alone, shared = choices.wgmma_w_slice_us[problem.dtype]
    us = per_cu * (slices + choices.wgmma_w_chunk_slices[problem.dtype]) * (alone if per_cu == 1 else shared)
    if split > 1:
        us += split * shape.m * shape.n * problem.groups * 8 / (choices.wgmma_w_partial_gbs * 1e3) \
            + choices.wgmma_w_reduce_us
    return us
