"""SoftmaxItemPerRow: one work-item per (short) row."""
from __future__ import annotations

from ...device import INT_LIMIT, DeviceInfo, index_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, Solver, require, require_none, round_up
from ...tensor import DataType
from ..problem import SoftmaxProblem
from .common import kernel_defines, kernel_name, kernel_roles

MAX_LENGTH = 256   # longer rows serialise too much work on one work-item


class SoftmaxItemPerRow(Solver[SoftmaxProblem]):
    """Softmax, log-softmax and their backwards with one work-item per row, two passes along it.

    The choice for many short rows, typically channel mode over a few classes at every pixel
    (segmentation heads): neighbouring work-items take neighbouring pixels, so each pass reads coalesced
    and no work-item idles. Not applicable to rows longer than 256 elements.
    """

    id = "SoftmaxItemPerRow"
    algorithm = "direct"
    dtypes = frozenset({DataType.FLOAT32, DataType.FLOAT16})
    grid = {"WG": (64, 128, 256)}
    param_doc = {"WG": "work-group size (1-D)"}

    def applicability(self, problem: SoftmaxProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(problem.length <= MAX_LENGTH, f"rows longer than {MAX_LENGTH} elements")
        require(problem.rows < INT_LIMIT, "more than 2^31 rows")
        require_none(index_reason(*(t.element_span for t in problem.tensors().values())))

    def invalid_reason(self, problem: SoftmaxProblem, params: Params, dev: DeviceInfo) -> str | None:
        return super().invalid_reason(problem, params, dev) or work_group_reason(dev, (params["WG"],))

    def default_params(self, problem: SoftmaxProblem, dev: DeviceInfo) -> Params:
        return {"WG": 128}

    def solution(self, problem: SoftmaxProblem, params: Params) -> Solution:
        wg = params["WG"]
        spec = KernelSpec.make("softmax_item.cl", kernel_name("softmax_item", problem), kernel_defines(problem))
        launch = KernelLaunch(spec, (round_up(problem.rows, wg),), (wg,), kernel_roles(problem))
        return Solution(self.id, dict(params), (launch,))
