"""ConvIm2colGemm: convolution as im2col / col2im plus the shared tiled GEMM, in all three directions."""
from __future__ import annotations

import numpy as np

from ...device import SPLIT_WORKSPACE_CAP, DeviceInfo
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, require, round_up
from ...tensor import DataType
from ...tiled_gemm import PARTIAL_BYTES, GemmShape, IndexMap, gemm_launch, split_reduce_launch
from ..problem import ConvProblem, Direction
from .common import problem_defines
from .gemm_base import GemmSolver

COLUMN_CAP_BYTES = SPLIT_WORKSPACE_CAP   # column matrix size above which images are processed in chunks


class ConvIm2colGemm(GemmSolver):
    """Convolution lowered to GEMM through a column matrix in the workspace, any pad / stride / dilation /
    groups, over chunks of NB images (NB: the largest divisor of N whose columns fit in 64 MiB).

    Forward: im2col of x, then per group y = W (K/g x C/g*R*S) * col (C/g*R*S x NB*P*Q), epilogue in the
    store. Backward-data: col = W^T * dy per group, then col2im gathers each dx element (deterministic).
    Backward-weights: im2col of x, then dw = dy * col^T per group with the images of a chunk along the
    inner dimension, chunks accumulated in order (and an optional split of the inner dimension whose
    partials are summed in a fixed order): the same bits every run.

    Wins on large-channel layers where the GEMM runs near peak and no specialised solver applies (odd
    filters, dilation, large strides). Costs R*S times the input in workspace traffic, so 1x1 layers
    (ConvGemm1x1) and 3x3 stride-1 layers (Winograd) usually go faster elsewhere. Needs packed tensors.
    """

    id = "ConvIm2colGemm"
    supports_epilogue = True

    def gemm_shape(self, problem: ConvProblem) -> GemmShape:
        """The per-chunk, per-group product of problem's direction."""
        p, nb = problem, images_per_chunk(problem)
        crs, kg, pq = p.c_per_group * p.r * p.s, p.k_per_group, p.out_h * p.out_w
        cols, y_map = nb * pq, IndexMap.images(pq, p.k * pq)
        if p.direction is Direction.FORWARD:    # y = W * col
            return GemmShape(kg, cols, crs, crs, cols, pq, batch=p.groups, a_batch=kg * crs, b_batch=crs * cols,
                             c_batch=kg * pq, c_map=y_map)
        if p.direction is Direction.BACKWARD_DATA:   # col = W^T * dy
            return GemmShape(crs, cols, kg, crs, pq, cols, trans_a=True, batch=p.groups, a_batch=kg * crs,
                             b_batch=kg * pq, c_batch=crs * cols, b_map=y_map)
        return GemmShape(kg, crs, cols, pq, cols, crs, trans_b=True, batch=p.groups,   # dw = dy * col^T
                         a_batch=kg * pq, b_batch=crs * cols, c_batch=kg * crs, a_map=y_map)

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(not _chunked_half_weights(problem) or self.split_workspace_bytes(problem) > 0,
                "fp16 backward-weights over several image chunks needs float partials that do not fit")

    def workspace_bytes(self, problem: ConvProblem) -> int:
        return column_bytes(problem, images_per_chunk(problem)) + self.split_workspace_bytes(problem)

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        shape, nb, dtype = self.gemm_shape(problem), images_per_chunk(problem), problem.dtype
        y_image = problem.k * problem.out_h * problem.out_w
        launches = []
        for n0 in range(0, problem.n, nb):
            if problem.direction is Direction.FORWARD:
                launches += [_im2col(problem, n0),
                             gemm_launch(shape, params, "w", "workspace", "y", (0, 0, n0 * y_image),
                                         epilogue=epilogue, epilogue_plane=problem.out_h * problem.out_w,
                                         dtype=dtype)]
            elif problem.direction is Direction.BACKWARD_DATA:
                launches += [gemm_launch(shape, params, "w", "y", "workspace", (0, n0 * y_image, 0), dtype=dtype,
                                         c_dtype=column_dtype(problem)),
                             _col2im(problem, n0)]
            else:
                launches += [_im2col(problem, n0), self._weights_gemm(problem, shape, params, n0, y_image)]
        if problem.direction is Direction.BACKWARD_WEIGHTS and _float_partials(problem, params):
            launches.append(split_reduce_launch(shape, params["SPLIT_K"], "workspace", "w", _partials_offset(problem),
                                                dtype=dtype))
        return Solution(self.id, dict(params), tuple(launches), self.workspace_bytes(problem))

    def _weights_gemm(self, problem: ConvProblem, shape: GemmShape, params: Params, n0: int,
                      y_image: int) -> KernelLaunch:
        """dw (or its float partials) of the chunk starting at image n0, added to the earlier chunks'."""
        beta = 0.0 if n0 == 0 else 1.0
        if not _float_partials(problem, params):
            return gemm_launch(shape, params, "y", "workspace", "w", (n0 * y_image, 0, 0), beta, dtype=problem.dtype)
        return gemm_launch(shape, params, "y", "workspace", "workspace",
                           (n0 * y_image, 0, _partials_offset(problem)), beta, dtype=problem.dtype,
                           c_dtype=DataType.FLOAT32)


def images_per_chunk(problem: ConvProblem) -> int:
    """The largest divisor of N whose column matrices fit in COLUMN_CAP_BYTES (at least 1)."""
    per_image = _column_elements(problem, 1) * column_dtype(problem).itemsize
    fits = (d for d in range(2, problem.n + 1) if problem.n % d == 0 and d * per_image <= COLUMN_CAP_BYTES)
    return max(fits, default=1)


def column_dtype(problem: ConvProblem) -> DataType:
    """The column matrix's storage: copies of x in the data type (forward, backward-weights); backward-data's
    column holds sums that col2im adds again, so they stay float."""
    return DataType.FLOAT32 if problem.direction is Direction.BACKWARD_DATA else problem.dtype


def column_bytes(problem: ConvProblem, images: int) -> int:
    """Bytes of the column matrix of images images, rounded up so the float partials after it are aligned."""
    return round_up(_column_elements(problem, images) * column_dtype(problem).itemsize, PARTIAL_BYTES)


def _column_elements(problem: ConvProblem, images: int) -> int:
    return problem.c * problem.r * problem.s * images * problem.out_h * problem.out_w


def _chunked_half_weights(problem: ConvProblem) -> bool:
    """fp16 backward-weights over several image chunks: the chunks are summed in float partials, so dw is
    rounded to half once, not once per chunk."""
    return (problem.direction is Direction.BACKWARD_WEIGHTS and problem.dtype is not DataType.FLOAT32
            and problem.n > images_per_chunk(problem))


def _float_partials(problem: ConvProblem, params: Params) -> bool:
    """Whether backward-weights sums into float partials in the workspace (then split_reduce writes dw)."""
    return params["SPLIT_K"] > 1 or _chunked_half_weights(problem)


def _partials_offset(problem: ConvProblem) -> int:
    """Split partials follow the column matrix in the workspace (an offset in floats)."""
    return column_bytes(problem, images_per_chunk(problem)) // PARTIAL_BYTES


def _col_defines(problem: ConvProblem) -> dict[str, int]:
    return {**problem_defines(problem), "NB": images_per_chunk(problem),
            "COL_HALF": column_dtype(problem).defines["MIOPY_HALF"]}


def _im2col(problem: ConvProblem, n0: int) -> KernelLaunch:
    spec = KernelSpec.make("conv_im2col.cl", "im2col", _col_defines(problem))
    return KernelLaunch(spec, (round_up(_column_elements(problem, images_per_chunk(problem)), 256),), (256,),
                        ("x", "workspace", np.int32(0), np.int32(n0)))


def _col2im(problem: ConvProblem, n0: int) -> KernelLaunch:
    spec = KernelSpec.make("conv_im2col.cl", "col2im", _col_defines(problem))
    count = images_per_chunk(problem) * problem.c * problem.in_h * problem.in_w
    return KernelLaunch(spec, (round_up(count, 256),), (256,), ("workspace", "x", np.int32(0), np.int32(n0)))
