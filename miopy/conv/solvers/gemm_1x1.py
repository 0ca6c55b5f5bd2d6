"""ConvGemm1x1: 1x1 convolutions as one GEMM straight over the NCHW tensors, in all three directions."""
from __future__ import annotations

import numpy as np

from ...device import DeviceInfo
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, require, round_up
from ...tensor import DataType
from ...tiled_gemm import GemmShape, IndexMap, gemm_launch, split_reduce_launch
from ..problem import ConvProblem, Direction
from .gemm_base import GemmSolver


class ConvGemm1x1(GemmSolver):
    """A 1x1, pad-0 convolution (any stride, groups allowed) is a matrix product per group:

    forward y = W (K/g x C/g) * x (C/g x N*P*Q), backward-data dx = W^T * dy, backward-weights
    dw = dy * x^T with all images along the inner dimension, in one launch, deterministic (a split of
    the inner dimension sums its partials in a fixed order). The GEMM reads and writes the tensors in
    place: images are laid side by side through an index map, and with stride > 1 x is read (or dx
    written) every stride-th element, so there is no im2col and no copy; backward-data with stride > 1
    zeroes dx first, since the positions no output reads get no gradient. Forward applies the epilogue.

    The solver of choice for 1x1 layers (bottlenecks, projections, pointwise convolutions). Does not
    apply to other filter sizes, to padding, or to non-packed tensors.
    """

    id = "ConvGemm1x1"
    supports_epilogue = True

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(problem.r == 1 and problem.s == 1, "filter is not 1x1")
        require(not any(problem.conv.pads), f"padding {problem.conv.pad_text()} is not 0")

    def gemm_shape(self, problem: ConvProblem) -> GemmShape:
        """The per-group product of problem's direction, over all images."""
        p = problem
        cg, kg, hw, pq = p.c_per_group, p.k_per_group, p.in_h * p.in_w, p.out_h * p.out_w
        cols, y_map, x_map = p.n * pq, IndexMap.images(pq, p.k * pq), _x_map(p)
        if p.direction is Direction.FORWARD:    # y = W * x
            return GemmShape(kg, cols, cg, cg, hw, pq, batch=p.groups, a_batch=kg * cg, b_batch=cg * hw,
                             c_batch=kg * pq, b_map=x_map, c_map=y_map)
        if p.direction is Direction.BACKWARD_DATA:   # dx = W^T * dy
            return GemmShape(cg, cols, kg, cg, pq, hw, trans_a=True, batch=p.groups, a_batch=kg * cg,
                             b_batch=kg * pq, c_batch=cg * hw, b_map=y_map, c_map=x_map)
        return GemmShape(kg, cg, cols, pq, hw, cg, trans_b=True, batch=p.groups,   # dw = dy * x^T
                         a_batch=kg * pq, b_batch=cg * hw, c_batch=kg * cg, a_map=y_map, b_map=x_map)

    def workspace_bytes(self, problem: ConvProblem) -> int:
        return self.split_workspace_bytes(problem)

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        shape, launches, dtype = self.gemm_shape(problem), [], problem.dtype
        if problem.direction is Direction.FORWARD:
            launches.append(gemm_launch(shape, params, "w", "x", "y", epilogue=epilogue,
                                        epilogue_plane=problem.out_h * problem.out_w, dtype=dtype))
        elif problem.direction is Direction.BACKWARD_DATA:
            if _skips_inputs(problem):
                launches.append(_zero(problem.x.element_count, "x", dtype))
            launches.append(gemm_launch(shape, params, "w", "y", "x", dtype=dtype))
        elif params["SPLIT_K"] == 1:
            launches.append(gemm_launch(shape, params, "y", "x", "w", dtype=dtype))
        else:
            launches += [gemm_launch(shape, params, "y", "x", "workspace", dtype=dtype),
                         split_reduce_launch(shape, params["SPLIT_K"], "workspace", "w", dtype=dtype)]
        return Solution(self.id, dict(params), tuple(launches), self.workspace_bytes(problem))


def _x_map(p: ConvProblem) -> IndexMap:
    """Where output position i = (image, p, q) reads x within a channel: contiguous unless strided."""
    if not _skips_inputs(p):
        return IndexMap.images(p.in_h * p.in_w, p.c * p.in_h * p.in_w)
    return IndexMap.strided_plane(p.out_h, p.out_w, p.stride_h * p.in_w, p.stride_w, p.c * p.in_h * p.in_w)


def _skips_inputs(p: ConvProblem) -> bool:
    """Some x positions are read by no output (stride > 1, so P*Q < H*W)."""
    return p.out_h * p.out_w != p.in_h * p.in_w


def _zero(count: int, role: str, dtype: DataType) -> KernelLaunch:
    spec = KernelSpec.make("scale.cl", "fill", dtype.defines)
    return KernelLaunch(spec, (round_up(count, 256),), (256,), (role, np.float32(0.0), np.int32(count)))
