"""Why ConvImplicitGemmMma's params cannot run a problem on a device: each rule a function returning a reason or
None (ConvImplicitGemmMma.invalid_reason chains them)."""
from __future__ import annotations

from .... import ptx_patch
from ....device import SPLIT_WORKSPACE_CAP, DeviceInfo, grid_reason, local_memory_reason, work_group_reason
from ....solver import Params
from ....tensor import DataType
from ...problem import ConvProblem, Direction
from ..direct_local import MIN_SPLIT_CHUNK, inner_channels
from . import measured
from .geometry import (
    MAX_SPLIT_FB,
    PTX_CP_ASYNC,
    PTX_WGMMA,
    WARP,
    a_vector,
    async_operands,
    b_kk_fast,
    chunk_of,
    gemm_shape,
    kernel_warps,
    local_bytes,
    mma_k,
    padded_plane,
    phased,
    phases,
    split_limit,
    threads_of,
    total_steps,
    wgrad_terms,
)
from .workspace import TRANSFORM_X_CAP, pad_dy_fits, transform_x_bytes, transform_x_channels

MAX_ACCUMULATORS = 128        # fp32 sums per lane (a 64x64 warp tile): beyond this registers spill
MAX_PREFETCH = 64             # elements per lane fetched one step ahead into registers (A and B together)
MAX_COPIES = 128              # elements per lane a step copies, registers and cp.async together (unrolled code)
WGMMA_N = ptx_patch.SHAPES_N  # N_BLK values with a wgmma shape in miopy/kernels/wgmma.h


def split_reason(problem: ConvProblem, params: Params) -> str | None:
    """SPLIT against the problem's limit (split_limit) and the inner loop's length."""
    split = params["SPLIT"]
    if split > split_limit(problem):
        return (f"SPLIT={split} > {split_limit(problem)} (the partials' workspace within "
                f"{SPLIT_WORKSPACE_CAP >> 20} MiB; backward-weights: chunks of {MIN_SPLIT_CHUNK} terms at least; "
                f"forward / backward-data: {MAX_SPLIT_FB} at most, outputs of "
                f"{measured.CHOICES.split_fb_max_output} elements at most)")
    if split > 1 and problem.direction is Direction.BACKWARD_WEIGHTS:
        total, chunk = wgrad_terms(problem, params), chunk_of(problem, params)
        if chunk * (split - 1) >= total:
            return f"SPLIT={split} leaves a chunk empty ({total} terms in chunks of {chunk})"
    elif split > total_steps(problem, params):
        return f"SPLIT={split} > the {total_steps(problem, params)} slices of the inner loop"
    return None


def pipeline_reason(problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
    """STAGES against CP_ASYNC, and cp.async against the device and the data type."""
    stages = params["STAGES"]
    if not params["CP_ASYNC"]:
        return f"STAGES={stages} > 2 needs CP_ASYNC" if stages > 2 else None
    if PTX_CP_ASYNC not in dev.ptx_mma:
        return "CP_ASYNC needs cp.async (the device's compiler refused the probe, or it is not NVIDIA's)"
    if stages < 2:
        return "CP_ASYNC needs STAGES >= 2 (copies land in one buffer while another is multiplied)"
    if problem.dtype is DataType.FLOAT16 and not params["VECTOR_A"]:
        threads = threads_of(params)
        # backward-weights: pairs across an odd P*Q plane's end go element by element (A_PAIR_TAIL)
        reason = vector_a_reason(problem, params, threads, vec=2,
                                 any_plane=problem.direction is Direction.BACKWARD_WEIGHTS)
        if reason:   # cp.async copies 4 bytes at least: fp16 A goes in pairs of consecutive k
            return f"CP_ASYNC with fp16 data copies A in pairs along k (or 16-byte VECTOR_A): {reason}"
    return None


def warp_reason(problem: ConvProblem, params: Params) -> str | None:
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
    return _register_reason(problem, params)


def _register_reason(problem: ConvProblem, params: Params) -> str | None:
    """A lane's sums, copies and prefetched elements against what its registers hold."""
    m_blk, n_blk, k_blk = params["M_BLK"], params["N_BLK"], params["K_BLK"]
    warps_m, warps_n = kernel_warps(params)
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


def wgmma_reason(problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
    """Why WGMMA cannot run params (see WGMMA in mma_wgmma.h), or None."""
    if not params["WGMMA"]:
        return None
    if PTX_WGMMA not in dev.ptx_mma:
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


def device_reason(problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
    """The work-group's size and local memory against the device's limits."""
    threads = threads_of(params)
    return (work_group_reason(dev, (threads,))
            or local_memory_reason(dev, local_bytes(params, problem.dtype, problem.direction)))


def _fetch_divides(k_blk: int, blk: int, threads: int, kk_fast: bool) -> bool:
    """Whether a K_BLK x blk slice splits into whole passes of `threads` work-items (see implicit_gemm.h)."""
    fast, slow = (k_blk, blk) if kk_fast else (blk, k_blk)
    step = min(threads, fast)
    return fast % step == 0 and slow % (threads // step) == 0 and threads % step == 0


def _pow2_ceil(value: int) -> int:
    return 1 << max(value - 1, 0).bit_length()


def shape_reason(problem: ConvProblem, params: Params) -> str | None:
    """Tiles against the problem: whole fetch passes, the switches' needs, no tile twice too big, SPLIT within
    bounds, the grid within the device's."""
    threads = threads_of(params)
    k_blk, n_blk = params["K_BLK"], params["N_BLK"]
    b_fits = bool(params["TRANSFORM_X"]) or _fetch_divides(k_blk, n_blk, threads, b_kk_fast(params, problem.direction))
    if not (_fetch_divides(k_blk, params["M_BLK"], threads, True) and b_fits):
        return f"{threads} work-items do not split the {k_blk}x{params['M_BLK']} and {k_blk}x{n_blk} slices evenly"
    return _switch_reason(problem, params, threads) or _size_reason(problem, params)


def _switch_reason(problem: ConvProblem, params: Params, threads: int) -> str | None:
    """The switches' needs: channel blocks, the weight copy, vector fetches, the copies of x / dy."""
    if params["CHANNEL_BLOCKS"] and problem.direction is Direction.BACKWARD_WEIGHTS:
        return "CHANNEL_BLOCKS applies to forward and backward-data only"
    if params["TRANSFORM_W"] and not params["CHANNEL_BLOCKS"]:
        return "TRANSFORM_W needs CHANNEL_BLOCKS (forward and backward-data)"
    if params["VECTOR_A"]:
        reason = vector_a_reason(problem, params, threads)
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
    return None


def _size_reason(problem: ConvProblem, params: Params) -> str | None:
    """No tile more than twice too big, SPLIT within bounds, the grid within the device's."""
    shape = gemm_shape(problem)
    m_blk, n_blk, k_blk = params["M_BLK"], params["N_BLK"], params["K_BLK"]
    k_size = inner_channels(problem) if params["CHANNEL_BLOCKS"] else shape.k
    n_size = shape.n // phases(problem)    # one phase's columns
    for name, blk, size, least in (("M", m_blk, shape.m, 16), ("N", n_blk, n_size, 16), ("K", k_blk, k_size, 16)):
        if blk > max(least, _pow2_ceil(size)):
            return f"{name} tile {blk} > {size} rounded up to a power of two"
    reason = split_reason(problem, params)
    if reason:
        return reason
    return grid_reason((0, -(-shape.m // m_blk), problem.groups * params["SPLIT"] * phases(problem)))


def vector_a_reason(problem: ConvProblem, params: Params, threads: int, vec: int = 0,
                    any_plane: bool = False) -> str | None:
    """Why A cannot be fetched in 16-byte vectors along k (see VECTOR_A in mma_copy.h), or vec-element ones
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
    """Why B cannot be read from a channel-fastest copy in 16-byte vectors (TRANSFORM_X in mma_copy.h), or None."""
    vec, p = a_vector(problem.dtype), problem
    wgrad = p.direction is Direction.BACKWARD_WEIGHTS
    if (not wgrad and not params["CHANNEL_BLOCKS"]) or params["VECTOR_B"]:
        return "TRANSFORM_X needs CHANNEL_BLOCKS (forward / backward-data) and no VECTOR_B"
    if transform_x_channels(p) % vec:
        return (f"TRANSFORM_X: {transform_x_channels(p)} channels per group are not a multiple of the {vec}-element "
                f"vector")
    if transform_x_bytes(p) > TRANSFORM_X_CAP:
        return f"TRANSFORM_X: the copy takes {transform_x_bytes(p)} bytes > {TRANSFORM_X_CAP >> 20} MiB"
    k_blk, n_blk = params["K_BLK"], params["N_BLK"]
    if wgrad:   # vectors along the columns
        fits = n_blk % vec == 0 and _fetch_divides(k_blk, n_blk // vec, threads, False)
    else:       # vectors along k
        fits = k_blk % vec == 0 and _fetch_divides(k_blk // vec, n_blk, threads, True)
    return None if fits else f"TRANSFORM_X: a {k_blk}x{n_blk} slice is not whole passes of {vec}-vectors"


def vector_b_fits(problem: ConvProblem, vec: int) -> bool:
    """Whether the problem lets VECTOR_B=vec gather B along output rows (whatever the tiles)."""
    p = problem
    return (p.direction is not Direction.BACKWARD_WEIGHTS and p.stride_w == 1 and vec * p.dtype.itemsize <= 16
            and p.in_w % vec == 0 and p.out_w % vec == 0 and not phased(p))


def _vector_b_reason(problem: ConvProblem, params: Params, threads: int) -> str | None:
    """Why B cannot be gathered in VECTOR_B-column vectors (see VECTOR_B in mma_copy.h), or None."""
    vec, p = params["VECTOR_B"], problem
    if p.direction is Direction.BACKWARD_WEIGHTS or not params["CHANNEL_BLOCKS"]:
        return "VECTOR_B needs CHANNEL_BLOCKS (forward / backward-data)"
    if not vector_b_fits(p, vec):
        return (f"VECTOR_B={vec}: needs stride 1 along w (and h in backward-data), W={p.in_w} and Q={p.out_w} "
                f"multiples of {vec}, at most 16 bytes")
    if not _fetch_divides(params["K_BLK"], params["N_BLK"] // vec, threads, False):
        return f"VECTOR_B: a {params['K_BLK']}x{params['N_BLK']} slice is not whole passes of {vec}-vectors"
    return None
