"""GemmSolver: the base of convolution solvers whose work is one shape of the shared tiled SGEMM (miopy.tiled_gemm)."""
from __future__ import annotations

from ...device import MAX_GRID_DIM, DeviceInfo, index_reason
from ...solver import Params, ceil_div, require, require_none
from ...tiled_gemm import (
    GEMM_GRID,
    GEMM_PARAM_DOC,
    GemmShape,
    gemm_default_params,
    gemm_invalid_reason,
    split_limit,
    split_workspace_bytes,
)
from ..problem import ConvProblem, Direction
from .common import ConvSolver

_MIN_TILE = min(GEMM_GRID["TILE_M"])


class GemmSolver(ConvSolver):
    """A solver whose work is one GEMM shape per problem (possibly repeated over chunks of images).

    Subclasses give ``gemm_shape``; tuning space, validity and defaults are the shared GEMM ones. Only
    backward-weights may split the inner dimension (its partials need workspace and a reduction; forward
    stores through the epilogue and backward-data scatters, so they never split).
    """

    algorithm = "gemm"
    directions = frozenset(Direction)
    grid = GEMM_GRID
    param_doc = GEMM_PARAM_DOC

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(problem.is_packed, "tensors must be packed NCHW")
        require_none(index_reason(*(d.element_span for d in (problem.x, problem.w, problem.y)),
                                  self.workspace_bytes(problem) // problem.dtype.itemsize))
        shape = self.gemm_shape(problem)
        require(shape.batch <= MAX_GRID_DIM and ceil_div(shape.m, _MIN_TILE) <= MAX_GRID_DIM,
                f"the GEMM ({shape.m} rows, batch {shape.batch}) exceeds the launch grid")

    def gemm_shape(self, problem: ConvProblem) -> GemmShape:
        raise NotImplementedError

    def max_split(self, problem: ConvProblem) -> int:
        if problem.direction is not Direction.BACKWARD_WEIGHTS:
            return 1
        return split_limit(self.gemm_shape(problem))

    def invalid_reason(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason is None:
            reason = gemm_invalid_reason(self.gemm_shape(problem), params, dev, self.max_split(problem))
        return reason

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        return gemm_default_params(self.gemm_shape(problem), dev, self.max_split(problem))

    def split_workspace_bytes(self, problem: ConvProblem) -> int:
        """Workspace reserved for split partials: only backward-weights splits."""
        return split_workspace_bytes(self.gemm_shape(problem)) if self.max_split(problem) > 1 else 0
