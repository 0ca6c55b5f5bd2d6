"""SoftmaxBlockPerRow: one work-group per row, a local-memory reduction."""
from __future__ import annotations

from ...device import INT_LIMIT, DeviceInfo, index_reason, local_memory_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, Solver, require, require_none
from ...tensor import FLOAT_BYTES, DataType
from ..problem import SoftmaxProblem
from .common import kernel_defines, kernel_name, kernel_roles


class SoftmaxBlockPerRow(Solver[SoftmaxProblem]):
    """Softmax, log-softmax and their backwards with one work-group per row: work-items stride along the
    row (an online max and sum), a tree in local memory combines them, a second pass writes.

    The choice for long rows (instance mode, a classifier's 1000 classes): the row's work is spread over a
    work-group. With many short rows most of each work-group idles; SoftmaxItemPerRow serves those.
    """

    id = "SoftmaxBlockPerRow"
    algorithm = "reduction"
    dtypes = frozenset({DataType.FLOAT32, DataType.FLOAT16})
    grid = {"WG": (32, 64, 128, 256)}
    param_doc = {"WG": "work-items per row (a power of two)"}

    def applicability(self, problem: SoftmaxProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(problem.rows * max(self.grid["WG"]) < INT_LIMIT, "more than 2^31 work-items")
        require_none(index_reason(*(t.element_span for t in problem.tensors().values())))

    def invalid_reason(self, problem: SoftmaxProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason:
            return reason
        wg = params["WG"]
        return work_group_reason(dev, (wg,)) or local_memory_reason(dev, 2 * wg * FLOAT_BYTES)

    def default_params(self, problem: SoftmaxProblem, dev: DeviceInfo) -> Params:
        """The smallest work-group giving each work-item at most 8 elements (32 to 256)."""
        wg = 32
        while wg < 256 and wg * 8 < problem.length:
            wg *= 2
        return {"WG": wg}

    def solution(self, problem: SoftmaxProblem, params: Params) -> Solution:
        wg = params["WG"]
        spec = KernelSpec.make("softmax_block.cl", kernel_name("softmax_block", problem),
                               {**kernel_defines(problem), "WG": wg})
        launch = KernelLaunch(spec, (problem.rows * wg,), (wg,), kernel_roles(problem))
        return Solution(self.id, dict(params), (launch,))
