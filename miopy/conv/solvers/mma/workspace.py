"""ConvImplicitGemmMma's workspace: the copies its kernels read (the weights' transposing copy TRANSFORM_W, the
channel-fastest copy of x / dy TRANSFORM_X, dy's padded copy PAD_DY), then the split partials or COL2IM's column
matrix, each 256-byte aligned (X_OFFSET, DY_OFFSET, PARTIAL_OFFSET in mma_store.h)."""
from __future__ import annotations

from ....solver import Params, round_up
from ....tensor import DataType, TensorDesc
from ...problem import ConvDesc, ConvProblem, Direction
from .geometry import MMA_ROWS, a_vector, output_count, split_limit

PARTIAL_ALIGN = 256           # bytes: each part of the workspace starts this aligned
TRANSFORM_X_CAP = 512 << 20   # bytes: the largest channel-fastest copy of x / dy (TRANSFORM_X) the workspace holds
COL2IM_CAP = 1 << 30          # bytes: the largest fp32 column matrix COL2IM's workspace holds


def transform_x_source(problem: ConvProblem) -> tuple[int, int, str]:
    """(channels, pixels per image, buffer) of the tensor TRANSFORM_X copies: x forward and backward-weights, dy
    backward-data."""
    p = problem
    if p.direction is Direction.BACKWARD_DATA:
        return p.k, p.out_h * p.out_w, "y"
    return p.c, p.in_h * p.in_w, "x"


def transform_x_channels(problem: ConvProblem) -> int:
    """Channels per group of the copied tensor (C/G, K/G backward-data): a vector never crosses a group."""
    return transform_x_source(problem)[0] // problem.groups


def transform_x_bytes(problem: ConvProblem) -> int:
    """Bytes of TRANSFORM_X's copy (x forward and backward-weights, dy backward-data)."""
    channels, pixels, _ = transform_x_source(problem)
    return problem.n * channels * pixels * problem.dtype.itemsize


def transform_x_fits(problem: ConvProblem) -> bool:
    """Whether TRANSFORM_X can apply: channels per group of the copied tensor (C/G, K/G backward-data) a multiple
    of the 16-byte vector, the copy within TRANSFORM_X_CAP."""
    return (transform_x_channels(problem) % a_vector(problem.dtype) == 0
            and transform_x_bytes(problem) <= TRANSFORM_X_CAP)


def pad_dy_fits(problem: ConvProblem) -> bool:
    """Whether PAD_DY can apply: fp16 backward-weights whose dy planes (P*Q) are not a multiple of 8 elements."""
    p = problem
    return (p.direction is Direction.BACKWARD_WEIGHTS and p.dtype is DataType.FLOAT16
            and (p.out_h * p.out_w) % a_vector(p.dtype) != 0)


def pad_dy_bytes(problem: ConvProblem) -> int:
    """Bytes of PAD_DY's copy of dy: N*K planes of P*Q rounded up to 8 halves."""
    p = problem
    return p.n * p.k * round_up(p.out_h * p.out_w, a_vector(p.dtype)) * p.dtype.itemsize


def col2im_fits(problem: ConvProblem) -> bool:
    """Whether COL2IM can run problem (gemm_view'd): backward-data, one group, fewer input channels than an mma
    tile's 16 rows (where the direct GEMM leaves rows empty; the workspace of other problems does not grow by a
    column matrix), a filter larger than 1x1, the column matrix within COL2IM_CAP."""
    p = problem
    return (p.direction is Direction.BACKWARD_DATA and p.groups == 1 and p.c < MMA_ROWS and p.r * p.s > 1
            and column_bytes(p) <= COL2IM_CAP)


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


def partial_offset(problem: ConvProblem, params: Params) -> int:
    """Bytes into the workspace where the fp32 partials (or COL_OUT's column matrix) start: after the weight copy
    (TRANSFORM_W), the channel-fastest copy (TRANSFORM_X) and dy's padded copy (PAD_DY), each 256-byte aligned
    (PARTIAL_OFFSET in mma_store.h)."""
    w_copy = problem.w.element_count * problem.dtype.itemsize if params["TRANSFORM_W"] else 0
    x_copy = transform_x_bytes(problem) if params["TRANSFORM_X"] else 0
    dy_copy = pad_dy_bytes(problem) if params.get("PAD_DY") else 0
    return round_up(w_copy, PARTIAL_ALIGN) + round_up(x_copy, PARTIAL_ALIGN) + round_up(dy_copy, PARTIAL_ALIGN)


def workspace_bytes(problem: ConvProblem) -> int:
    """Room for every copy the problem allows (the weights' in forward / backward-data, x / dy's channel-fastest
    one, dy's padded one in backward-weights), then fp32 split partials for the largest SPLIT the problem allows
    (see split_limit), or COL2IM's copies and column matrix where that is larger (problem gemm_view'd)."""
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
