"""BatchNormPerActivation: per-activation training forward and backward, one work-item per position."""
from __future__ import annotations

from ...device import DeviceInfo
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, require, round_up
from ..descriptor import BatchNormMode
from ..problem import BatchNormProblem, BnDirection
from .common import BACKWARD_SCALARS, FORWARD_SCALARS, BatchNormSolver, data_defines, optional_roles, stat_defines

WG = 64


class BatchNormPerActivation(BatchNormSolver):
    """Statistics of each (c, h, w) position over the batch: one work-item per position loops over N twice
    for the mean and variance (two-pass, shifted) and once more for the output (batchnorm_per_activation.cl).
    Reads x three times; coalesced along w. The only per-activation training kernel."""

    id = "BatchNormPerActivation"
    algorithm = "per_position"
    directions = frozenset({BnDirection.FORWARD_TRAINING, BnDirection.BACKWARD})
    modes = frozenset({BatchNormMode.PER_ACTIVATION})

    def applicability(self, problem: BatchNormProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(WG <= dev.max_work_group_size, f"needs work-groups of {WG}")

    def solution(self, problem: BatchNormProblem, params: Params) -> Solution:
        defines = {**data_defines(problem), **stat_defines(problem)}
        positions = problem.x.c * problem.x.h * problem.x.w
        if problem.direction is BnDirection.BACKWARD:
            name, args = "bn_per_activation_bwd", ("x", "dy", "dx", "scale", "dscale", "dbias",
                                                   *optional_roles(problem), *BACKWARD_SCALARS)
        else:
            name, args = "bn_per_activation_fwd", ("x", "y", "scale", "bias", *optional_roles(problem),
                                                   *FORWARD_SCALARS)
        spec = KernelSpec.make("batchnorm_per_activation.cl", name, defines)
        return Solution(self.id, params, (KernelLaunch(spec, (round_up(positions, WG),), (WG,), args),))
