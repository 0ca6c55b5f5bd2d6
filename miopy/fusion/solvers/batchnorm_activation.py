"""BatchNormActivInference: batch-norm inference (+ residual add, + activation) as one pointwise kernel."""
from __future__ import annotations

from ...device import DeviceInfo, index_reason
from ...pointwise import pointwise_launch
from ...solver import Params, Solution, Solver, require, require_none
from ..problem import FusedProblem
from .common import FUSED_DTYPES


class BatchNormActivInference(Solver[FusedProblem]):
    """Batch-norm inference, optionally followed by a residual add and an activation, as one pointwise
    kernel (fusion_pointwise.cl).

    Memory-bound: reads x once and writes y once, whatever the epilogue. Does not apply after a
    convolution (ConvEpilogueFused folds the epilogue into the convolution instead).
    """

    id = "BatchNormActivInference"
    algorithm = "pointwise"
    dtypes = FUSED_DTYPES

    def applicability(self, problem: FusedProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(problem.conv is None, "runs batch norm (+ activation) alone, not after a convolution")
        require(problem.epilogue.batchnorm is not None,
                "needs a batch-norm op (an activation alone is activation_forward)")
        require(not problem.epilogue.bias, "a bias needs a convolution before it")
        require_none(index_reason(problem.x.element_span, problem.y.element_span))   # 32-bit offsets

    def solution(self, problem: FusedProblem, params: Params) -> Solution:
        epilogue = problem.epilogue
        launch = pointwise_launch("fusion_pointwise.cl", "pointwise_epilogue", {"X": problem.x, "Y": problem.y},
                                  epilogue.defines(), ("x", "y", *epilogue.args))
        return Solution(self.id, dict(params), (launch,))
