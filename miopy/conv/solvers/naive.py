"""ConvDirectNaive: one work-item per output element."""
from __future__ import annotations

from ...device import INT_LIMIT, DeviceInfo, index_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, round_up
from ..problem import ConvProblem, Direction
from .common import ConvSolver, problem_defines, stride_defines

_KERNELS = {
    Direction.FORWARD: ("naive_fwd", ("x", "w", "y")),
    Direction.BACKWARD_DATA: ("naive_bwd_data", ("x", "w", "y")),
    Direction.BACKWARD_WEIGHTS: ("naive_bwd_weights", ("x", "w", "y")),
}


class ConvDirectNaive(ConvSolver):
    """Direct convolution, one work-item per output element, in all three directions.

    Computes every pad / stride / dilation / groups combination and any tensor strides, reading each
    input from global memory without reuse, at any size: offsets and work-item ids are 64-bit where a
    tensor spans 2^31 elements or more (or there are that many work-items), so find always has a solver.
    It is the fallback that always applies and the slowest choice on any problem where another solver
    applies.
    """

    id = "ConvDirectNaive"
    algorithm = "naive"
    directions = frozenset(Direction)
    supports_epilogue = True
    grid = {"WG": (64, 128, 256)}
    param_doc = {"WG": "work-group size (1-D)"}

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)   # any size: offsets are 64-bit where 32 bits do not reach

    def invalid_reason(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        return reason or work_group_reason(dev, (params["WG"],))

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        return {"WG": 64}

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        name, args = _KERNELS[problem.direction]
        defines = {**problem_defines(problem), **stride_defines(problem), "INDEX_T": index_type(problem)}
        if epilogue is not None:
            defines.update(epilogue.defines())
            args = args + tuple(epilogue.args)
        spec = KernelSpec.make("conv_naive.cl", name, defines, ("-cl-mad-enable",))
        wg = params["WG"]
        launch = KernelLaunch(spec, (round_up(_work_items(problem), wg),), (wg,), args)
        return Solution(self.id, dict(params), (launch,))


def index_type(p: ConvProblem) -> str:
    """The kernel's offset type: 32-bit while every offset and work-item id fits, else 64-bit."""
    counts = (_work_items(p), *(d.element_span for d in (p.x, p.w, p.y)))
    return "int" if index_reason(*counts) is None and WIDE_INDEX_FROM > max(counts) else "long"


WIDE_INDEX_FROM = INT_LIMIT   # element counts from which 64-bit offsets are used even below 2^31 (tests lower it)


def _work_items(p: ConvProblem) -> int:
    if p.direction is Direction.FORWARD:
        return p.n * p.k * p.out_h * p.out_w
    if p.direction is Direction.BACKWARD_DATA:
        return p.n * p.c * p.in_h * p.in_w
    return p.k * p.c_per_group * p.r * p.s

