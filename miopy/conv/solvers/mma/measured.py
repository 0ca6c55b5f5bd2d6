"""The measured choices of ConvImplicitGemmMma: thresholds, tiles and model coefficients chosen by timing the kernels
on an H100, kept as data in one place (the measurements behind each: docs/notes/tensor_core_defaults.md).

Most steer only the default params. Two shape the GEMM the kernel runs, and so validity and the workspace:
split_fb_max_output (which problems may split forward / backward-data) and phased_1x1_max_dx (which 1x1 strided
backward-data runs in phases). Code reads them as ``measured.CHOICES.<name>`` when it runs, so an experiment can
replace CHOICES with ``dataclasses.replace(CHOICES, ...)``.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ....tensor import DataType

Tile = tuple[int, int, int, int]   # (M_BLK, N_BLK, WARPS_M, WARPS_N)


def _frozen(mapping: dict) -> Mapping:
    """A field holding a read-only view of mapping."""
    return field(default_factory=lambda: MappingProxyType(mapping))


@dataclass(frozen=True)
class Measured:
    """ConvImplicitGemmMma's measured choices, each with what it decides."""

    # -- the GEMM the kernel runs
    # forward / backward-data split-K only for outputs of at most this many elements (about two waves of 128x128
    # tiles on 132 compute units): larger outputs fill the GPU without it, and the workspace stays the weight copy
    split_fb_max_output: int = 2 * 132 * 128 * 128
    # bytes: 1x1 backward-data at stride > 1 runs in phases only while dx is this small (a phase's scattered
    # stores merge in L2 while dx fits there)
    phased_1x1_max_dx: int = 32 << 20

    # -- the score model's candidates (defaults._candidates, _score; mma.sync)
    # candidate tiles, largest first: 64x64 warp tiles where the problem is large, down to one warp on 16x16
    tiles: tuple[Tile, ...] = ((128, 128, 2, 2), (128, 128, 2, 4), (256, 128, 4, 2), (128, 256, 2, 4),
                               (128, 64, 2, 2), (64, 128, 2, 2), (64, 64, 2, 2), (128, 32, 4, 1), (32, 128, 1, 4),
                               (64, 32, 2, 1), (32, 64, 1, 2), (32, 32, 1, 1), (16, 64, 1, 2), (16, 32, 1, 1),
                               (16, 16, 1, 1))
    k_blks_fp16: tuple[int, ...] = (32, 16)       # candidate slice depths, fp16 data
    k_blks_fp32: tuple[int, ...] = (16, 32, 8)    # ... TF32 (one stage keeps only the shallowest: deeper ones spill)
    wgrad_max_sums: int = 64      # backward-weights candidates: at most this many sums per lane (more spill)
    split_cost_fp32: int = 320    # inner-loop terms the reduction of one split's partials costs, TF32
    split_cost_fp16: int = 640    # ... fp16 (its products run twice as fast)

    # -- cp.async (defaults._pipelined)
    pipeline_fp16_min_tile: int = 128 * 128   # fp16 forward / backward-data: cp.async where M_BLK x N_BLK >= this
    halved_tile_split: int = 2    # TF32 backward-weights on 128x128 tiles halved to 128x64: the split times this,
    halved_split_min_plane: int = 169   # ... where the filter is over 1x1 and the output planes at least this (13x13)

    # -- narrow GEMMs (defaults._narrow)
    narrow_columns: int = 192     # forward / backward-data GEMMs of at most this many columns (a phase's) ...
    narrow_tile: Mapping[str, int] = _frozen({"M_BLK": 64, "N_BLK": 16, "WARPS_M": 4, "WARPS_N": 1})  # ... take it
    gemv_columns: int = 16        # ... and those of at most this many columns also split-K
    gemv_split: int = 8           # ... this many ways

    # -- the channel-fastest copy of x / dy (defaults._copied; filters over 1x1 only)
    wgrad_fp16_copy_stages: int = 3   # fp16 backward-weights over even planes: the copy by cp.async in this many
    #                                   stages (0: no such default)
    wgrad_fp16_pad_odd: bool = True   # ... over odd planes too, reading dy's zero-padded copy (PAD_DY),
    wgrad_fp16_pad_min_terms: int = 16384   # ... where N*P*Q is at least this
    copy_wgrad_min_plane: int = 169   # backward-weights at stride 1: the copy for output planes of at least this,
    copy_wgrad_min_terms: int = 16384   # ... N*P*Q of at least this,
    copy_wgrad_tf32_ratio: int = 1728   # ... and in TF32 K/G*R*S*P*Q / (H*W) of at least this (a small copy)
    copy_fb_min_rows_taps: int = 4608   # TF32 forward / backward-data: the copy where rows (K, C) x R*S reach this
    copy_fb_min_terms: int = 1568       # ... and N*P*Q this

    # -- backward-data of few input channels (defaults.col2im_wanted)
    col2im_channels: int = 8      # backward-data with at most this many input channels takes COL2IM

    # -- WGMMA forward / backward-data (wgmma_defaults)
    wgmma_row_bytes: int = 64     # slices of rows this long (K_BLK 32 fp16, 16 TF32)
    wgmma_min_columns: int = 4096   # GEMMs at least this wide (a phase's columns, filters over 1x1) take WGMMA,
    wgmma_wide_tiles: int = 4     # ... on 128-row tiles where 128x128 ones make this many waves of compute units,
    wgmma_deep: int = 2304        # ... 128x128 in 3 stages over inner dimensions this long, else 128x64 in 4
    wgmma_tiles: Mapping[str, Mapping[str, int]] = _frozen({
        "deep": {"M_BLK": 128, "N_BLK": 128, "WARPS_M": 2, "STAGES": 3},
        "shallow": {"M_BLK": 128, "N_BLK": 64, "WARPS_M": 2, "STAGES": 4},
        "narrow": {"M_BLK": 64, "N_BLK": 128, "WARPS_M": 1, "STAGES": 4}})

    # -- WGMMA backward-weights (wgmma_defaults._wgrad)
    wgmma_w: bool = True          # backward-weights on WGMMA by default,
    wgmma_w_pad_min_terms: int = 4096     # ... fp16 over planes that need dy's padded copy where N*P*Q is this large,
    wgmma_w_tf32_min_terms: int = 6272    # ... TF32 where N*P*Q is this large (ResNet-50's 14x14 stage at N=32)
    wgmma_w_tf32_min_outputs: int = 32768   # ... and the weight gradient has this many elements per group
    # its time model (_wgmma_w_us): a slice's microseconds, the work-group alone on its compute unit or beside others
    wgmma_w_slice_us: Mapping[DataType, tuple[float, float]] = _frozen(
        {DataType.FLOAT16: (0.78, 0.42), DataType.FLOAT32: (0.60, 0.44)})
    wgmma_w_chunk_slices: Mapping[DataType, int] = _frozen(   # slices' worth of time per work-group (fill, epilogue)
        {DataType.FLOAT16: 12, DataType.FLOAT32: 14})
    wgmma_w_partial_gbs: float = 1500   # GB/s writing and summing the split's partials
    wgmma_w_reduce_us: float = 3        # the sum's launch


CHOICES = Measured()
