"""ConvIm2colGemm: convolution as im2col / col2im plus the shared tiled GEMM, in all three directions."""
from __future__ import annotations

import numpy as np

from ...device import SPLIT_WORKSPACE_CAP
from ...gemm import GemmShape, IndexMap, gemm_launch, split_reduce_launch
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, round_up
from ..problem import ConvProblem, Direction
from .common import problem_defines
from .gemm import GemmSolver

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

    def workspace_bytes(self, problem: ConvProblem) -> int:
        return 4 * _column_floats(problem, images_per_chunk(problem)) + self.split_workspace_bytes(problem)

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        shape, nb = self.gemm_shape(problem), images_per_chunk(problem)
        y_image = problem.k * problem.out_h * problem.out_w
        launches = []
        for n0 in range(0, problem.n, nb):
            if problem.direction is Direction.FORWARD:
                launches += [_im2col(problem, n0),
                             gemm_launch(shape, params, "w", "workspace", "y", (0, 0, n0 * y_image),
                                         epilogue=epilogue, epilogue_plane=problem.out_h * problem.out_w)]
            elif problem.direction is Direction.BACKWARD_DATA:
                launches += [gemm_launch(shape, params, "w", "y", "workspace", (0, n0 * y_image, 0)),
                             _col2im(problem, n0)]
            else:
                launches += [_im2col(problem, n0), self._weights_gemm(problem, shape, params, n0, y_image)]
        if problem.direction is Direction.BACKWARD_WEIGHTS and params["SPLIT_K"] > 1:
            launches.append(split_reduce_launch(shape, params["SPLIT_K"], "workspace", "w", _partials_offset(problem)))
        return Solution(self.id, dict(params), tuple(launches), self.workspace_bytes(problem))

    def _weights_gemm(self, problem: ConvProblem, shape: GemmShape, params: Params, n0: int,
                      y_image: int) -> KernelLaunch:
        """dw (or its split partials) of the chunk starting at image n0, added to the earlier chunks'."""
        beta = 0.0 if n0 == 0 else 1.0
        if params["SPLIT_K"] == 1:
            return gemm_launch(shape, params, "y", "workspace", "w", (n0 * y_image, 0, 0), beta)
        return gemm_launch(shape, params, "y", "workspace", "workspace",
                           (n0 * y_image, 0, _partials_offset(problem)), beta)


def images_per_chunk(problem: ConvProblem) -> int:
    """The largest divisor of N whose column matrices fit in COLUMN_CAP_BYTES (at least 1)."""
    per_image = 4 * _column_floats(problem, 1)
    fits = (d for d in range(2, problem.n + 1) if problem.n % d == 0 and d * per_image <= COLUMN_CAP_BYTES)
    return max(fits, default=1)


def _column_floats(problem: ConvProblem, images: int) -> int:
    return problem.c * problem.r * problem.s * images * problem.out_h * problem.out_w


def _partials_offset(problem: ConvProblem) -> int:
    """Split partials follow the column matrix in the workspace."""
    return _column_floats(problem, images_per_chunk(problem))


def _im2col(problem: ConvProblem, n0: int) -> KernelLaunch:
    nb = images_per_chunk(problem)
    spec = KernelSpec.make("conv_im2col.cl", "im2col", {**problem_defines(problem), "NB": nb})
    return KernelLaunch(spec, (round_up(_column_floats(problem, nb), 256),), (256,),
                        ("x", "workspace", np.int32(0), np.int32(n0)))


def _col2im(problem: ConvProblem, n0: int) -> KernelLaunch:
    nb = images_per_chunk(problem)
    spec = KernelSpec.make("conv_im2col.cl", "col2im", {**problem_defines(problem), "NB": nb})
    count = nb * problem.c * problem.in_h * problem.in_w
    return KernelLaunch(spec, (round_up(count, 256),), (256,), ("workspace", "x", np.int32(0), np.int32(n0)))
