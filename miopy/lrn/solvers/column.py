"""LRNCrossChannelColumn: one work-item per (n, h, w) column walking the channels."""
from __future__ import annotations

from ...device import INT_LIMIT, DeviceInfo, index_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, Solver, require, require_none, round_up
from ...tensor import DataType
from ..descriptor import LRNMode
from ..problem import LRNProblem
from .common import kernel_args, kernel_defines, kernel_suffix

MAX_WINDOW = 16   # three register arrays of the window's size (backward)


class LRNCrossChannelColumn(Solver[LRNProblem]):
    """Cross-channel LRN forward and backward with one work-item per (n, h, w) column: it walks the
    channels keeping the window in registers, so each element is read once and the backward computes one
    pow per element instead of one per window term.

    Applies to cross-channel windows of at most 16 channels. It has C times fewer work-items than
    LRNDirect, so it needs many pixels (large N x H x W) to fill a GPU.
    """

    id = "LRNCrossChannelColumn"
    algorithm = "direct"
    dtypes = frozenset({DataType.FLOAT32, DataType.FLOAT16})
    grid = {"WG": (64, 128, 256)}
    param_doc = {"WG": "work-group size (1-D)"}

    def applicability(self, problem: LRNProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(problem.desc.mode is LRNMode.CROSS_CHANNEL, "cross-channel only")
        require(problem.desc.n <= MAX_WINDOW, f"windows of more than {MAX_WINDOW} channels")
        require(problem.shape.element_count < INT_LIMIT, "more than 2^31 elements")
        require_none(index_reason(*(t.element_span for t in problem.tensors().values())))

    def invalid_reason(self, problem: LRNProblem, params: Params, dev: DeviceInfo) -> str | None:
        return super().invalid_reason(problem, params, dev) or work_group_reason(dev, (params["WG"],))

    def default_params(self, problem: LRNProblem, dev: DeviceInfo) -> Params:
        return {"WG": 128}

    def solution(self, problem: LRNProblem, params: Params) -> Solution:
        n, _, h, w = problem.shape.dims
        wg = params["WG"]
        spec = KernelSpec.make("lrn_column.cl", f"lrn_column_{kernel_suffix(problem)}", kernel_defines(problem))
        launch = KernelLaunch(spec, (round_up(n * h * w, wg),), (wg,), kernel_args(problem))
        return Solution(self.id, dict(params), (launch,))
