"""ConvImplicitGemmMma: implicit-GEMM convolution on NVIDIA tensor cores (inline PTX mma.sync), all directions."""
from __future__ import annotations

import itertools
from collections.abc import Iterator

from ....device import DeviceInfo, index_reason
from ....solver import Params, Solution, require, require_none
from ....tensor import DataType
from ...problem import ConvProblem, Direction
from ..common import ConvSolver
from . import defaults, validity
from .geometry import MMA_ROWS, PTX_CP_ASYNC, PTX_WGMMA, gemm_view, instruction, split_limit
from .launches import col2im_launches, launches
from .params import GRID, PARAM_DOC
from .workspace import (
    COL2IM_CAP,
    col2im_fits,
    col2im_problem,
    column_bytes,
    pad_dy_fits,
    transform_x_fits,
    workspace_bytes,
)

# Hybrid |a-e|/(1+|e|) bound vs float64 for find / tuning checks: 4 * 2^-11 * sqrt(L) at L = 1024 terms (the
# registry grows it like sqrt(L) beyond): each TF32 operand rounds by up to 2^-11 (10-bit mantissa), so a sum of
# L products of unit-size operands errs by about 2^-11 * sqrt(L), and the hybrid error is absolute where the
# result is near 0. fp16 data (exact products, one rounding of the output) stays far below. docs/guide/tensor_cores.md.
TENSOR_CORE_TOLERANCE = 4 * 2.0**-11 * 32
NEEDS_PTX = "needs NVIDIA OpenCL with PTX mma"


class ConvImplicitGemmMma(ConvSolver):
    """Implicit-GEMM convolution (no im2col buffer) whose inner product is the tensor cores' mma.sync.

    The GEMM of each direction is ConvDirectLocal's (forward K/G x N*P*Q over C/G*R*S, backward-data
    C/G x N*H*W over K/G*R*S, backward-weights K/G x C/G*R*S over N*P*Q); any direction may split the inner
    loop (SPLIT: fp32 partials in the workspace, summed in a fixed order by a second kernel, deterministic).
    Slices are gathered with zero padding, converted once (fp32 -> TF32 rounding to nearest) and staged in
    bank-conflict-free padded local tiles, double-buffered through registers or copied by cp.async; each warp
    keeps a block of 16x8 fp32 sum tiles, stored through local memory as runs of up to 16 bytes (STAGED_STORE).
    fp32 data runs m16n8k8 TF32 (only under math mode "tf32": products lose 13 mantissa bits); fp16 data runs
    m16n8k16 with fp32 sums; on Hopper, WGMMA runs wgmma.mma_async on swizzled tiles instead. Forward applies the
    fusion epilogue. A filter covering the unpadded image runs as the fully-connected layer it is (gemm_view).

    Wins: large layers on NVIDIA GPUs, where it passes the fp32 pipes' peak. Does not apply off NVIDIA's
    OpenCL (no inline PTX), to fp32 under math mode "strict", to non-packed tensors or to tensors spanning
    2^31 elements. Backward-data with stride > 1 (dilation 1) runs in stride_h x stride_w phases of dx, each
    over only the taps that reach it (see PHASED in mma_addressing.h); with dilation too it wastes the taps that
    land between outputs. Backward-data of few input channels (COL2IM) computes the column matrix W^T dy as the 1x1
    forward GEMM it is, into the workspace, and col2im gathers dx from it: the C rows of the direct GEMM would fill
    C of the mma's 16.

    The package: geometry (the GEMM and its layout), workspace (the copies and partials), validity (the rules of
    invalid_reason), params (the grid), defaults and wgmma_defaults (default_params), measured (the measured
    choices as data), launches (the kernels of a solution).
    """

    id = "ConvImplicitGemmMma"
    algorithm = "implicit_gemm"
    directions = frozenset(Direction)
    dtypes = frozenset({DataType.FLOAT32, DataType.FLOAT16})
    supports_epilogue = True
    tensor_cores = True
    tolerance = TENSOR_CORE_TOLERANCE
    grid = GRID
    param_doc = PARAM_DOC

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
            reason = (validity.wgmma_reason(problem, params, dev) or validity.pipeline_reason(problem, params, dev)
                      or validity.warp_reason(problem, params) or validity.device_reason(problem, params, dev))
        return reason or validity.shape_reason(problem, params)

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
        values = self._values(problem, dev)
        names = list(values)
        for point in itertools.product(*values.values()):
            params = dict(zip(names, point))
            if not _skipped(params, problem.direction) and self.is_valid(problem, params, dev):
                yield params

    def _values(self, problem: ConvProblem, dev: DeviceInfo) -> dict[str, tuple]:
        """The grid's values, less those no valid point of problem on dev takes."""
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
        values["VECTOR_B"] = tuple(v for v in values["VECTOR_B"] if not v or validity.vector_b_fits(problem, v))
        if PTX_CP_ASYNC not in dev.ptx_mma:
            values["CP_ASYNC"], values["STAGES"] = (False,), (1, 2)
        if PTX_WGMMA not in dev.ptx_mma:
            values["WGMMA"] = (False,)
        return values

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        return defaults.default_params(gemm_view(problem), dev, self.is_valid)

    @staticmethod
    def truncates_tf32(problem: ConvProblem, params: Params) -> bool:
        """Whether params' kernel hands fp32 operands to the tensor cores unrounded, so they are truncated to TF32
        (WGMMA in TF32 backward-weights: cp.async copies dy and x straight into local memory, where wgmma reads
        them; see docs/guide/tensor_cores.md, Accuracy): their error bound has u_in = 2^-10, not 2^-11."""
        return bool(params.get("WGMMA")) and problem.dtype is DataType.FLOAT32 \
            and problem.direction is Direction.BACKWARD_WEIGHTS

    def workspace_bytes(self, problem: ConvProblem) -> int:
        """Room for the transformed weights (TRANSFORM_W) and, where the problem allows TRANSFORM_X, the
        channel-fastest copy of x / dy (forward / backward-data), then fp32 split partials for the largest SPLIT the
        problem allows (see split_limit)."""
        return workspace_bytes(gemm_view(problem))

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        problem = gemm_view(problem)
        if params["COL2IM"]:
            return Solution(self.id, dict(params), col2im_launches(problem, params), self.workspace_bytes(problem))
        return Solution(self.id, dict(params), launches(problem, params, epilogue), self.workspace_bytes(problem))


def _skipped(params: Params, direction: Direction) -> bool:
    """Combinations search_space skips without asking is_valid: each is invalid (pipeline_reason, shape_reason,
    wgmma_reason say why)."""
    if params["STAGES"] > 2 and not params["CP_ASYNC"] or params["CP_ASYNC"] and params["STAGES"] < 2:
        return True
    if (params["TRANSFORM_W"] or params["VECTOR_B"]) and not params["CHANNEL_BLOCKS"]:
        return True
    if params["TRANSFORM_X"] and not params["CHANNEL_BLOCKS"] and direction is not Direction.BACKWARD_WEIGHTS:
        return True
    if params["TRANSFORM_X"] and params["VECTOR_B"]:
        return True
    return bool(params["WGMMA"] and (params["LDMATRIX"] or params["WARPS_N"] > 1 or not params["TRANSFORM_X"]
                                     and direction is not Direction.BACKWARD_WEIGHTS))
