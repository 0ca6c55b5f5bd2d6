"""BatchNormInference: forward inference with estimated statistics, both modes, one element-wise kernel."""
from __future__ import annotations

from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, round_up
from ..descriptor import BatchNormMode
from ..problem import BatchNormProblem, BnDirection
from .common import ELEMENTWISE_WG, INFERENCE_SCALARS, BatchNormSolver, data_defines


class BatchNormInference(BatchNormSolver):
    """y = scale * (x - mean) / sqrt(variance + epsilon) + bias with given statistics, one work-item per
    element (batchnorm_inference.cl). Memory-bound: one read of x, one write of y, any strides."""

    id = "BatchNormInference"
    algorithm = "elementwise"
    directions = frozenset({BnDirection.FORWARD_INFERENCE})

    def solution(self, problem: BatchNormProblem, params: Params) -> Solution:
        defines = {**data_defines(problem), "SPATIAL": int(problem.mode is BatchNormMode.SPATIAL)}
        spec = KernelSpec.make("batchnorm_inference.cl", "bn_inference", defines)
        count = problem.x.element_count
        args = ("x", "y", "scale", "bias", "estimated_mean", "estimated_variance", *INFERENCE_SCALARS)
        return Solution(self.id, params, (KernelLaunch(spec, (round_up(count, ELEMENTWISE_WG),),
                                                       (ELEMENTWISE_WG,), args),))
