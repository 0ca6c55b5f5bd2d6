"""The GEMM ConvImplicitGemmMma's kernel runs and how params lay it out: the problem as the kernel sees it
(gemm_view, phases of strided backward-data), the GEMM's shape, the split of its inner loop, the work-group's warps,
threads and local memory, and how its sums are stored."""
from __future__ import annotations

from ....device import SPLIT_WORKSPACE_CAP
from ....solver import Params, round_up
from ....tensor import DataType
from ...problem import ConvProblem, Direction
from ..direct_local import ImplicitGemm, inner_channels, max_split, split_chunk
from ..direct_local import gemm_shape as _flat_gemm_shape
from . import measured

WARP = 32
MMA_ROWS = 16                 # rows of one mma tile
MAX_SPLIT_FB = 16             # forward / backward-data split-K: at most this many partial outputs
PTX_CP_ASYNC = "cp_async"   # the ptx_probe name of cp.async (global -> local copies, sm_80+)
PTX_WGMMA = "wgmma"         # ... of Hopper's wgmma (sm_90a, through miopy.ptx_patch)
OUTPUT_NAME = {Direction.FORWARD: "y", Direction.BACKWARD_DATA: "x", Direction.BACKWARD_WEIGHTS: "w"}


def mma_k(dtype: DataType) -> int:
    """Inner size of one mma: m16n8k8 for TF32, m16n8k16 for fp16."""
    return 16 if dtype is DataType.FLOAT16 else 8


def instruction(dtype: DataType) -> str:
    """The ptx_probe name of the mma family dtype runs on."""
    return "f16" if dtype is DataType.FLOAT16 else "tf32"


def a_vector(dtype: DataType) -> int:
    """Elements in one 16-byte VECTOR_A fetch."""
    return 8 if dtype is DataType.FLOAT16 else 4


def async_operands(params: Params, dtype: DataType) -> tuple[bool, bool]:
    """Whether cp.async copies A and B (see CP_ASYNC in mma_copy.h): A always, B when its elements are 4 bytes
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
    """Local memory of one work-group: STAGES x (A tile + B tile), padded rows (see mma_tiles.h); WGMMA's swizzled
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


def gemm_view(problem: ConvProblem) -> ConvProblem:
    """The problem the kernels run: a filter covering the whole unpadded image as the 1x1 convolution of 1x1 images
    it is (ConvProblem.as_fully_connected: one GEMM over C*R*S channels, no taps, and in backward-data no gather
    of R*S taps of which one reaches each pixel), else the problem itself."""
    return problem.as_fully_connected() or problem


def phased(problem: ConvProblem) -> bool:
    """Backward-data in stride_h x stride_w phases of dx, each over its own taps (PHASED in mma_addressing.h):
    stride > 1, dilation 1, and a filter larger than 1x1 or dx within phased_1x1_max_dx bytes. A phase's pixels
    are stride_w elements apart in dx, so its stores fill part of each 32-byte sector and the other phases'
    work-groups fill the rest later: merged in L2 while dx fits there. A 1x1 filter saves only the columns between
    outputs, which does not pay for that once dx outgrows L2."""
    p = problem
    return (p.direction is Direction.BACKWARD_DATA and (p.stride_h > 1 or p.stride_w > 1)
            and p.dil_h == 1 and p.dil_w == 1
            and (p.r * p.s > 1 or p.x.element_count * p.dtype.itemsize <= measured.CHOICES.phased_1x1_max_dx))


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
    outputs of at most split_fb_max_output elements (else 1)."""
    if problem.direction is Direction.BACKWARD_WEIGHTS:
        return max_split(problem)
    if output_count(problem) > measured.CHOICES.split_fb_max_output:
        return 1
    cap = min(MAX_SPLIT_FB, SPLIT_WORKSPACE_CAP // (4 * output_count(problem)))
    return 1 << (max(cap, 1).bit_length() - 1)


def padded_plane(problem: ConvProblem, params: Params) -> int:
    """Terms of one dy plane in backward-weights' inner loop: P*Q, rounded up to 8 with PAD_DY (PQ_A)."""
    plane = problem.out_h * problem.out_w
    return round_up(plane, a_vector(problem.dtype)) if params.get("PAD_DY") else plane


def wgrad_terms(problem: ConvProblem, params: Params) -> int:
    """Terms of backward-weights' inner loop: N*P*Q, N times the padded plane with PAD_DY (GEMM_K in the kernel)."""
    return problem.n * padded_plane(problem, params)


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
