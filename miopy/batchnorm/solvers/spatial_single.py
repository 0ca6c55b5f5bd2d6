"""BatchNormSpatialSingle: spatial training forward / backward, one work-group per channel, one launch."""
from __future__ import annotations

from ...device import DeviceInfo, local_memory_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution
from ...tensor import FLOAT_BYTES
from ..descriptor import BatchNormMode
from ..problem import BatchNormProblem, BnDirection
from .common import BACKWARD_SCALARS, FORWARD_SCALARS, BatchNormSolver, data_defines, optional_roles, stat_defines


class BatchNormSpatialSingle(BatchNormSolver):
    """One work-group per channel computes the channel's statistics (two-pass over data shifted by the
    channel's first value: no cancellation at a large mean) and writes the output in the same launch
    (batchnorm_spatial.cl, SINGLE). Wins when N*H*W is small and there are channels enough to fill the
    device; on few channels with a large N*H*W most of the device idles (BatchNormSpatialSplit then)."""

    id = "BatchNormSpatialSingle"
    algorithm = "reduce_single"
    directions = frozenset({BnDirection.FORWARD_TRAINING, BnDirection.BACKWARD})
    modes = frozenset({BatchNormMode.SPATIAL})
    grid = {"WG": (64, 128, 256)}
    param_doc = {"WG": "work-items per channel's work-group"}

    def invalid_reason(self, problem: BatchNormProblem, params: Params, dev: DeviceInfo) -> str | None:
        return (super().invalid_reason(problem, params, dev) or work_group_reason(dev, (params["WG"],))
                or local_memory_reason(dev, 2 * params["WG"] * FLOAT_BYTES))

    def default_params(self, problem: BatchNormProblem, dev: DeviceInfo) -> Params:
        wg = 256 if problem.count >= 4096 else 64
        while wg > 64 and not self.is_valid(problem, {"WG": wg}, dev):
            wg //= 2
        return {"WG": wg}

    def solution(self, problem: BatchNormProblem, params: Params) -> Solution:
        wg = params["WG"]
        defines = {**data_defines(problem), **stat_defines(problem), "SINGLE": 1, "WG": wg}
        if problem.direction is BnDirection.BACKWARD:
            name, args = "bn_spatial_bwd_single", ("x", "dy", "dx", "scale", "dscale", "dbias",
                                                   *optional_roles(problem), *BACKWARD_SCALARS)
        else:
            name, args = "bn_spatial_fwd_single", ("x", "y", "scale", "bias", *optional_roles(problem),
                                                   *FORWARD_SCALARS)
        spec = KernelSpec.make("batchnorm_spatial.cl", name, defines)
        return Solution(self.id, params, (KernelLaunch(spec, (problem.x.c * wg,), (wg,), args),))

