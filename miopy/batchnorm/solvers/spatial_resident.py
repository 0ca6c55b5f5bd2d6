"""BatchNormSpatialResident: spatial training forward / backward, a channel held in registers."""
from __future__ import annotations

from ...device import DeviceInfo, local_memory_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, ceil_div, require
from ...tensor import FLOAT_BYTES
from ..descriptor import BatchNormMode
from ..problem import BatchNormProblem, BnDirection
from .common import BACKWARD_SCALARS, FORWARD_SCALARS, BatchNormSolver, data_defines, optional_roles, stat_defines

WG_GRID = (128, 256, 512, 1024)
# Elements a work-item may hold in registers: x forward; x and dy backward (twice the registers each).
MAX_ITEMS = {BnDirection.FORWARD_TRAINING: 32, BnDirection.BACKWARD: 16}
DEFAULT_ITEMS = 16   # the default takes the smallest work-group that holds a channel in this many per work-item


def items(problem: BatchNormProblem, wg: int) -> int:
    """Elements of a channel each of wg work-items holds."""
    return ceil_div(problem.count, wg)


class BatchNormSpatialResident(BatchNormSolver):
    """One work-group per channel whose work-items hold the whole channel in registers (ITEMS each), so x
    (and dy) are read once and the output written once: an exact two-pass over the held values (shifted by
    the channel's first value), then the output, in one launch (batchnorm_resident.cl). Where it wins:
    channels of up to 32K values forward (16K backward), where BatchNormSpatialSingle reads a channel three
    times. Does not apply to longer channels (BatchNormSpatialSplit) or where a work-group cannot hold one."""

    id = "BatchNormSpatialResident"
    algorithm = "reduce_resident"
    directions = frozenset({BnDirection.FORWARD_TRAINING, BnDirection.BACKWARD})
    modes = frozenset({BatchNormMode.SPATIAL})
    grid = {"WG": WG_GRID}
    param_doc = {"WG": "work-items per channel's work-group (each holds ceil(N*H*W / WG) values)"}

    def applicability(self, problem: BatchNormProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        largest = max((wg for wg in WG_GRID if wg <= dev.max_work_group_size), default=0)
        require(largest > 0 and items(problem, largest) <= MAX_ITEMS[problem.direction],
                f"a channel of {problem.count} values does not fit a work-group's registers")

    def invalid_reason(self, problem: BatchNormProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason:
            return reason
        wg, limit = params["WG"], MAX_ITEMS[problem.direction]
        if items(problem, wg) > limit:
            return f"{items(problem, wg)} values per work-item > {limit}"
        return work_group_reason(dev, (wg,)) or local_memory_reason(dev, 2 * wg * FLOAT_BYTES)

    def default_params(self, problem: BatchNormProblem, dev: DeviceInfo) -> Params:
        """The smallest work-group holding the channel in DEFAULT_ITEMS per work-item, else the smallest valid."""
        valid = [wg for wg in WG_GRID if self.is_valid(problem, {"WG": wg}, dev)]
        wg = next((w for w in valid if items(problem, w) <= DEFAULT_ITEMS), valid[0] if valid else WG_GRID[-1])
        return {"WG": wg}

    def solution(self, problem: BatchNormProblem, params: Params) -> Solution:
        wg = params["WG"]
        defines = {**data_defines(problem), **stat_defines(problem), "WG": wg, "ITEMS": items(problem, wg)}
        if problem.direction is BnDirection.BACKWARD:
            name, args = "bn_resident_bwd", ("x", "dy", "dx", "scale", "dscale", "dbias", *optional_roles(problem),
                                             *BACKWARD_SCALARS)
        else:
            name, args = "bn_resident_fwd", ("x", "y", "scale", "bias", *optional_roles(problem), *FORWARD_SCALARS)
        spec = KernelSpec.make("batchnorm_resident.cl", name, defines)
        return Solution(self.id, params, (KernelLaunch(spec, (problem.x.c * wg,), (wg,), args),))
