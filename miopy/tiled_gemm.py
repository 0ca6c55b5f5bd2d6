"""The shared tiled SGEMM (kernels/gemm.cl): matrix shapes, tunable tiling, validity rules and launch builders.

Shared machinery that knows no family: a GEMM-based solver (convolution's 1x1 and im2col today) describes
its matrix product as a ``GemmShape`` (sizes, layouts, batch, index maps) and turns it into kernel launches
with ``gemm_launch`` and, for a product split along its inner dimension, ``split_reduce_launch``. The tiling
params (``GEMM_GRID``), their validity rules and the default heuristic live here, so every GEMM-based solver
tunes the same way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .device import (
    SPLIT_WORKSPACE_CAP,
    DeviceInfo,
    accurate_split,
    grid_reason,
    local_memory_reason,
    sum_steps,
    work_group_reason,
)
from .kernel_cache import KernelSpec
from .solver import KernelLaunch, Params, ceil_div, round_up
from .tensor import FLOAT_BYTES, DataType

GEMM_GRID = {
    "TILE_M": (16, 32, 64, 128),
    "TILE_N": (16, 32, 64, 128),
    "WPT_M": (1, 2, 4, 8),
    "WPT_N": (1, 2, 4, 8),
    "K_BLK": (4, 8, 16),
    "SPLIT_K": (1, 4, 16, 64, 256),
}
GEMM_PARAM_DOC = {
    "TILE_M": "rows of C per work-group",
    "TILE_N": "columns of C per work-group",
    "WPT_M": "rows of C per work-item (accumulated in registers)",
    "WPT_N": "columns of C per work-item (accumulated in registers)",
    "K_BLK": "depth of the A and B slices staged in local memory per step",
    "SPLIT_K": "work-groups sharing one C tile along the inner dimension (partials summed in fixed order)",
}
LOCAL_PAD = 4                          # floats of padding per local row (gemm.cl: LDS_A, LDS_B)
PARTIAL_BYTES = FLOAT_BYTES            # split partials are float whatever the data type
GPU_REGISTER_FILE = 65536              # 32-bit registers per compute unit (NVIDIA since Kepler, AMD CU)
GPU_MAX_REGISTERS_PER_ITEM = 255
REGISTER_OVERHEAD = 24                 # estimated registers beyond accumulators and operands
MIN_SPLIT_CHUNK = 256                  # the default splits only when each split still sums this many terms
_MIN_TILE = min(GEMM_GRID["TILE_M"])
_MIN_K_BLK = min(GEMM_GRID["K_BLK"])


@dataclass(frozen=True)
class IndexMap:
    """Maps an index i along an operand's contiguous dimension to an element offset.

    i is split as (outer, mid, inner) with inner < inner_size and mid < mid_size, and lands at
    outer * step_outer + mid * step_mid + inner * step_inner. This lets one GEMM run over images laid
    side by side in a tensor, or read every stride-th element of a plane, without copying.
    """

    inner_size: int
    mid_size: int = 1
    step_inner: int = 1
    step_mid: int = 0
    step_outer: int = 0

    @classmethod
    def images(cls, plane: int, image_stride: int) -> IndexMap:
        """i = image * plane + offset_in_plane -> image * image_stride + offset_in_plane."""
        return cls(plane, 1, 1, 0, image_stride)

    @classmethod
    def strided_plane(cls, rows: int, cols: int, row_step: int, col_step: int, image_stride: int) -> IndexMap:
        """i = (image, row, col) over rows x cols planes -> image*image_stride + row*row_step + col*col_step."""
        return cls(cols, rows, col_step, row_step, image_stride)

    def defines(self, operand: str) -> dict[str, int]:
        return {f"{operand}_MAP_INNER": self.inner_size, f"{operand}_MAP_MID": self.mid_size,
                f"{operand}_STEP_INNER": self.step_inner, f"{operand}_STEP_MID": self.step_mid,
                f"{operand}_STEP_OUTER": self.step_outer}


@dataclass(frozen=True)
class GemmShape:
    """C[b] = A[b] * B[b] for b < batch (A: m x k, B: k x n); gemm.cl's header says how each is addressed.

    ld* are leading dimensions, *_batch element strides between batch entries, *_map optional index maps
    of each operand's contiguous dimension (k of A, or m when trans_a; n of B, or k when trans_b; n of C).
    """

    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int
    trans_a: bool = False
    trans_b: bool = False
    batch: int = 1
    a_batch: int = 0
    b_batch: int = 0
    c_batch: int = 0
    a_map: IndexMap | None = None
    b_map: IndexMap | None = None
    c_map: IndexMap | None = None

    @property
    def c_is_packed(self) -> bool:
        """C is batch dense m x n matrices back to back (what split partials and their reduction need)."""
        return self.c_map is None and self.ldc == self.n and (self.batch == 1 or self.c_batch == self.m * self.n)

    @property
    def c_count(self) -> int:
        return self.batch * self.m * self.n

    def defines(self) -> dict[str, int | bool]:
        out = {"GEMM_M": self.m, "GEMM_N": self.n, "GEMM_K": self.k, "TRANS_A": self.trans_a,
               "TRANS_B": self.trans_b, "LDA": self.lda, "LDB": self.ldb, "LDC": self.ldc,
               "A_BATCH": self.a_batch, "B_BATCH": self.b_batch, "C_BATCH": self.c_batch}
        for operand, index_map in (("A", self.a_map), ("B", self.b_map), ("C", self.c_map)):
            if index_map is not None:
                out.update(index_map.defines(operand))
        return out


def k_chunk(shape: GemmShape, k_blk: int, split: int) -> int:
    """Inner-dimension length each of split work-groups sums (a multiple of k_blk)."""
    return round_up(ceil_div(shape.k, split), k_blk)


def split_limit(shape: GemmShape) -> int:
    """The largest SPLIT_K whose partial results fit in SPLIT_WORKSPACE_CAP (1 when C is not packed)."""
    if not shape.c_is_packed:
        return 1
    return max(s for s in GEMM_GRID["SPLIT_K"] if s == 1 or s * shape.c_count * PARTIAL_BYTES <= SPLIT_WORKSPACE_CAP)


def split_workspace_bytes(shape: GemmShape) -> int:
    """Workspace for the partial results of the largest allowed split (0 when splitting is not allowed)."""
    limit = split_limit(shape)
    return 0 if limit == 1 else limit * shape.c_count * PARTIAL_BYTES


# -- validity ------------------------------------------------------------------------------------------
def gemm_invalid_reason(shape: GemmShape, params: Params, dev: DeviceInfo, max_split: int = 1) -> str | None:
    """Why the tiling params cannot run shape on dev (or waste it), or None. params are GEMM_GRID points."""
    for rule in (_tiling_reason, _device_reason, _waste_reason):
        reason = rule(shape, params, dev)
        if reason is not None:
            return reason
    return _split_reason(shape, params, max_split)


def _tiling_reason(shape: GemmShape, params: Params, dev: DeviceInfo) -> str | None:
    for tile, wpt in (("TILE_M", "WPT_M"), ("TILE_N", "WPT_N")):
        if params[tile] % params[wpt] or params[tile] // params[wpt] < 2:
            return f"{tile}={params[tile]} is not at least two work-items of {wpt}={params[wpt]}"
    return None


def _device_reason(shape: GemmShape, params: Params, dev: DeviceInfo) -> str | None:
    for rule in (_work_group_reason, _launch_grid_reason, _local_memory_reason, _register_reason):
        reason = rule(shape, params, dev)
        if reason is not None:
            return reason
    return None


def _work_group_reason(shape: GemmShape, params: Params, dev: DeviceInfo) -> str | None:
    return work_group_reason(dev, (params["TILE_N"] // params["WPT_N"], params["TILE_M"] // params["WPT_M"]))


def _launch_grid_reason(shape: GemmShape, params: Params, dev: DeviceInfo) -> str | None:
    return grid_reason((0, ceil_div(shape.m, params["TILE_M"]), shape.batch * params["SPLIT_K"]))


def _local_memory_reason(shape: GemmShape, params: Params, dev: DeviceInfo) -> str | None:
    floats = params["K_BLK"] * (params["TILE_M"] + params["TILE_N"] + 2 * LOCAL_PAD)   # gemm.cl's a_tile, b_tile
    return local_memory_reason(dev, floats * FLOAT_BYTES)


def _register_reason(shape: GemmShape, params: Params, dev: DeviceInfo) -> str | None:
    """On a GPU, the estimated registers of a work-group must fit one compute unit's register file."""
    threads = (params["TILE_M"] // params["WPT_M"]) * (params["TILE_N"] // params["WPT_N"])
    registers = params["WPT_M"] * params["WPT_N"] + params["WPT_M"] + params["WPT_N"] + REGISTER_OVERHEAD
    if dev.is_gpu and (registers > GPU_MAX_REGISTERS_PER_ITEM or registers * threads > GPU_REGISTER_FILE):
        return f"about {registers} registers x {threads} work-items exceed the register file"
    return None


def _waste_reason(shape: GemmShape, params: Params, dev: DeviceInfo) -> str | None:
    """Reject tiles at least twice the matrix: a smaller tile does the same work with less padding."""
    for name, size in (("TILE_M", shape.m), ("TILE_N", shape.n)):
        if params[name] > _MIN_TILE and params[name] >= 2 * size:
            return f"{name}={params[name]} is at least twice the matrix's {size}"
    if params["K_BLK"] > _MIN_K_BLK and params["K_BLK"] >= 2 * shape.k:
        return f"K_BLK={params['K_BLK']} is at least twice the inner dimension {shape.k}"
    return None


def _split_reason(shape: GemmShape, params: Params, max_split: int) -> str | None:
    split = params["SPLIT_K"]
    if split > max_split:
        return f"SPLIT_K={split} exceeds {max_split}, the most this problem allows"
    if split > 1 and (split - 1) * k_chunk(shape, params["K_BLK"], split) >= shape.k:
        return f"SPLIT_K={split} leaves a split with nothing to sum (inner dimension {shape.k})"
    return None


# -- default heuristic ------------------------------------------------------------------------------
def gemm_default_params(shape: GemmShape, dev: DeviceInfo, max_split: int = 1) -> Params:
    """Constant-time tiling: 16 x 16 work-items with tiles sized to the matrix on a GPU; small on a CPU."""
    if not dev.is_gpu:
        params = {"TILE_M": 16, "TILE_N": 16, "WPT_M": 2, "WPT_N": 2, "K_BLK": 4, "SPLIT_K": 1}
        params["SPLIT_K"] = _accurate_split(shape, params, max_split)
        return params
    tile_m, tile_n = _gpu_tile(shape.m), _gpu_tile(shape.n)
    if tile_m == tile_n == 128 and ceil_div(shape.m, 128) * ceil_div(shape.n, 128) * shape.batch < dev.compute_units:
        tile_m = tile_n = 64  # too few large tiles to fill the device
    params = {"TILE_M": tile_m, "TILE_N": tile_n, "WPT_M": tile_m // 16, "WPT_N": tile_n // 16,
              "K_BLK": 8 if shape.k > 4 else 4, "SPLIT_K": 1}
    params["SPLIT_K"] = max(_gpu_split(shape, params, dev, max_split), _accurate_split(shape, params, max_split))
    return params


def _accurate_split(shape: GemmShape, params: Params, max_split: int) -> int:
    """The smallest split whose partial sums add at most ACCURATE_SPLIT_CHUNK terms (within what params
    allow): long inner dimensions (backward-weights over N*P*Q) then round like short ones."""
    allowed = [s for s in GEMM_GRID["SPLIT_K"] if _split_reason(shape, {**params, "SPLIT_K": s}, max_split) is None]
    return accurate_split(shape.k, allowed, max(allowed)) if allowed else 1


def _gpu_split(shape: GemmShape, params: Params, dev: DeviceInfo, max_split: int) -> int:
    """The smallest split that gives every compute unit a work-group, while splits stay long enough."""
    tiles = ceil_div(shape.m, params["TILE_M"]) * ceil_div(shape.n, params["TILE_N"]) * shape.batch
    chosen = 1
    for split in GEMM_GRID["SPLIT_K"][1:]:
        if tiles * chosen >= dev.compute_units or ceil_div(shape.k, split) < MIN_SPLIT_CHUNK:
            break
        if _split_reason(shape, {**params, "SPLIT_K": split}, max_split) is None \
                and _device_reason(shape, {**params, "SPLIT_K": split}, dev) is None:
            chosen = split
    return chosen


def _gpu_tile(size: int) -> int:
    return next((t for t in (16, 32, 64) if size <= t), 128)


# -- launches ---------------------------------------------------------------------------------------
def gemm_launch(shape: GemmShape, params: Params, a: str, b: str, c: str, offsets: tuple[int, int, int] = (0, 0, 0),
                beta: float = 0.0, epilogue=None, epilogue_plane: int = 0, dtype: DataType = DataType.FLOAT32,
                c_dtype: DataType | None = None) -> KernelLaunch:
    """The launch computing C = A * B + beta * C on the buffers with roles a, b, c at element offsets.

    With SPLIT_K > 1, c receives SPLIT_K partial results of shape.c_count elements each (sum them with
    split_reduce_launch). With an epilogue (C is a forward output of epilogue_plane = P*Q elements per
    channel, batch = group), the store applies it. dtype is A's and B's storage type, c_dtype C's (default
    dtype; split partials are always FLOAT32, so c_dtype is forced to it when SPLIT_K > 1).
    """
    tile_m, tile_n, split = params["TILE_M"], params["TILE_N"], params["SPLIT_K"]
    defines = {**shape.defines(), **{name: params[name] for name in ("TILE_M", "TILE_N", "WPT_M", "WPT_N", "K_BLK")},
               "SPLIT_K": split, "K_CHUNK": k_chunk(shape, params["K_BLK"], split),
               "SUM_STEPS": sum_steps(shape.k, k_chunk(shape, params["K_BLK"], split), params["K_BLK"]),
               "SPLIT_STRIDE": shape.c_count if split > 1 else 0, "EVEN_M": shape.m % tile_m == 0,
               "EVEN_N": shape.n % tile_n == 0, "EVEN_K": shape.k % params["K_BLK"] == 0, "GEMM_EPILOGUE": False,
               **dtype.defines}
    c_type = DataType.FLOAT32 if split > 1 else (c_dtype or dtype)
    defines["C_HALF"] = c_type.defines["MIOPY_HALF"]
    args = (a, b, c, *(np.int32(o) for o in offsets), np.float32(beta))
    if epilogue is not None:
        defines.update(epilogue.defines())
        defines.update(GEMM_EPILOGUE=True, EPI_PLANE=epilogue_plane)
        args += tuple(epilogue.args)
    cols, rows = tile_n // params["WPT_N"], tile_m // params["WPT_M"]
    global_size = (ceil_div(shape.n, tile_n) * cols, ceil_div(shape.m, tile_m) * rows, shape.batch * split)
    spec = KernelSpec.make("gemm.cl", "gemm", defines, ("-cl-mad-enable",))
    return KernelLaunch(spec, global_size, (cols, rows, 1), args)


def split_reduce_launch(shape: GemmShape, split: int, partial: str, out: str, partial_offset: int = 0,
                        beta: float = 0.0, dtype: DataType = DataType.FLOAT32) -> KernelLaunch:
    """The launch summing split partial results (float, from gemm_launch with SPLIT_K = split) into out, whose
    storage type is dtype."""
    count = shape.c_count
    spec = KernelSpec.make("split_reduce.cl", "split_reduce", {"SPLIT_K": split, "COUNT": count, **dtype.defines})
    return KernelLaunch(spec, (round_up(count, 256),), (256,),
                        (partial, out, np.int32(partial_offset), np.int32(0), np.float32(beta)))


