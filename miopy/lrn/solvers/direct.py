"""LRNDirect: one work-item per element, both modes and directions."""
from __future__ import annotations

from ...device import INT_LIMIT, DeviceInfo, index_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, Solver, require, require_none, round_up
from ...tensor import DataType
from ..problem import LRNProblem
from .common import kernel_args, kernel_defines, kernel_suffix


class LRNDirect(Solver[LRNProblem]):
    """LRN forward and backward, cross-channel and within-channel, one work-item per element (MIOpen's
    LRN kernels). Each work-item sums its window from global memory (the neighbours' reads hit the cache);
    the backward gathers over the windows that hold its element (one pow per window term), so no atomics.
    Applies everywhere; the most parallel choice where there are few (n, h, w) columns.
    """

    id = "LRNDirect"
    algorithm = "direct"
    dtypes = frozenset({DataType.FLOAT32, DataType.FLOAT16})
    grid = {"WG": (64, 128, 256)}
    param_doc = {"WG": "work-group size (1-D)"}

    def applicability(self, problem: LRNProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(problem.shape.element_count < INT_LIMIT, "more than 2^31 work-items")
        require_none(index_reason(*(t.element_span for t in problem.tensors().values())))

    def invalid_reason(self, problem: LRNProblem, params: Params, dev: DeviceInfo) -> str | None:
        return super().invalid_reason(problem, params, dev) or work_group_reason(dev, (params["WG"],))

    def default_params(self, problem: LRNProblem, dev: DeviceInfo) -> Params:
        return {"WG": 128}

    def solution(self, problem: LRNProblem, params: Params) -> Solution:
        wg = params["WG"]
        spec = KernelSpec.make("lrn.cl", f"lrn_{kernel_suffix(problem)}", kernel_defines(problem))
        launch = KernelLaunch(spec, (round_up(problem.shape.element_count, wg),), (wg,), kernel_args(problem))
        return Solution(self.id, dict(params), (launch,))
