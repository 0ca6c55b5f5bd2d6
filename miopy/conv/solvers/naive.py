"""ConvDirectNaive: one work-item per output element."""
from __future__ import annotations

from ...device import INT_LIMIT, DeviceInfo, index_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, require, require_none, round_up
from ..problem import ConvProblem, Direction
from ..solver import ConvSolver
from .common import problem_defines, stride_defines

_KERNELS = {
    Direction.FORWARD: ("naive_fwd", ("x", "w", "y")),
    Direction.BACKWARD_DATA: ("naive_bwd_data", ("x", "w", "y")),
    Direction.BACKWARD_WEIGHTS: ("naive_bwd_weights", ("x", "w", "y")),
}


class ConvDirectNaive(ConvSolver):
    """Direct convolution, one work-item per output element, in all three directions.

    Computes every pad / stride / dilation / groups combination and any tensor strides, reading each
    input from global memory without reuse. It is the fallback that always applies and the slowest
    choice on any problem where another solver applies.
    """

    id = "ConvDirectNaive"
    algorithm = "naive"
    directions = frozenset(Direction)
    supports_epilogue = True
    grid = {"WG": (64, 128, 256)}
    param_doc = {"WG": "work-group size (1-D)"}

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(_work_items(problem) < INT_LIMIT, "more than 2^31 work-items")
        require_none(index_reason(*(d.element_span for d in (problem.x, problem.w, problem.y))))

    def invalid_reason(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        return reason or work_group_reason(dev, (params["WG"],))

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        return {"WG": 64}

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        name, args = _KERNELS[problem.direction]
        defines = {**problem_defines(problem), **stride_defines(problem)}
        if epilogue is not None:
            defines.update(epilogue.defines())
            args = args + tuple(epilogue.args)
        spec = KernelSpec.make("conv_naive.cl", name, defines, ("-cl-mad-enable",))
        wg = params["WG"]
        launch = KernelLaunch(spec, (round_up(_work_items(problem), wg),), (wg,), args)
        return Solution(self.id, dict(params), (launch,))


def _work_items(p: ConvProblem) -> int:
    if p.direction is Direction.FORWARD:
        return p.n * p.k * p.out_h * p.out_w
    if p.direction is Direction.BACKWARD_DATA:
        return p.n * p.c * p.in_h * p.in_w
    return p.k * p.c_per_group * p.r * p.s

