"""ConvImplicitGemmMma: implicit-GEMM convolution on NVIDIA tensor cores (inline PTX mma.sync), all directions."""
from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator

import numpy as np

from ... import ptx_patch
from ...device import (
    SPLIT_WORKSPACE_CAP,
    DeviceInfo,
    grid_reason,
    index_reason,
    local_memory_reason,
    work_group_reason,
)
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, require, require_none, round_up
from ...tensor import DataType, TensorDesc
from ..problem import ConvDesc, ConvProblem, Direction
from ..solver import ConvSolver
from .common import problem_defines, stride_defines
from .direct_local import MIN_SPLIT_CHUNK, ImplicitGemm, inner_channels, max_split, split_chunk
from .direct_local import gemm_shape as _flat_gemm_shape

KERNEL_FILE = "conv_mma.cl"
WARP = 32
MAX_ACCUMULATORS = 128        # fp32 sums per lane (a 64x64 warp tile): beyond this registers spill
MAX_PREFETCH = 64             # elements per lane fetched one step ahead into registers (A and B together)
MAX_COPIES = 128              # elements per lane a step copies, registers and cp.async together (unrolled code)
REDUCE_WG = 64
MAX_SPLIT_FB = 16             # forward / backward-data split-K: at most this many partial outputs
# forward / backward-data split-K only where the output is small (about two waves of 128x128 tiles on an H100's
# 132 compute units): larger outputs fill the GPU without it, and the solver's workspace (find allocates the
# largest) stays the weight copy there
SPLIT_FB_MAX_OUTPUT = 2 * 132 * 128 * 128
NARROW_COLUMNS = 192          # forward / backward-data GEMMs this narrow take NARROW_TILE (see _narrow)
NARROW_TILE = {"M_BLK": 64, "N_BLK": 16, "WARPS_M": 4, "WARPS_N": 1}
GEMV_COLUMNS, GEMV_SPLIT = 16, 8   # ... and this narrow also split-K this many ways
HALVED_TILE_SPLIT = 2         # TF32 backward-weights: the split's factor where _pipelined halves 128x128 tiles
SPLIT_COST_FP32, SPLIT_COST_FP16 = 320, 640   # terms of the reduction one split's partials cost (see _split_cost)
WGRAD_FP16_COPY_STAGES = 3      # fp16 backward-weights over even planes: TRANSFORM_X by cp.async (see _copied; 0: off)
WGRAD_FP16_PAD_ODD = True       # ... and over odd planes with dy's padded copy (PAD_DY; see _copied)
WGRAD_FP16_PAD_MIN_TERMS = 16384   # ... where N*P*Q is at least this
TRANSFORM_X_CAP = 512 << 20   # bytes: the largest channel-fastest copy of x / dy (TRANSFORM_X) the workspace holds
PARTIAL_ALIGN = 256           # bytes: the split partials start this aligned after the weight copy
COL2IM_CAP = 1 << 30          # bytes: the largest fp32 column matrix COL2IM's workspace holds
COL2IM_CHANNELS = 8           # backward-data with at most this many input channels takes COL2IM by default
MMA_ROWS = 16                 # rows of one mma tile: COL2IM applies below this many input channels
# Hybrid |a-e|/(1+|e|) bound vs float64 for find / tuning checks: 4 * 2^-11 * sqrt(L) at L = 1024 terms (the
# registry grows it like sqrt(L) beyond): each TF32 operand rounds by up to 2^-11 (10-bit mantissa), so a sum of
# L products of unit-size operands errs by about 2^-11 * sqrt(L), and the hybrid error is absolute where the
# result is near 0. fp16 data (exact products, one rounding of the output) stays far below. docs/tensor_cores.md.
TENSOR_CORE_TOLERANCE = 4 * 2.0**-11 * 32
NEEDS_PTX = "needs NVIDIA OpenCL with PTX mma"
CP_ASYNC_PROBE = "cp_async"   # the ptx_probe name of cp.async (global -> local copies, sm_80+)
WGMMA_PROBE = "wgmma"         # ... of Hopper's wgmma (sm_90a, through miopy.ptx_patch)
WGMMA_N = ptx_patch.SHAPES_N  # N_BLK values with a wgmma shape in miopy/kernels/wgmma.h


def mma_k(dtype: DataType) -> int:
    """Inner size of one mma: m16n8k8 for TF32, m16n8k16 for fp16."""
    return 16 if dtype is DataType.FLOAT16 else 8


def instruction(dtype: DataType) -> str:
    """The ptx_probe name of the mma family dtype runs on."""
    return "f16" if dtype is DataType.FLOAT16 else "tf32"


def async_operands(params: Params, dtype: DataType) -> tuple[bool, bool]:
    """Whether cp.async copies A and B (see CP_ASYNC in conv_mma.cl): A always, B when its elements are 4 bytes
    or it is read from the channel-fastest copy (TRANSFORM_X: 16-byte vectors); fp16's 2-byte gather stays on
    the register path."""
    on = bool(params["CP_ASYNC"])
    return on, on and (dtype is not DataType.FLOAT16 or bool(params["TRANSFORM_X"]))


def b_kk_fast(params: Params, direction: Direction) -> bool:
    """Whether B's local tile is [col][kk] (backward-weights, forward / backward-data with TRANSFORM_X) rather than
    [kk][col] (forward / backward-data, backward-weights with TRANSFORM_X: vectors along the columns)."""
    return (direction is Direction.BACKWARD_WEIGHTS) != bool(params["TRANSFORM_X"])


def kernel_warps(params: Params) -> tuple[int, int]:
    """The kernel's WARPS_M, WARPS_N: the params' own, or with WGMMA four warps of 16 rows per warpgroup."""
    if params.get("WGMMA"):
        return 4 * params["WARPS_M"], 1
    return params["WARPS_M"], params["WARPS_N"]


def threads_of(params: Params) -> int:
    """Work-items of one work-group."""
    warps_m, warps_n = kernel_warps(params)
    return WARP * warps_m * warps_n


def local_bytes(params: Params, dtype: DataType, direction: Direction) -> int:
    """Local memory of one work-group: STAGES x (A tile + B tile), padded rows (see conv_mma.cl); WGMMA's swizzled
    rows are not padded."""
    if params.get("WGMMA"):
        return params["STAGES"] * (params["M_BLK"] + params["N_BLK"]) * params["K_BLK"] * dtype.itemsize
    pad_k, pad_n = (8, 8) if dtype is DataType.FLOAT16 else (4, 8)
    a_tile = params["M_BLK"] * (params["K_BLK"] + pad_k)
    if b_kk_fast(params, direction):
        b_tile = params["N_BLK"] * (params["K_BLK"] + pad_k)
    else:
        b_tile = params["K_BLK"] * (params["N_BLK"] + pad_n)
    return params["STAGES"] * (a_tile + b_tile) * dtype.itemsize


class ConvImplicitGemmMma(ConvSolver):
    """Implicit-GEMM convolution (no im2col buffer) whose inner product is the tensor cores' mma.sync.

    The GEMM of each direction is ConvDirectLocal's (forward K/G x N*P*Q over C/G*R*S, backward-data
    C/G x N*H*W over K/G*R*S, backward-weights K/G x C/G*R*S over N*P*Q); any direction may split the inner
    loop (SPLIT: fp32 partials in the workspace, summed in a fixed order by a second kernel, deterministic).
    Slices are gathered with zero padding, converted once (fp32 -> TF32 rounding to nearest) and staged in
    bank-conflict-free padded local tiles, double-buffered through registers; each warp keeps a block of
    16x8 fp32 sum tiles, stored through local memory as runs of up to 16 bytes (STAGED_STORE). fp32 data runs
    m16n8k8 TF32 (only under math mode "tf32": products lose 13 mantissa bits); fp16 data runs m16n8k16 with fp32
    sums. Forward applies the fusion epilogue. A filter covering the unpadded image runs as the fully-connected
    layer it is (gemm_view).

    Wins: large layers on NVIDIA GPUs, where it passes the fp32 pipes' peak. Does not apply off NVIDIA's
    OpenCL (no inline PTX), to fp32 under math mode "strict", to non-packed tensors or to tensors spanning
    2^31 elements. Backward-data with stride > 1 (dilation 1) runs in stride_h x stride_w phases of dx, each
    over only the taps that reach it (see PHASED in conv_mma.cl); with dilation too it wastes the taps that land
    between outputs. Backward-data of few input channels (COL2IM) computes the column matrix W^T dy as the 1x1
    forward GEMM it is, into the workspace, and col2im gathers dx from it: the C rows of the direct GEMM would fill
    C of the mma's 16.
    """

    id = "ConvImplicitGemmMma"
    algorithm = "implicit_gemm"
    directions = frozenset(Direction)
    dtypes = frozenset({DataType.FLOAT32, DataType.FLOAT16})
    supports_epilogue = True
    tensor_cores = True
    tolerance = TENSOR_CORE_TOLERANCE
    grid = {"M_BLK": (16, 32, 64, 128, 256), "N_BLK": (16, 32, 64, 128, 256), "K_BLK": (8, 16, 32, 64),
            "WARPS_M": (1, 2, 4), "WARPS_N": (1, 2, 4), "STAGES": (1, 2, 3, 4), "CHANNEL_BLOCKS": (False, True),
            "SPLIT": (1, 2, 4, 8, 16, 32, 64, 128, 256), "TRANSFORM_W": (False, True), "LDMATRIX": (False, True),
            "VECTOR_A": (False, True), "CP_ASYNC": (False, True), "VECTOR_B": (0, 2, 4, 8),
            "TRANSFORM_X": (False, True), "COL2IM": (False, True), "PAD_DY": (False, True), "WGMMA": (False, True)}
    param_doc = {
        "M_BLK": "work-group tile rows (output channels; input channels in backward-data)",
        "N_BLK": "work-group tile columns (output pixels; filter taps in backward-weights)",
        "K_BLK": "slice of the inner dimension staged in local memory per step (a multiple of the mma's k)",
        "WARPS_M": "warps along the tile's rows (each warp owns M_BLK/WARPS_M rows, a multiple of 16)",
        "WARPS_N": "warps along the tile's columns (each warp owns N_BLK/WARPS_N columns, a multiple of 8)",
        "STAGES": "local buffers: 2 stages the next slice while this one is multiplied (one barrier a step); "
                  "3 and 4 (CP_ASYNC) keep STAGES-1 slices' copies in flight",
        "CHANNEL_BLOCKS": "forward / backward-data: loop over (K_BLK channels, one tap) slices, channels "
                          "padded to K_BLK; else over the flat channel x tap index",
        "SPLIT": "split-K: partial sums over that many chunks of the inner loop (N*P*Q in backward-weights, the "
                 "slices of C/G*R*S or K/G*R*S forward / backward-data) into the workspace, then a fixed-order "
                 "sum (deterministic; forward applies the epilogue there)",
        "TRANSFORM_W": "forward / backward-data with CHANNEL_BLOCKS: first copy the weights channel-fastest into "
                       "the workspace, so the A slices are read coalesced",
        "LDMATRIX": "read mma fragments from local memory with ldmatrix.x4 (B too when fp16 or backward-weights)",
        "VECTOR_A": "fetch A as 16-byte vectors along k (needs k contiguous: transformed or 1x1 forward weights, "
                    "dy planes; channel / plane sizes a multiple of the vector)",
        "VECTOR_B": "forward / backward-data, CHANNEL_BLOCKS, stride 1 along w: gather B as that many consecutive "
                    "columns of an output row, one vector (or one cp.async) where the tap keeps them aligned and "
                    "inside, one local store (W and Q multiples of it; 16 bytes at most)",
        "TRANSFORM_X": "first copy x (forward, backward-weights) or dy (backward-data) channel-fastest (NHWC) into "
                       "the workspace, so B is read as 16-byte vectors of channels (one bounds check and one cp.async "
                       "per vector, fp16 too): along k forward / backward-data (with CHANNEL_BLOCKS), along the "
                       "columns, ordered (tap, c), in backward-weights; channels per group a multiple of the vector, "
                       f"the copy within {TRANSFORM_X_CAP >> 20} MiB",
        "CP_ASYNC": "copy slices global -> local with cp.async (no registers, zero-fill for padding) into a ring of "
                    "STAGES >= 2 buffers: fp32 A and B; fp16 A (16-byte VECTOR_A, else pairs along k: k contiguous, "
                    "sizes even) and, with VECTOR_B, B's aligned vectors (its 2-byte gather otherwise stays on "
                    "registers); needs the device's cp.async probe",
        "PAD_DY": "fp16 backward-weights over planes whose P*Q is not a multiple of 8: first copy dy with each plane "
                  "padded with zeros to one, so A is read as 16-byte vectors (and by cp.async) there too",
        "WGMMA": "Hopper's wgmma (through miopy.ptx_patch) instead of mma.sync, one m64nN_BLK per warpgroup of four "
                 "warps reading both operands from local memory; WARPS_M counts the warpgroups (M_BLK = 64 x "
                 f"WARPS_M), WARPS_N = 1; needs CP_ASYNC, no LDMATRIX, N_BLK in {WGMMA_N} and the device's wgmma "
                 "probe; forward / backward-data also CHANNEL_BLOCKS, TRANSFORM_W, TRANSFORM_X and VECTOR_A; "
                 "backward-weights TRANSFORM_X and VECTOR_A with fp16 data (B MN-major: wgmma transposes 16-bit "
                 "types only), no TRANSFORM_X with TF32 (B K-major, its operands truncated to TF32)",
        "COL2IM": "backward-data (one group, fewer than 16 input channels, a filter larger than 1x1) as a GEMM and "
                  "a gather: the column matrix "
                  "dcol = W^T dy (C*R*S x N*P*Q, fp32 in the workspace, within "
                  f"{COL2IM_CAP >> 20} MiB) by this kernel as the 1x1 forward convolution of dy it is (the other "
                  "params are that GEMM's; it reads the weights' transposing copy, TRANSFORM_W, and does not "
                  "split), then col2im adds each dx element's taps in a fixed order. For few input channels, "
                  "where C/G rows fill a fraction of the mma's 16",
    }

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        problem = gemm_view(problem)
        require(instruction(problem.dtype) in dev.ptx_mma, NEEDS_PTX)
        require(problem.dtype is not DataType.FLOAT32 or problem.math_mode == "tf32", "math mode strict forbids TF32")
        super().applicability(problem, dev)
        require(problem.is_packed, "tensors must be packed NCHW")
        require_none(index_reason(*(d.element_span for d in (problem.x, problem.w, problem.y))))

    def invalid_reason(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
        problem = gemm_view(problem)
        reason = super().invalid_reason(problem, params, dev)
        if reason is None and params["COL2IM"]:
            return self._col2im_reason(problem, params, dev)
        if reason is None:
            reason = (_wgmma_reason(problem, params, dev) or _pipeline_reason(problem, params, dev)
                      or _warp_reason(problem, params) or _device_reason(problem, params, dev))
        return reason or _shape_reason(problem, params)

    def _col2im_reason(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
        """Why COL2IM cannot run with params: the problem's, then its GEMM's (the 1x1 forward, col2im_problem)."""
        if not col2im_fits(problem):
            return (f"COL2IM: backward-data with one group, fewer than {MMA_ROWS} input channels and a filter larger "
                    f"than 1x1, the column matrix within {COL2IM_CAP >> 20} MiB ({column_bytes(problem)} bytes)")
        if params["SPLIT"] > 1 or not params["TRANSFORM_W"]:
            return "COL2IM: its GEMM reads the weights' transposing copy (TRANSFORM_W) and does not split"
        reason = self.invalid_reason(col2im_problem(problem), dict(params, COL2IM=False), dev)
        return reason and f"COL2IM's GEMM: {reason}"

    def search_space(self, problem: ConvProblem, dev: DeviceInfo) -> Iterator[Params]:
        """Every valid grid point in grid order, without visiting values no point of this problem can take
        (splits outside backward-weights, channel blocks in it, cp.async without the device's probe)."""
        problem = gemm_view(problem)
        values = dict(self.grid)
        values["SPLIT"] = tuple(v for v in values["SPLIT"] if v <= split_limit(problem))
        if problem.direction is Direction.BACKWARD_WEIGHTS:
            values["CHANNEL_BLOCKS"] = values["TRANSFORM_W"] = (False,)
        if not transform_x_fits(problem) and not col2im_fits(problem):
            values["TRANSFORM_X"] = (False,)
        if not col2im_fits(problem):
            values["COL2IM"] = (False,)
        if not pad_dy_fits(problem):
            values["PAD_DY"] = (False,)
        values["VECTOR_B"] = tuple(v for v in values["VECTOR_B"] if not v or _vector_b_fits(problem, v))
        if CP_ASYNC_PROBE not in dev.ptx_mma:
            values["CP_ASYNC"], values["STAGES"] = (False,), (1, 2)
        if WGMMA_PROBE not in dev.ptx_mma:
            values["WGMMA"] = (False,)
        names = list(values)
        for point in itertools.product(*values.values()):
            params = dict(zip(names, point))
            if params["STAGES"] > 2 and not params["CP_ASYNC"] or params["CP_ASYNC"] and params["STAGES"] < 2:
                continue
            if (params["TRANSFORM_W"] or params["VECTOR_B"]) and not params["CHANNEL_BLOCKS"]:
                continue
            if params["TRANSFORM_X"] and not params["CHANNEL_BLOCKS"] \
                    and problem.direction is not Direction.BACKWARD_WEIGHTS:
                continue
            if params["TRANSFORM_X"] and params["VECTOR_B"]:
                continue
            if params["WGMMA"] and (params["LDMATRIX"] or params["WARPS_N"] > 1 or not params["TRANSFORM_X"]
                                    and problem.direction is not Direction.BACKWARD_WEIGHTS):
                continue
            if self.is_valid(problem, params, dev):
                yield params

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        problem = gemm_view(problem)
        if col2im_wanted(problem):
            trial = dict(self.default_params(col2im_problem(problem), dev), CHANNEL_BLOCKS=True, TRANSFORM_W=True,
                         SPLIT=1, COL2IM=True)
            if self.is_valid(problem, trial, dev):
                return trial
        valid = [c for c in _candidates(problem, dev) if self.is_valid(problem, c, dev)]
        if not valid:
            return dict(SMALLEST)
        best = max(valid, key=lambda c: _score(problem, c, dev))
        return _hopper(problem, _copied(problem, _narrow(problem, _pipelined(problem, best, dev), dev), dev), dev)

    @staticmethod
    def truncates_tf32(problem: ConvProblem, params: Params) -> bool:
        """Whether params' kernel hands fp32 operands to the tensor cores unrounded, so they are truncated to TF32
        (WGMMA in TF32 backward-weights: cp.async copies dy and x straight into local memory, where wgmma reads
        them; see docs/tensor_cores.md, Accuracy): their error bound has u_in = 2^-10, not 2^-11."""
        return bool(params.get("WGMMA")) and problem.dtype is DataType.FLOAT32 \
            and problem.direction is Direction.BACKWARD_WEIGHTS

    def workspace_bytes(self, problem: ConvProblem) -> int:
        """Room for the transformed weights (TRANSFORM_W) and, where the problem allows TRANSFORM_X, the
        channel-fastest copy of x / dy (forward / backward-data), then fp32 split partials for the largest SPLIT the
        problem allows (see split_limit)."""
        problem = gemm_view(problem)
        split = split_limit(problem)
        partials = 4 * split * output_count(problem) if split > 1 else 0
        copy = round_up(transform_x_bytes(problem), PARTIAL_ALIGN) if transform_x_fits(problem) else 0
        if problem.direction is Direction.BACKWARD_WEIGHTS:
            padded = round_up(pad_dy_bytes(problem), PARTIAL_ALIGN) if pad_dy_fits(problem) else 0
            return copy + padded + partials
        own = round_up(problem.w.element_count * problem.dtype.itemsize, PARTIAL_ALIGN) + copy + partials
        if not col2im_fits(problem):
            return own
        gemm = col2im_problem(problem)
        copies = {"TRANSFORM_W": True, "TRANSFORM_X": transform_x_fits(gemm)}
        return max(own, partial_offset(gemm, copies) + column_bytes(problem))

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        problem = gemm_view(problem)
        if params["COL2IM"]:
            return Solution(self.id, dict(params), _col2im_launches(problem, params), self.workspace_bytes(problem))
        return Solution(self.id, dict(params), self.launches(problem, params, epilogue), self.workspace_bytes(problem))

    def launches(self, problem: ConvProblem, params: Params, epilogue=None,
                 col_out: bool = False) -> tuple[KernelLaunch, ...]:
        """The kernels of params on problem (gemm_view'd, not COL2IM); col_out: the sums go to the workspace as
        fp32 [m][col] (COL_OUT in conv_mma.cl; COL2IM's GEMM) instead of y."""
        shape, split = gemm_shape(problem), params["SPLIT"]
        defines = {**problem_defines(problem), **stride_defines(problem), **problem.dtype.defines,
                   "DIRECTION": int(problem.direction), **{name: params[name] for name in self.grid},
                   "PHASED": int(phased(problem)), "STAGED_STORE": staged_store(problem, params, col_out),
                   "SPLIT_CHUNK": chunk_of(problem, params), "COL_OUT": int(col_out)}
        defines["WARPS_M"], defines["WARPS_N"] = kernel_warps(params)
        args = ("x", "w", "y") + (("workspace",) if split > 1 or params["TRANSFORM_W"] or params["TRANSFORM_X"]
                                  or col_out or params["PAD_DY"] else ())
        # the copies depend on the problem and on which copies there are, not on the tiles: one build serves every
        # point (find and the tuner build far fewer kernels)
        copies = {**defines, **SMALLEST, "SPLIT_CHUNK": 1, "STAGED_STORE": 0, "COL_OUT": 0,
                  "CHANNEL_BLOCKS": problem.direction is not Direction.BACKWARD_WEIGHTS,
                  "TRANSFORM_W": params["TRANSFORM_W"], "TRANSFORM_X": params["TRANSFORM_X"],
                  "PAD_DY": params["PAD_DY"]}
        if epilogue is not None:
            defines.update(epilogue.defines())
            args = args + tuple(epilogue.args)
        launches = []
        if params["TRANSFORM_W"]:
            transform = KernelSpec.make(KERNEL_FILE, "transform_weights", copies)
            if problem.direction is Direction.FORWARD:
                launches.append(KernelLaunch(transform, (round_up(problem.w.element_count, REDUCE_WG),),
                                             (REDUCE_WG,), ("w", "workspace")))
            else:   # per group a K/G x C/G*R*S transpose
                launches.append(_transpose(transform, problem.k_per_group, problem.c_per_group * problem.r * problem.s,
                                           problem.groups, "w"))
        if params["TRANSFORM_X"]:
            channels, pixels, source = _transform_x_source(problem)
            launches.append(_transpose(KernelSpec.make(KERNEL_FILE, "transform_x", copies), channels, pixels,
                                       problem.n, source))
        if params["PAD_DY"]:
            launches.append(KernelLaunch(KernelSpec.make(KERNEL_FILE, "pad_dy", copies),
                                         (round_up(pad_dy_bytes(problem) // 2, REDUCE_WG * 4),), (REDUCE_WG * 4,),
                                         ("y", "workspace")))
        spec = KernelSpec.make(KERNEL_FILE, "conv_mma", defines)
        threads = threads_of(params)
        global_size = (column_tiles(problem, params["N_BLK"]) * threads, -(-shape.m // params["M_BLK"]),
                       problem.groups * split * phases(problem))
        launches.append(KernelLaunch(spec, global_size, (threads, 1, 1), args))
        if split > 1:
            reduce = KernelSpec.make(KERNEL_FILE, "reduce_splits", defines)
            out = OUTPUT_NAME[problem.direction]
            extra = tuple(epilogue.args) if epilogue is not None else ()
            launches.append(KernelLaunch(reduce, (round_up(output_count(problem), REDUCE_WG),), (REDUCE_WG,),
                                         ("workspace", out) + extra))
        return tuple(launches)


def staged_store(problem: ConvProblem, params: Params, col_out: bool = False) -> int:
    """STAGED_STORE: outputs per lane store (16 bytes at most) where a GEMM row's columns are runs of consecutive
    elements (P*Q forward, H*W backward-data, C/G*R*S backward-weights, all N*P*Q fp32 columns of COL_OUT) whose
    length it divides; 0 (fragment-order stores) for split partials, phases, backward-weights' (tap, c) columns
    under TRANSFORM_X, and where the bands do not fit the local tiles."""
    p = problem
    if params["SPLIT"] > 1 or phased(p) or p.direction is Direction.BACKWARD_WEIGHTS and params["TRANSFORM_X"]:
        return 0
    warps_m, warps_n = kernel_warps(params)
    bands = warps_m * warps_n * 16 * (params["N_BLK"] // warps_n + 8) * 4
    if bands > local_bytes(params, p.dtype, p.direction):
        return 0    # the warps' bands (fp32, OUT_LD apart) do not fit the tiles they reuse
    run = {Direction.FORWARD: p.out_h * p.out_w, Direction.BACKWARD_DATA: p.in_h * p.in_w,
           Direction.BACKWARD_WEIGHTS: p.c_per_group * p.r * p.s}[p.direction]
    if col_out:
        run *= p.n
    vec = 16 // (4 if col_out else p.dtype.itemsize)
    while run % vec:
        vec //= 2
    return vec


def col2im_fits(problem: ConvProblem) -> bool:
    """Whether COL2IM can run problem (gemm_view'd): backward-data, one group, fewer input channels than an mma
    tile's 16 rows (where the direct GEMM leaves rows empty; the workspace of other problems does not grow by a
    column matrix), a filter larger than 1x1, the column matrix within COL2IM_CAP."""
    p = problem
    return (p.direction is Direction.BACKWARD_DATA and p.groups == 1 and p.c < MMA_ROWS and p.r * p.s > 1
            and column_bytes(p) <= COL2IM_CAP)


def col2im_wanted(problem: ConvProblem) -> bool:
    """COL2IM by default: where it fits and the input has at most COL2IM_CHANNELS channels (C rows of the direct
    GEMM fill that fraction of the mma's 16)."""
    return col2im_fits(problem) and problem.c <= COL2IM_CHANNELS


def column_bytes(problem: ConvProblem) -> int:
    """Bytes of COL2IM's fp32 column matrix: C*R*S x N*P*Q."""
    p = problem
    return 4 * p.c * p.r * p.s * p.n * p.out_h * p.out_w


def col2im_problem(problem: ConvProblem) -> ConvProblem:
    """COL2IM's GEMM, dcol[(c, r, s)][(n, p, q)] = sum_k w[k][c][r][s] dy[n][k][p][q], as the 1x1 forward convolution
    it is: dy the input (K channels of P x Q), the weights read transposed (C*R*S outputs by K channels, strides
    (1, C*R*S) in w's memory), y (N, C*R*S, P, Q) named but not written (COL_OUT)."""
    p = problem
    crs = p.c * p.r * p.s
    x = TensorDesc(p.dtype, (p.n, p.k, p.out_h, p.out_w))
    w = TensorDesc(p.dtype, (crs, p.k, 1, 1), (1, crs, 1, 1))
    y = TensorDesc(p.dtype, (p.n, crs, p.out_h, p.out_w))
    return ConvProblem(Direction.FORWARD, x, w, y, ConvDesc(math_mode=p.conv.math_mode), p.math_mode)


def pad_dy_fits(problem: ConvProblem) -> bool:
    """Whether PAD_DY can apply: fp16 backward-weights whose dy planes (P*Q) are not a multiple of 8 elements."""
    p = problem
    return (p.direction is Direction.BACKWARD_WEIGHTS and p.dtype is DataType.FLOAT16
            and (p.out_h * p.out_w) % a_vector(p.dtype) != 0)


def padded_plane(problem: ConvProblem, params: Params) -> int:
    """Terms of one dy plane in backward-weights' inner loop: P*Q, rounded up to 8 with PAD_DY (PQ_A)."""
    plane = problem.out_h * problem.out_w
    return round_up(plane, a_vector(problem.dtype)) if params.get("PAD_DY") else plane


def wgrad_terms(problem: ConvProblem, params: Params) -> int:
    """Terms of backward-weights' inner loop: N*P*Q, N times the padded plane with PAD_DY (GEMM_K in the kernel)."""
    return problem.n * padded_plane(problem, params)


def pad_dy_bytes(problem: ConvProblem) -> int:
    """Bytes of PAD_DY's copy of dy: N*K planes of P*Q rounded up to 8 halves."""
    p = problem
    return p.n * p.k * round_up(p.out_h * p.out_w, a_vector(p.dtype)) * p.dtype.itemsize


def partial_offset(problem: ConvProblem, params: Params) -> int:
    """Bytes into the workspace where the fp32 partials (or COL_OUT's column matrix) start: after the weight copy
    (TRANSFORM_W) and the channel-fastest copy (TRANSFORM_X), each 256-byte aligned (PARTIAL_OFFSET in
    conv_mma.cl)."""
    w_copy = problem.w.element_count * problem.dtype.itemsize if params["TRANSFORM_W"] else 0
    x_copy = transform_x_bytes(problem) if params["TRANSFORM_X"] else 0
    dy_copy = pad_dy_bytes(problem) if params.get("PAD_DY") else 0
    return round_up(w_copy, PARTIAL_ALIGN) + round_up(x_copy, PARTIAL_ALIGN) + round_up(dy_copy, PARTIAL_ALIGN)


# COL2IM's GEMM runs as a forward problem: its roles are the backward-data problem's dy (input) and dx (y, which
# COL_OUT does not write)
_COL2IM_ROLES = {"x": "y", "y": "x"}


def _col2im_launches(problem: ConvProblem, params: Params) -> tuple[KernelLaunch, ...]:
    """COL2IM: the column matrix by the GEMM kernel (COL_OUT), then col2im (conv_im2col.cl) gathers dx from it."""
    gemm, inner = col2im_problem(problem), dict(params, COL2IM=False)
    launches = [dataclasses.replace(launch, args=tuple(_COL2IM_ROLES.get(a, a) if isinstance(a, str) else a
                                                       for a in launch.args))
                for launch in ConvImplicitGemmMma().launches(gemm, inner, col_out=True)]
    spec = KernelSpec.make("conv_im2col.cl", "col2im", {**problem_defines(problem), "NB": problem.n, "COL_HALF": 0})
    count = problem.n * problem.c * problem.in_h * problem.in_w
    launches.append(KernelLaunch(spec, (round_up(count, REDUCE_WG * 4),), (REDUCE_WG * 4,),
                                 ("workspace", "x", np.int32(partial_offset(gemm, inner) // 4), np.int32(0))))
    return tuple(launches)


def gemm_view(problem: ConvProblem) -> ConvProblem:
    """The problem the kernels run: a filter covering the whole unpadded image as the 1x1 convolution of 1x1 images
    it is (ConvProblem.as_fully_connected: one GEMM over C*R*S channels, no taps, and in backward-data no gather
    of R*S taps of which one reaches each pixel; Boda's 6x6 layer at N=5 in fp16 ran 0.81 / 0.83 ms forward /
    backward-data as 36 taps, against cuDNN's 0.16 / 0.22 on an H100), else the problem itself."""
    return problem.as_fully_connected() or problem


OUTPUT_NAME = {Direction.FORWARD: "y", Direction.BACKWARD_DATA: "x", Direction.BACKWARD_WEIGHTS: "w"}
TX_TILE, TX_ROWS = 32, 8      # the transposing copies' work-group: 32 x 32 tiles, 8 rows of work-items


def _transpose(spec: KernelSpec, rows: int, cols: int, batch: int, source: str) -> KernelLaunch:
    """A transposing copy (transpose_tile in conv_mma.cl) of batch rows x cols matrices of source into the
    workspace: one work-group per 32 x 32 tile."""
    return KernelLaunch(spec, (round_up(cols, TX_TILE), -(-rows // TX_TILE) * TX_ROWS, batch), (TX_TILE, TX_ROWS, 1),
                        (source, "workspace"))


def _transform_x_source(problem: ConvProblem) -> tuple[int, int, str]:
    """(channels, pixels per image, buffer) of the tensor TRANSFORM_X copies: x forward and backward-weights, dy
    backward-data."""
    p = problem
    if p.direction is Direction.BACKWARD_DATA:
        return p.k, p.out_h * p.out_w, "y"
    return p.c, p.in_h * p.in_w, "x"


def _transform_x_channels(problem: ConvProblem) -> int:
    """Channels per group of the copied tensor (C/G, K/G backward-data): a vector never crosses a group."""
    return _transform_x_source(problem)[0] // problem.groups


def transform_x_bytes(problem: ConvProblem) -> int:
    """Bytes of TRANSFORM_X's copy (x forward and backward-weights, dy backward-data)."""
    channels, pixels, _ = _transform_x_source(problem)
    return problem.n * channels * pixels * problem.dtype.itemsize


def transform_x_fits(problem: ConvProblem) -> bool:
    """Whether TRANSFORM_X can apply: channels per group of the copied tensor (C/G, K/G backward-data) a multiple
    of the 16-byte vector, the copy within TRANSFORM_X_CAP."""
    return (_transform_x_channels(problem) % a_vector(problem.dtype) == 0
            and transform_x_bytes(problem) <= TRANSFORM_X_CAP)


def emulated(solution: Solution) -> Solution:
    """solution with every kernel built with MMA_EMULATE=1 (no PTX: runs on any OpenCL device, slowly), for
    tests and dry runs of the benchmarks."""
    def spec(s: KernelSpec) -> KernelSpec:
        return dataclasses.replace(s, defines=tuple(sorted(s.defines + (("MMA_EMULATE", "1"),))))
    return dataclasses.replace(solution, launches=tuple(dataclasses.replace(launch, spec=spec(launch.spec))
                                                        for launch in solution.launches))


# A phase's pixels are stride_w elements apart in dx, so its stores fill part of each 32-byte sector and the other
# phases' work-groups fill the rest later: merged in L2 while dx fits there, not beyond. A 1x1 filter saves only
# the columns between outputs, which did not pay for that on the H100 once dx outgrew L2 (50 MB): ResNet-50's
# 56x56 1x1 stride-2 backward-data (dx 103 MB) 0.30 ms -> 0.42 in phases, its 14x14 one (25 MB) 0.28 -> 0.24
# (benchmarks/results/h100-tensor-cores-phased.json against h100-tensor-cores-sets-full.json).
PHASED_1X1_MAX_DX = 32 << 20


def phased(problem: ConvProblem) -> bool:
    """Backward-data in stride_h x stride_w phases of dx, each over its own taps (PHASED in conv_mma.cl):
    stride > 1, dilation 1, and a filter larger than 1x1 or dx within PHASED_1X1_MAX_DX bytes."""
    p = problem
    return (p.direction is Direction.BACKWARD_DATA and (p.stride_h > 1 or p.stride_w > 1)
            and p.dil_h == 1 and p.dil_w == 1
            and (p.r * p.s > 1 or p.x.element_count * p.dtype.itemsize <= PHASED_1X1_MAX_DX))


def _phase_grid(problem: ConvProblem) -> tuple[int, int, int]:
    """PHASED: (phases, one phase's columns N * ceil(H/stride_h) * ceil(W/stride_w), most taps a phase has)."""
    p = problem
    rows, cols = -(-p.in_h // p.stride_h), -(-p.in_w // p.stride_w)
    taps = -(-p.r // p.stride_h) * -(-p.s // p.stride_w)
    return p.stride_h * p.stride_w, p.n * rows * cols, taps


def gemm_shape(problem: ConvProblem) -> ImplicitGemm:
    """The per-group GEMM (direct_local.gemm_shape); PHASED: n counts every phase's columns and k the most taps
    a phase has."""
    if not phased(problem):
        return _flat_gemm_shape(problem)
    phases, columns, taps = _phase_grid(problem)
    return ImplicitGemm(problem.c_per_group, phases * columns, problem.k_per_group * taps)


def phases(problem: ConvProblem) -> int:
    """Phases of dx that run as separate GEMMs (grid dimension 2; 1 unless PHASED)."""
    return _phase_grid(problem)[0] if phased(problem) else 1


def column_tiles(problem: ConvProblem, n_blk: int) -> int:
    """Work-groups along one phase's GEMM columns (grid dimension 0)."""
    return -(-gemm_shape(problem).n // phases(problem) // n_blk)


def output_count(problem: ConvProblem) -> int:
    """Elements of one split's partials: the direction's output (PHASED: with the columns past H, W of each
    phase)."""
    if phased(problem):
        shape = gemm_shape(problem)
        return problem.groups * shape.m * shape.n
    return getattr(problem, OUTPUT_NAME[problem.direction]).element_count


def split_limit(problem: ConvProblem) -> int:
    """Most partial sums (a power of two): backward-weights as ConvDirectLocal (chunks of 256 terms at least, the
    partials within SPLIT_WORKSPACE_CAP); forward / backward-data at most MAX_SPLIT_FB, partials within the cap,
    outputs of at most SPLIT_FB_MAX_OUTPUT elements (else 1)."""
    if problem.direction is Direction.BACKWARD_WEIGHTS:
        return max_split(problem)
    if output_count(problem) > SPLIT_FB_MAX_OUTPUT:
        return 1
    cap = min(MAX_SPLIT_FB, SPLIT_WORKSPACE_CAP // (4 * output_count(problem)))
    return 1 << (max(cap, 1).bit_length() - 1)


def total_steps(problem: ConvProblem, params: Params) -> int:
    """Forward / backward-data: K_BLK slices of the inner loop (per tap with CHANNEL_BLOCKS)."""
    k_blk, inner = params["K_BLK"], gemm_shape(problem).k
    if params["CHANNEL_BLOCKS"]:   # the inner dimension is channels x taps (PHASED: the most a phase has)
        channels = inner_channels(problem)
        return -(-channels // k_blk) * (inner // channels)
    return -(-inner // k_blk)


def chunk_of(problem: ConvProblem, params: Params) -> int:
    """SPLIT_CHUNK: N*P*Q elements a split sums in backward-weights (a multiple of K_BLK); forward /
    backward-data share the slices out evenly in the kernel (the define is then the largest share)."""
    if problem.direction is Direction.BACKWARD_WEIGHTS:
        return split_chunk(problem, params["SPLIT"], params["K_BLK"], wgrad_terms(problem, params))
    return -(-total_steps(problem, params) // params["SPLIT"])


def _split_reason(problem: ConvProblem, params: Params) -> str | None:
    split = params["SPLIT"]
    if split > split_limit(problem):
        return (f"SPLIT={split} > {split_limit(problem)} (the partials' workspace within "
                f"{SPLIT_WORKSPACE_CAP >> 20} MiB; backward-weights: chunks of {MIN_SPLIT_CHUNK} terms at least; "
                f"forward / backward-data: {MAX_SPLIT_FB} at most, outputs of {SPLIT_FB_MAX_OUTPUT} elements at "
                f"most)")
    if split > 1 and problem.direction is Direction.BACKWARD_WEIGHTS:
        total, chunk = wgrad_terms(problem, params), chunk_of(problem, params)
        if chunk * (split - 1) >= total:
            return f"SPLIT={split} leaves a chunk empty ({total} terms in chunks of {chunk})"
    elif split > total_steps(problem, params):
        return f"SPLIT={split} > the {total_steps(problem, params)} slices of the inner loop"
    return None


def _pipeline_reason(problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
    """STAGES against CP_ASYNC, and cp.async against the device and the data type."""
    stages = params["STAGES"]
    if not params["CP_ASYNC"]:
        return f"STAGES={stages} > 2 needs CP_ASYNC" if stages > 2 else None
    if CP_ASYNC_PROBE not in dev.ptx_mma:
        return "CP_ASYNC needs cp.async (the device's compiler refused the probe, or it is not NVIDIA's)"
    if stages < 2:
        return "CP_ASYNC needs STAGES >= 2 (copies land in one buffer while another is multiplied)"
    if problem.dtype is DataType.FLOAT16 and not params["VECTOR_A"]:
        threads = threads_of(params)
        # backward-weights: pairs across an odd P*Q plane's end go element by element (A_PAIR_TAIL)
        reason = _vector_a_reason(problem, params, threads, vec=2,
                                  any_plane=problem.direction is Direction.BACKWARD_WEIGHTS)
        if reason:   # cp.async copies 4 bytes at least: fp16 A goes in pairs of consecutive k
            return f"CP_ASYNC with fp16 data copies A in pairs along k (or 16-byte VECTOR_A): {reason}"
    return None


def _warp_reason(problem: ConvProblem, params: Params) -> str | None:
    """The tile against the warps and the mma shape, and a lane's registers."""
    m_blk, n_blk, k_blk = params["M_BLK"], params["N_BLK"], params["K_BLK"]
    warps_m, warps_n = kernel_warps(params)
    if m_blk % (16 * warps_m) or n_blk % (8 * warps_n):
        return f"{warps_m}x{warps_n} warps do not split a {m_blk}x{n_blk} tile into 16x8 mma tiles"
    if k_blk % mma_k(problem.dtype):
        return f"K_BLK={k_blk} is not a multiple of the mma's k ({mma_k(problem.dtype)})"
    pairs_b = problem.dtype is DataType.FLOAT16 or b_kk_fast(params, problem.direction)
    if params["LDMATRIX"] and pairs_b and n_blk % (16 * warps_n):
        return f"LDMATRIX reads B two n-tiles at a time: N_BLK/WARPS_N={n_blk // warps_n} is not a multiple of 16"
    sums = m_blk * n_blk // (WARP * warps_m * warps_n)
    if sums > MAX_ACCUMULATORS:
        return f"{sums} sums per lane > {MAX_ACCUMULATORS}"
    copies = (m_blk + n_blk) * k_blk // (WARP * warps_m * warps_n)
    if copies > MAX_COPIES:
        return f"{copies} elements copied per lane a step > {MAX_COPIES}"
    a_async, b_async = async_operands(params, problem.dtype)
    prefetch = ((0 if a_async else m_blk) + (0 if b_async else n_blk)) * k_blk // (WARP * warps_m * warps_n)
    if prefetch > MAX_PREFETCH:
        return f"{prefetch} prefetched elements per lane > {MAX_PREFETCH}"
    return None


def _wgmma_reason(problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
    """Why WGMMA cannot run params (see WGMMA in conv_mma.cl), or None."""
    if not params["WGMMA"]:
        return None
    if WGMMA_PROBE not in dev.ptx_mma:
        return "WGMMA needs Hopper's wgmma (the device's probe through miopy.ptx_patch failed, or it is not NVIDIA's)"
    wgrad = problem.direction is Direction.BACKWARD_WEIGHTS
    half = problem.dtype is DataType.FLOAT16
    if wgrad and not half and params["TRANSFORM_X"]:
        return ("WGMMA: TF32 backward-weights without TRANSFORM_X (the copy's B is MN-major; wgmma transposes only "
                "16-bit types)")
    needed = (("TRANSFORM_X", "VECTOR_A", "CP_ASYNC") if half else ("CP_ASYNC",)) if wgrad else \
        ("CHANNEL_BLOCKS", "TRANSFORM_W", "TRANSFORM_X", "VECTOR_A", "CP_ASYNC")
    if not all(params[name] for name in needed) or params["LDMATRIX"]:
        return f"WGMMA needs {', '.join(needed)} and no LDMATRIX"
    if params["M_BLK"] != 64 * params["WARPS_M"] or params["WARPS_N"] != 1:
        return "WGMMA: a warpgroup per 64 rows (M_BLK = 64 x WARPS_M) and WARPS_N = 1"
    if params["N_BLK"] not in WGMMA_N:
        return f"WGMMA: N_BLK in {WGMMA_N}"
    if params["K_BLK"] * problem.dtype.itemsize not in (32, 64, 128):
        return "WGMMA: K_BLK rows of 32, 64 or 128 bytes (a swizzle mode of wgmma's descriptors)"
    return None


def _device_reason(problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
    threads = threads_of(params)
    return (work_group_reason(dev, (threads,))
            or local_memory_reason(dev, local_bytes(params, problem.dtype, problem.direction)))


def _fetch_divides(k_blk: int, blk: int, threads: int, kk_fast: bool) -> bool:
    """Whether a K_BLK x blk slice splits into whole passes of `threads` work-items (see the kernel)."""
    fast, slow = (k_blk, blk) if kk_fast else (blk, k_blk)
    step = min(threads, fast)
    return fast % step == 0 and slow % (threads // step) == 0 and threads % step == 0


def _pow2_ceil(value: int) -> int:
    return 1 << max(value - 1, 0).bit_length()


def _shape_reason(problem: ConvProblem, params: Params) -> str | None:
    """Tiles against the problem: whole fetch passes, no tile twice too big, SPLIT within bounds."""
    shape, threads = gemm_shape(problem), threads_of(params)
    m_blk, n_blk, k_blk = params["M_BLK"], params["N_BLK"], params["K_BLK"]
    b_fits = bool(params["TRANSFORM_X"]) or _fetch_divides(k_blk, n_blk, threads, b_kk_fast(params, problem.direction))
    if not (_fetch_divides(k_blk, m_blk, threads, True) and b_fits):
        return f"{threads} work-items do not split the {k_blk}x{m_blk} and {k_blk}x{n_blk} slices evenly"
    if params["CHANNEL_BLOCKS"] and problem.direction is Direction.BACKWARD_WEIGHTS:
        return "CHANNEL_BLOCKS applies to forward and backward-data only"
    if params["TRANSFORM_W"] and not params["CHANNEL_BLOCKS"]:
        return "TRANSFORM_W needs CHANNEL_BLOCKS (forward and backward-data)"
    if params["VECTOR_A"]:
        reason = _vector_a_reason(problem, params, threads)
        if reason:
            return reason
    if params["VECTOR_B"]:
        reason = _vector_b_reason(problem, params, threads)
        if reason:
            return reason
    if params["TRANSFORM_X"]:
        reason = _transform_x_reason(problem, params, threads)
        if reason:
            return reason
    if params["PAD_DY"] and not pad_dy_fits(problem):
        return "PAD_DY: fp16 backward-weights over planes whose P*Q is not a multiple of 8"
    k_size = inner_channels(problem) if params["CHANNEL_BLOCKS"] else shape.k
    n_size = shape.n // phases(problem)    # one phase's columns
    for name, blk, size, least in (("M", m_blk, shape.m, 16), ("N", n_blk, n_size, 16), ("K", k_blk, k_size, 16)):
        if blk > max(least, _pow2_ceil(size)):
            return f"{name} tile {blk} > {size} rounded up to a power of two"
    reason = _split_reason(problem, params)
    if reason:
        return reason
    return grid_reason((0, -(-shape.m // m_blk), problem.groups * params["SPLIT"] * phases(problem)))


def a_vector(dtype: DataType) -> int:
    """Elements in one 16-byte VECTOR_A fetch."""
    return 8 if dtype is DataType.FLOAT16 else 4


def _vector_a_reason(problem: ConvProblem, params: Params, threads: int, vec: int = 0,
                     any_plane: bool = False) -> str | None:
    """Why A cannot be fetched in 16-byte vectors along k (see VECTOR_A in conv_mma.cl), or vec-element ones
    (fp16 cp.async pairs; any_plane: backward-weights pairs of any P*Q, the odd tail element by element), or
    None."""
    vec, p = vec or a_vector(problem.dtype), problem
    vectors = params["M_BLK"] * params["K_BLK"] // vec
    if params["K_BLK"] % vec or vectors % threads:
        return f"VECTOR_A: a {params['M_BLK']}x{params['K_BLK']} slice is not whole passes of {vec}-vectors"
    if p.direction is Direction.BACKWARD_WEIGHTS and any_plane:
        return None
    if p.direction is Direction.BACKWARD_WEIGHTS:
        size, what = padded_plane(p, params), "P*Q"
    elif params["TRANSFORM_W"]:
        size, what = inner_channels(p), "the inner channels"
    elif p.direction is Direction.FORWARD and p.r * p.s == 1:
        size, what = p.c_per_group, "C/G"
    else:
        return "VECTOR_A: k is not contiguous in the weights (needs TRANSFORM_W or a 1x1 forward)"
    return None if size % vec == 0 else f"VECTOR_A: {what}={size} is not a multiple of {vec}"


def _transform_x_reason(problem: ConvProblem, params: Params, threads: int) -> str | None:
    """Why B cannot be read from a channel-fastest copy in 16-byte vectors (TRANSFORM_X in conv_mma.cl), or None."""
    vec, p = a_vector(problem.dtype), problem
    wgrad = p.direction is Direction.BACKWARD_WEIGHTS
    if (not wgrad and not params["CHANNEL_BLOCKS"]) or params["VECTOR_B"]:
        return "TRANSFORM_X needs CHANNEL_BLOCKS (forward / backward-data) and no VECTOR_B"
    if _transform_x_channels(p) % vec:
        return (f"TRANSFORM_X: {_transform_x_channels(p)} channels per group are not a multiple of the {vec}-element "
                f"vector")
    if transform_x_bytes(p) > TRANSFORM_X_CAP:
        return f"TRANSFORM_X: the copy takes {transform_x_bytes(p)} bytes > {TRANSFORM_X_CAP >> 20} MiB"
    k_blk, n_blk = params["K_BLK"], params["N_BLK"]
    if wgrad:   # vectors along the columns
        fits = n_blk % vec == 0 and _fetch_divides(k_blk, n_blk // vec, threads, False)
    else:       # vectors along k
        fits = k_blk % vec == 0 and _fetch_divides(k_blk // vec, n_blk, threads, True)
    return None if fits else f"TRANSFORM_X: a {k_blk}x{n_blk} slice is not whole passes of {vec}-vectors"


def _vector_b_fits(problem: ConvProblem, vec: int) -> bool:
    """Whether the problem lets VECTOR_B=vec gather B along output rows (whatever the tiles)."""
    p = problem
    return (p.direction is not Direction.BACKWARD_WEIGHTS and p.stride_w == 1 and vec * p.dtype.itemsize <= 16
            and p.in_w % vec == 0 and p.out_w % vec == 0 and not phased(p))


def _vector_b_reason(problem: ConvProblem, params: Params, threads: int) -> str | None:
    """Why B cannot be gathered in VECTOR_B-column vectors (see VECTOR_B in conv_mma.cl), or None."""
    vec, p = params["VECTOR_B"], problem
    if p.direction is Direction.BACKWARD_WEIGHTS or not params["CHANNEL_BLOCKS"]:
        return "VECTOR_B needs CHANNEL_BLOCKS (forward / backward-data)"
    if not _vector_b_fits(p, vec):
        return (f"VECTOR_B={vec}: needs stride 1 along w (and h in backward-data), W={p.in_w} and Q={p.out_w} "
                f"multiples of {vec}, at most 16 bytes")
    if not _fetch_divides(params["K_BLK"], params["N_BLK"] // vec, threads, False):
        return f"VECTOR_B: a {params['K_BLK']}x{params['N_BLK']} slice is not whole passes of {vec}-vectors"
    return None


# -- default params ---------------------------------------------------------------------------------------
SMALLEST = {"M_BLK": 16, "N_BLK": 16, "K_BLK": 16, "WARPS_M": 1, "WARPS_N": 1, "STAGES": 1,
            "CHANNEL_BLOCKS": False, "SPLIT": 1, "TRANSFORM_W": False, "LDMATRIX": False, "VECTOR_A": False,
            "CP_ASYNC": False, "VECTOR_B": 0, "TRANSFORM_X": False, "COL2IM": False, "PAD_DY": False, "WGMMA": False}
# (M_BLK, N_BLK, WARPS_M, WARPS_N): 64x64 warp tiles where the problem is large, down to one warp on 16x16
_TILES = ((128, 128, 2, 2), (128, 128, 2, 4), (256, 128, 4, 2), (128, 256, 2, 4), (128, 64, 2, 2), (64, 128, 2, 2),
          (64, 64, 2, 2), (128, 32, 4, 1), (32, 128, 1, 4), (64, 32, 2, 1), (32, 64, 1, 2), (32, 32, 1, 1),
          (16, 64, 1, 2), (16, 32, 1, 1), (16, 16, 1, 1))


def _candidates(problem: ConvProblem, dev: DeviceInfo) -> list[Params]:
    splits = [s for s in ConvImplicitGemmMma.grid["SPLIT"] if s <= split_limit(problem)]
    k_blks = (32, 16) if problem.dtype is DataType.FLOAT16 else (16, 32, 8)
    blocks = (True, False) if problem.direction is not Direction.BACKWARD_WEIGHTS else (False,)
    out = []
    # backward-weights ([col][k] B tiles, ldmatrix on both) spilled registers with 128 sums a lane on an H100
    most = MAX_ACCUMULATORS // 2 if problem.direction is Direction.BACKWARD_WEIGHTS else MAX_ACCUMULATORS
    for m, n, wm, wn in (tile for tile in _TILES if tile[0] * tile[1] // (WARP * tile[2] * tile[3]) <= most):
        for k in k_blks:
            for cb in blocks:
                for s in splits:
                    base = {"M_BLK": m, "N_BLK": n, "K_BLK": k, "WARPS_M": wm, "WARPS_N": wn, "STAGES": 2,
                            "CHANNEL_BLOCKS": cb, "SPLIT": s, "TRANSFORM_W": False, "LDMATRIX": False,
                            "VECTOR_A": False, "CP_ASYNC": False, "VECTOR_B": 0, "TRANSFORM_X": False,
                            "COL2IM": False, "PAD_DY": False, "WGMMA": False}
                    featured = _featured(problem, base, dev)
                    if problem.dtype is DataType.FLOAT16 or featured["STAGES"] == 2 or k == min(k_blks):
                        out.append(featured)   # fp32: one stage of 32 spilled or lost to two of 16 on the H100
    return out


def _featured(problem: ConvProblem, params: Params, dev: DeviceInfo) -> Params:
    """params with what measured faster on an H100 switched on where valid: one stage when two do not fit,
    the weight copy where the weights are strided along k, ldmatrix and vector fetches of A."""
    solver = ConvImplicitGemmMma()
    out = dict(params, TRANSFORM_W=params["CHANNEL_BLOCKS"] and (
        problem.r * problem.s > 1 or problem.direction is Direction.BACKWARD_DATA))
    if local_memory_reason(dev, local_bytes(out, problem.dtype, problem.direction)):
        out["STAGES"] = 1
    for name in ("LDMATRIX", "VECTOR_A"):
        trial = dict(out, **{name: True})
        if solver.is_valid(problem, trial, dev):
            out = trial
    return out


def _pipelined(problem: ConvProblem, params: Params, dev: DeviceInfo) -> Params:
    """The cp.async pipeline where it measured faster on an H100 (benchmarks/results/h100-mma-variants.json,
    kernel time against the same params without it): TF32 forward and backward-data with two stages (0.81x to
    1.0x on all 8 layer-directions); TF32 backward-weights with three stages and 128x128 tiles halved to 128x64
    (0.34x to 0.79x on all 4); fp16 forward / backward-data with two stages on 128x128 tiles (0.90x to 1.0x on
    the 16 such layer-directions of VGG-16, AlexNet and ResNet-50 in h100-mma-variants-sets.json; 1.05x to 1.07x
    on 64x128 and 128x64 tiles, which stay on the register path). fp16 backward-weights stays on the register
    path: every cp.async variant measured 1.1x to 6.7x slower there (fp16 backward-weights over even planes takes
    cp.async with the copy of x since, see _copied). TF32 backward-weights on the halved tiles also doubles the
    split the score model chose for 128x128 tiles (HALVED_TILE_SPLIT) where the filter is larger than 1x1 and the
    output planes 13x13 or more: 0.83-1.01x (geomean 0.91) on the 17 such layers of the four layer sets (AlexNet
    conv1-5, VGG-16 conv3-9, ResNet-50's 28x28 and 14x14 3x3 layers, Boda's b43), while ResNet-50's 1x1 and 7x7
    layers ran 1.07-1.37x slower with it (h100-mma-variants-w32.json)."""
    if CP_ASYNC_PROBE not in dev.ptx_mma:
        return params
    if problem.dtype is DataType.FLOAT16 and (problem.direction is Direction.BACKWARD_WEIGHTS
                                              or params["M_BLK"] * params["N_BLK"] < 128 * 128):
        return params
    trials = [dict(params, CP_ASYNC=True, STAGES=2)]
    if problem.direction is Direction.BACKWARD_WEIGHTS:   # TF32 only (fp16 returned above)
        halved = dict(N_BLK=params["N_BLK"] // 2, WARPS_N=max(1, params["WARPS_N"] // 2)) \
            if params["M_BLK"] == params["N_BLK"] == 128 else {}
        trials = [dict(params, CP_ASYNC=True, STAGES=3, **halved), dict(params, CP_ASYNC=True, STAGES=3)] + trials
        if halved and problem.r * problem.s > 1 and problem.out_h * problem.out_w >= 169 \
                and params["SPLIT"] * HALVED_TILE_SPLIT <= split_limit(problem):
            trials.insert(0, dict(trials[0], SPLIT=params["SPLIT"] * HALVED_TILE_SPLIT))
    solver = ConvImplicitGemmMma()
    return next((t for t in trials if solver.is_valid(problem, t, dev)), params)


def _narrow(problem: ConvProblem, params: Params, dev: DeviceInfo) -> Params:
    """Forward / backward-data GEMMs of at most NARROW_COLUMNS columns (a phase's; fully-connected layers and small
    images at small batch) are bound by streaming A, the weights: tiles of 64 rows by four warps of 16 (NARROW_TILE)
    put more of it in flight per work-group than one-warp tiles, and at most GEMV_COLUMNS columns (a matrix times a
    few vectors, hundreds of slices deep) also split the reduction GEMV_SPLIT ways. On an H100
    (benchmarks/results/h100-mma-fc.json, Boda's layers at N=5, against the score model's one-warp 16x16 or 32x32
    tiles): 4096 x 4096 fully connected forward 0.049 -> 0.022 ms fp16, 0.086 -> 0.036 TF32, backward-data 0.126 ->
    0.062 / 0.149 -> 0.094; the 6x6 filter over 6x6 images (as one, ConvProblem.as_fully_connected) forward 0.192 ->
    0.054 / 0.080 -> 0.069, backward-data 0.176 -> 0.119 / 0.222 -> 0.200; its 1x1 layers over 6x6 images (180
    columns, no split) 0.021 -> 0.018 / 0.038 -> 0.023 forward, 0.036 -> 0.032 / 0.049 -> 0.036 backward-data.
    Where the score model splits a wider GEMM's long reduction, its pick stays: its 3x3 384 -> 1024 over 6x6 images
    (180 columns over 3456 terms) ran 0.077 ms TF32 forward on 128x128 tiles in 8 splits, 0.128 on NARROW_TILE
    without (h100-tensor-cores-sets-staged.json against h100-tensor-cores-sets-tx.json)."""
    columns = gemm_shape(problem).n // phases(problem)
    if problem.direction is Direction.BACKWARD_WEIGHTS or columns > NARROW_COLUMNS \
            or columns > GEMV_COLUMNS and params["SPLIT"] > 1:
        return params
    split = min(GEMV_SPLIT, split_limit(problem)) if columns <= GEMV_COLUMNS else 1
    solver = ConvImplicitGemmMma()
    while split >= 1:
        trial = dict(params, **NARROW_TILE, SPLIT=split)
        if solver.is_valid(problem, trial, dev):
            return trial
        split //= 2
    return params


def _copied(problem: ConvProblem, params: Params, dev: DeviceInfo) -> Params:
    """TRANSFORM_X where it measured faster on an H100 with the same params otherwise (kernel time, the copy
    included; benchmarks/results/h100-mma-variants-tx-fb.json and -tx-w.json): filters larger than 1x1 only (the
    copy costs as much as a 1x1 layer's gather saves), and
    - backward-weights at stride 1 with output planes of 13x13 or more and N*P*Q >= 16384: fp16 0.49-0.86x on
      all 13 such layer-directions of AlexNet, VGG-16 and ResNet-50 (its 2-byte gather leaves the register path's
      scalar loads); TF32 where the copy is also small against the GEMM (K*R*S*P*Q/(H*W) >= 1728): 0.89-0.97x on
      all 8 (AlexNet conv2-5, VGG-16 conv5-8); elsewhere TF32 lost up to 26%;
    - TF32 forward / backward-data with M*R*S >= 4608 (M = K forward, C backward-data) and N*P*Q >= 1568:
      0.87-0.97x on all 10 (VGG-16 conv7-9, ResNet-50's 7x7 3x3 layers, AlexNet conv2 forward); fp16 forward /
      backward-data stays off (0.83-1.09x, no rule separated them).
    fp16 backward-weights over even output planes (dy's pairs along N*P*Q aligned) takes the copy by cp.async in
    three stages where that fits the slice depth: 0.50-0.92x on the 5 such layers first timed (VGG-16 conv7 and
    conv9, ResNet-50's 14x14 3x3 layers; h100-mma-variants-w-fp16.json); over odd planes (AlexNet's 13x13, 7x7) the
    pairs straddle planes and it ran 1.7-7x slower. Over the four layer sets it changes 22 fp16 layers: geomean
    0.88x, VGG-16 conv9 0.54x, four of Boda's small layers (N=5, about 0.03 ms) 1.15-1.41x slower
    (h100-mma-variants-w16.json). Over odd planes with N*P*Q >= WGRAD_FP16_PAD_MIN_TERMS it reads dy's zero-padded
    copy (PAD_DY: 16-byte A vectors), in two stages where three do not fit: AlexNet conv2-5 0.72, 1.00, 0.75 and
    0.96x of the register path's time (h100-mma-variants-pad-dy.json); below the threshold Boda's b17, b22 and
    b38-b41 (N=5, N*P*Q of 245 to 845) ran 2.0-3.5x slower with it, b43 (3645) 0.85x, ResNet-50's 7x7 stage (1568)
    1.04x: they keep the register path."""
    p = problem
    if p.r * p.s == 1:
        return params
    odd = p.out_h * p.out_w % 2 == 1
    if p.direction is Direction.BACKWARD_WEIGHTS and p.dtype is DataType.FLOAT16 and WGRAD_FP16_COPY_STAGES \
            and (not odd or WGRAD_FP16_PAD_ODD and p.n * p.out_h * p.out_w >= WGRAD_FP16_PAD_MIN_TERMS):
        trial = dict(params, TRANSFORM_X=True, CP_ASYNC=True, STAGES=WGRAD_FP16_COPY_STAGES, PAD_DY=odd)
        points = [dict(trial, VECTOR_A=True), trial] + ([dict(trial, VECTOR_A=True, STAGES=2)] if odd else [])
        for point in points:
            if ConvImplicitGemmMma().is_valid(problem, point, dev):
                return point
    if params["TRANSFORM_X"]:
        return params
    if p.direction is Direction.BACKWARD_WEIGHTS:
        wanted = p.stride_h == p.stride_w == 1 and p.out_h * p.out_w >= 169 and p.n * p.out_h * p.out_w >= 16384 \
            and (p.dtype is DataType.FLOAT16 or p.k_per_group * p.r * p.s * p.out_h * p.out_w >= 1728 * p.in_h * p.in_w)
    else:
        rows = p.k_per_group if p.direction is Direction.FORWARD else p.c_per_group
        wanted = p.dtype is DataType.FLOAT32 and rows * p.r * p.s >= 4608 and p.n * p.out_h * p.out_w >= 1568
    trial = dict(params, TRANSFORM_X=True)
    return trial if wanted and ConvImplicitGemmMma().is_valid(problem, trial, dev) else params


WGMMA_ROW_BYTES = 64         # WGMMA defaults' slices: rows of 64 bytes (K_BLK 32 fp16, 16 TF32)
WGMMA_MIN_COLUMNS = 4096     # forward / backward-data GEMMs this wide (and filters over 1x1) take WGMMA by default
WGMMA_WIDE_TILES = 4         # ... on 128-row tiles where 128x128 ones make this many waves of compute units,
WGMMA_DEEP = 2304            # ... 128x128 in 3 stages over inner dimensions this long, else 128x64 in 4
# what WGMMA points set besides the tile (its requirements, _wgmma_reason, and one split)
WGMMA_PARAMS = {"WGMMA": True, "WARPS_N": 1, "SPLIT": 1, "CHANNEL_BLOCKS": True, "TRANSFORM_W": True,
                "TRANSFORM_X": True, "VECTOR_A": True, "CP_ASYNC": True, "LDMATRIX": False, "VECTOR_B": 0}
WGMMA_W = True                # backward-weights on WGMMA by default (see _hopper_wgrad),
WGMMA_W_PAD_MIN_TERMS = 4096    # ... fp16 over planes that need dy's padded copy where N*P*Q is this large;
WGMMA_W_TF32_MIN_TERMS = 6272    # ... TF32 where N*P*Q is this large (ResNet-50's 14x14 stage at N=32)
WGMMA_W_TF32_MIN_OUTPUTS = 32768   # ... and the weight gradient has this many elements per group
# its time model (_wgmma_w_us): a slice's microseconds, the work-group alone on its compute unit or beside others
WGMMA_W_SLICE_US = {DataType.FLOAT16: (0.78, 0.42), DataType.FLOAT32: (0.60, 0.44)}
WGMMA_W_CHUNK_SLICES = {DataType.FLOAT16: 12, DataType.FLOAT32: 14}   # slices' worth of time per work-group
WGMMA_W_PARTIAL_GBS = 1500        # GB/s writing and summing the split's partials; the sum's launch
WGMMA_W_REDUCE_US = 3
# ... in backward-weights (no weight copy or channel blocks there; TF32 drops TRANSFORM_X; the split is chosen apart)
WGMMA_W_PARAMS = {"WGMMA": True, "WARPS_N": 1, "TRANSFORM_X": True, "VECTOR_A": True, "CP_ASYNC": True,
                  "LDMATRIX": False, "VECTOR_B": 0}
WGMMA_TILES = {"deep": {"M_BLK": 128, "N_BLK": 128, "WARPS_M": 2, "STAGES": 3},
               "shallow": {"M_BLK": 128, "N_BLK": 64, "WARPS_M": 2, "STAGES": 4},
               "narrow": {"M_BLK": 64, "N_BLK": 128, "WARPS_M": 1, "STAGES": 4}}


def _hopper(problem: ConvProblem, params: Params, dev: DeviceInfo) -> Params:
    """WGMMA (Hopper's wgmma) where it measured faster on an H100 (benchmarks/results/h100-mma-variants-wgmma.json
    and -wgmma-rule.json, kernel time against the mma.sync defaults): forward and backward-data of filters larger
    than 1x1 over GEMMs of at least WGMMA_MIN_COLUMNS columns, with the copies of x / dy and of the weights, no
    split. Where 128x128 tiles make WGMMA_WIDE_TILES waves: 128x128 in 3 stages over inner dimensions of at least
    WGMMA_DEEP (VGG-16 conv6-8, AlexNet conv2: 0.67-0.83x), 128x64 in 4 over shorter ones (VGG-16 conv3-5: 0.71-0.89x
    fp16, 0.89-1.06x TF32, where 128x128 ran 1.0-1.33x); else 64x128 in 4 (AlexNet's 13x13 layers, ResNet-50's 28x28
    and 14x14 3x3 layers, VGG-16 conv2: 0.61-0.97x). Exceptions measured near even: ResNet-50's stride-2 28x28 3x3
    (mma.sync 0.94-0.96x of it) and Boda's b42 at N=5 fp16 (0.90x). Backward-data of 1x1 filters at stride > 1
    takes 64x128 in 4 whatever its width: ResNet-50's three downsampling 1x1 layers 0.59-0.86x, but l3.down fp16
    1.20x (h100-mma-variants-wgmma-b-strided.json). Other 1x1 layers and small GEMMs
    are not measured and keep mma.sync."""
    p, shape = problem, gemm_shape(problem)
    if WGMMA_PROBE not in dev.ptx_mma:
        return params
    if p.direction is Direction.BACKWARD_WEIGHTS:
        return _hopper_wgrad(problem, params, dev)
    base = dict(params, **WGMMA_PARAMS, K_BLK=WGMMA_ROW_BYTES // p.dtype.itemsize)
    solver = ConvImplicitGemmMma()
    if p.direction is Direction.BACKWARD_DATA and p.r * p.s == 1 and (p.stride_h > 1 or p.stride_w > 1) \
            and not params["COL2IM"]:
        trial = dict(base, **WGMMA_TILES["narrow"])
        return trial if solver.is_valid(p, trial, dev) else params
    if p.r * p.s == 1 or params["COL2IM"] or shape.n // phases(p) < WGMMA_MIN_COLUMNS:
        return params
    wide = -(-shape.m // 128) * column_tiles(p, 128) * phases(p) * p.groups >= WGMMA_WIDE_TILES * dev.compute_units
    names = (("deep", "narrow") if shape.k >= WGMMA_DEEP else ("shallow", "narrow")) if wide else ("narrow",)
    for name in names:
        trial = dict(base, **WGMMA_TILES[name])
        if solver.is_valid(p, trial, dev):
            return trial
    return params


def _hopper_wgrad(problem: ConvProblem, params: Params, dev: DeviceInfo) -> Params:
    """Backward-weights on WGMMA: 128x128 tiles in 3 stages (64x128 where K/G <= 64: 3 stages fp16, 4 TF32), the
    split _wgmma_w_us finds fastest.
    - fp16 where _copied chose the channel-fastest copy (B MN-major): 32-deep slices; dy's padded copy where its
      planes are not a multiple of 8 elements (PAD_DY), where N*P*Q >= WGMMA_W_PAD_MIN_TERMS (below, Boda's 980-term
      layers ran 1.5-2.6x slower than mma.sync). h100-mma-variants-wgmma-w.json (AlexNet conv2-5 and VGG-16 conv2-9
      at the layer sets' batch: WGMMA with the mma.sync default's split 0.65-0.84x of its time), -wgmma-w-rule.json
      and -wgmma-w-split.json (the four layer sets, other splits).
    - TF32 over at least WGMMA_W_TF32_MIN_TERMS terms and WGMMA_W_TF32_MIN_OUTPUTS outputs: B K-major, gathered
      from x in place (TF32 wgmma reads no MN-major operand), 16-deep slices; dy and x reach the tensor cores
      truncated to TF32 (truncates_tf32). h100-mma-variants-wgmma-w-tf32.json (AlexNet, VGG-16, ResNet-50): the
      best WGMMA split ran 0.59-0.85x of the mma.sync default on AlexNet, VGG-16 and ResNet-50's 3x3 and 1x1 layers
      but a few small 1x1 ones (0.87-1.01x); Boda's layers at N=5 (N*P*Q 245-3920 or few outputs) ran up to 2x
      slower with it (-wgmma-w-tf32-rounded.json, where the slices were still rounded in place)."""
    p, shape = problem, gemm_shape(problem)
    half, odd, terms = p.dtype is DataType.FLOAT16, pad_dy_fits(p), p.n * p.out_h * p.out_w   # odd: fp16 only
    if not WGMMA_W:
        return params
    if half and (not params["TRANSFORM_X"] or odd and terms < WGMMA_W_PAD_MIN_TERMS):
        return params
    if not half and (terms < WGMMA_W_TF32_MIN_TERMS or shape.m * shape.n < WGMMA_W_TF32_MIN_OUTPUTS):
        return params
    narrow = shape.m <= 64
    tile = dict(WGMMA_TILES["narrow" if narrow else "deep"], K_BLK=WGMMA_ROW_BYTES // p.dtype.itemsize, PAD_DY=odd,
                TRANSFORM_X=half)
    if half or not narrow:
        tile["STAGES"] = 3
    splits = [s for s in ConvImplicitGemmMma.grid["SPLIT"] if s <= split_limit(p)]
    solver = ConvImplicitGemmMma()
    for split in sorted(splits, key=lambda s: _wgmma_w_us(p, dict(tile, SPLIT=s), dev)):
        for vector in (True, False):
            trial = {**params, **WGMMA_W_PARAMS, **tile, "SPLIT": split, "VECTOR_A": vector}
            if solver.is_valid(p, trial, dev):
                return trial
    return params


def _wgmma_w_us(problem: ConvProblem, params: Params, dev: DeviceInfo) -> float:
    """A WGMMA backward-weights kernel's time in microseconds as a function of its split, fitted on an H100 per data
    type (fp16: 67 timings of 28 layers in the three fp16 result files of _hopper_wgrad, the fastest measured split on
    26, on the other two one 2% and 7% slower; TF32: 88 of 34 layers, the fastest on 29, on the others 0-3% slower):
    the compute unit with the most work-groups runs them two at a time (one alone is slower: WGMMA_W_SLICE_US, a
    slice of K_BLK terms), each over its chunk's slices plus WGMMA_W_CHUNK_SLICES (pipeline fill, epilogue); then
    the split's fp32 partials are written and summed (WGMMA_W_PARTIAL_GBS, WGMMA_W_REDUCE_US)."""
    shape = gemm_shape(problem)
    split = params["SPLIT"]
    groups = -(-shape.m // params["M_BLK"]) * column_tiles(problem, params["N_BLK"]) * problem.groups * split
    per_cu = -(-groups // dev.compute_units)
    slices = wgrad_terms(problem, params) / split / params["K_BLK"]
    alone, shared = WGMMA_W_SLICE_US[problem.dtype]
    us = per_cu * (slices + WGMMA_W_CHUNK_SLICES[problem.dtype]) * (alone if per_cu == 1 else shared)
    if split > 1:
        us += split * shape.m * shape.n * problem.groups * 8 / (WGMMA_W_PARTIAL_GBS * 1e3) + WGMMA_W_REDUCE_US
    return us


def _score(problem: ConvProblem, params: Params, dev: DeviceInfo) -> float:
    """Rough throughput model: useful fraction of tiles and inner loop x wave quantisation x tile reuse."""
    shape = gemm_shape(problem)
    m_blk, n_blk, k_blk = params["M_BLK"], params["N_BLK"], params["K_BLK"]
    tiles_m, tiles_n = -(-shape.m // m_blk), column_tiles(problem, n_blk) * phases(problem)
    columns = problem.n * problem.in_h * problem.in_w if phased(problem) else shape.n   # PHASED: dx's pixels
    fill = shape.m * columns / (tiles_m * m_blk * tiles_n * n_blk)
    k_size = inner_channels(problem) if params["CHANNEL_BLOCKS"] else shape.k
    k_fill = k_size / round_up(k_size, k_blk)
    groups = tiles_m * tiles_n * problem.groups * params["SPLIT"]
    threads = threads_of(params)
    warps_m, warps_n = kernel_warps(params)
    sums, warp_m, warp_n = m_blk * n_blk // threads, m_blk // warps_m, n_blk // warps_n
    registers = sums + (m_blk + n_blk) * k_blk // threads + 48    # per lane, roughly
    lbytes = max(local_bytes(params, problem.dtype, problem.direction), 1)
    per_cu = max(1, min(65536 // (threads * registers), 4 * dev.local_mem_bytes // lbytes, 2048 // threads))
    slots = dev.compute_units * per_cu
    waves = -(-groups // slots)
    # one partial wave: the busy fraction of the compute units, a little more for more resident work-groups
    # (latency hiding); several waves: the last wave's tail
    if groups <= slots:
        busy = min(1.0, groups / dev.compute_units) * (groups / slots) ** 0.15
    else:
        busy = groups / (waves * slots)
    tile_reuse = min(1.0, m_blk * n_blk / (m_blk + n_blk) / 64) ** 0.5    # 1 for 128x128 tiles
    tile_reuse *= min(1.0, warp_m * warp_n / (warp_m + warp_n) / 32) ** 0.3   # local reads per mma: 64x64 warps
    # fp16 likes 32-deep slices, fp32 16 (32 with one stage spilled registers on an H100)
    depth = min(1.0, k_blk / (32 if problem.dtype is DataType.FLOAT16 else 16)) ** 0.25
    depth *= 1.0 if params["STAGES"] >= 2 else 0.9
    split_cost = _split_cost(problem, params)
    fetch_cost = 1.0 if params["CHANNEL_BLOCKS"] else 1.1
    return fill * k_fill * busy * tile_reuse * depth / (split_cost * fetch_cost)


def _split_cost(problem: ConvProblem, params: Params) -> float:
    """Split-K's cost factor: each split writes the output's partials and the reduction reads them back (8 bytes an
    element at about 2.5 TB/s, against 2 flops a term at about 200 TFLOP/s TF32, 400 fp16), and each chunk fills
    the pipeline once (about STAGES + 1 slices): cheap where the reduction is long (backward-weights over N*P*Q).
    (Until benchmarks/results/h100-mma-variants.json each split cost a flat 5%, which kept ResNet-50's 1x1
    backward-weights on 32x32 tiles with 8 splits: 0.78 ms against cuDNN's 0.079.)"""
    split = params["SPLIT"]
    if split == 1:
        return 1.0
    per_split = (SPLIT_COST_FP32 if problem.dtype is DataType.FLOAT32 else SPLIT_COST_FP16) \
        + (params["STAGES"] + 1) * params["K_BLK"]
    return 1 + split * per_split / gemm_shape(problem).k
