"""LRNWithinChannelTiled: within-channel LRN, tiles of a plane staged with their halo in local memory."""
from __future__ import annotations

from ...device import INT_LIMIT, DeviceInfo, index_reason, local_memory_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, Solver, ceil_div, require, require_none
from ...tensor import FLOAT_BYTES, DataType
from ..descriptor import LRNMode
from ..problem import LRNProblem
from .common import kernel_args, kernel_defines, kernel_suffix

TILE_W = 32       # a tile's width: one row of it is a coalesced run of 32 pixels
MAX_WINDOW = 16   # window sides beyond this stage more halo than tile (LRNDirect then)


def work_items(problem: LRNProblem, th: int) -> int:
    """One per pixel of every tile of every (n, c) plane, tiles of 32 x th."""
    n, c, h, w = problem.shape.dims
    return n * c * ceil_div(h, th) * ceil_div(w, TILE_W) * TILE_W * th


class LRNWithinChannelTiled(Solver[LRNProblem]):
    """Within-channel LRN forward and backward: each work-group of 32 x TH work-items stages a 32 x TH tile
    of one (n, c) plane and its halo in local memory (x^2 forward; backward the window term
    dy * x * scale^(-beta - 1), one pow per element where LRNDirect takes one per window term), then sums
    each output's window from there in a fixed order. Where it wins: the backward above all (LRN_N^2 pows per
    element in LRNDirect). Within-channel only, windows of up to 16 x 16."""

    id = "LRNWithinChannelTiled"
    algorithm = "tiled"
    dtypes = frozenset({DataType.FLOAT32, DataType.FLOAT16})
    grid = {"TH": (4, 8, 16)}
    param_doc = {"TH": "tile height in rows (the work-group is 32 x TH)"}

    def applicability(self, problem: LRNProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(problem.desc.mode is LRNMode.WITHIN_CHANNEL, "within-channel only")
        require(problem.desc.n <= MAX_WINDOW, f"windows wider than {MAX_WINDOW}")
        require(work_items(problem, max(self.grid["TH"])) < INT_LIMIT, "more than 2^31 work-items")
        require_none(index_reason(*(t.element_span for t in problem.tensors().values())))

    def invalid_reason(self, problem: LRNProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason:
            return reason
        th, halo = params["TH"], problem.desc.n - 1
        return (work_group_reason(dev, (TILE_W * th,))
                or local_memory_reason(dev, (TILE_W + halo) * (th + halo) * FLOAT_BYTES))

    def default_params(self, problem: LRNProblem, dev: DeviceInfo) -> Params:
        """8 rows (256 work-items), or 4 where the plane is low."""
        return {"TH": 8 if problem.shape.h > 4 else 4}

    def solution(self, problem: LRNProblem, params: Params) -> Solution:
        th = params["TH"]
        tiles_h, tiles_w = ceil_div(problem.shape.h, th), ceil_div(problem.shape.w, TILE_W)
        defines = {**kernel_defines(problem), "TW": TILE_W, "TH": th, "TILES_W": tiles_w, "TILES_H": tiles_h}
        spec = KernelSpec.make("lrn_within_tiled.cl", f"lrn_within_tiled_{kernel_suffix(problem)}", defines)
        launch = KernelLaunch(spec, (work_items(problem, th),), (TILE_W * th,), kernel_args(problem))
        return Solution(self.id, dict(params), (launch,))
