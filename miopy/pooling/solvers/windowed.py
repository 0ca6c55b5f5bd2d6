"""PoolingWindowed: any window, stride, per-side padding and mode; one work-item per element."""
from __future__ import annotations

from ...device import INT_LIMIT, DeviceInfo, index_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, Solver, require, require_none, round_up
from ...tensor import DataType
from ..problem import Direction, PoolingProblem
from .common import problem_defines, roles


class PoolingWindowed(Solver[PoolingProblem]):
    """Windowed pooling, forward and backward, in every mode (MIOpen's PoolingForward2d / Backward2d).

    Forward: one work-item per output element reads its window (max saves its argmax when asked).
    Backward: one work-item per input element gathers the outputs whose windows cover it (max: those whose
    saved argmax is this element), so no atomics are needed and the result is deterministic. Applies to
    every pooling problem; for a global average over a large plane the reduction solver reads faster.
    """

    id = "PoolingWindowed"
    algorithm = "direct"
    dtypes = frozenset({DataType.FLOAT32, DataType.FLOAT16})
    grid = {"WG": (64, 128, 256)}
    param_doc = {"WG": "work-group size (1-D)"}

    def applicability(self, problem: PoolingProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(_work_items(problem) < INT_LIMIT, "more than 2^31 work-items")
        require_none(index_reason(problem.x.element_span, problem.y.element_span))

    def invalid_reason(self, problem: PoolingProblem, params: Params, dev: DeviceInfo) -> str | None:
        return super().invalid_reason(problem, params, dev) or work_group_reason(dev, (params["WG"],))

    def default_params(self, problem: PoolingProblem, dev: DeviceInfo) -> Params:
        return {"WG": 128}

    def solution(self, problem: PoolingProblem, params: Params) -> Solution:
        name = "pool_fwd" if problem.direction is Direction.FORWARD else "pool_bwd"
        defines = {**problem_defines(problem), "SAVE_INDICES": int(problem.save_indices)}
        spec = KernelSpec.make("pooling_windowed.cl", name, defines)
        wg = params["WG"]
        launch = KernelLaunch(spec, (round_up(_work_items(problem), wg),), (wg,), roles(problem))
        return Solution(self.id, dict(params), (launch,))


def _work_items(p: PoolingProblem) -> int:
    return p.y.element_count if p.direction is Direction.FORWARD else p.x.element_count
