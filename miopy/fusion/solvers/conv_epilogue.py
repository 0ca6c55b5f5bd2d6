"""ConvEpilogueFused: a convolution solver's own kernel storing epilogue(conv(x, w))."""
from __future__ import annotations

from typing import Any

from ...conv import REGISTRY as CONV_REGISTRY
from ...conv.problem import Direction
from ...conv.solvers.common import ConvSolver
from ...device import DeviceInfo, index_reason
from ...solver import Params, Solution, Solver, require, require_none
from ..problem import FusedProblem
from .common import FUSED_DTYPES


class ConvEpilogueFused(Solver[FusedProblem]):
    """A convolution solver's own kernel, storing epilogue(conv(x, w)) instead of conv(x, w): one instance per
    convolution solver with the epilogue hook (``supports_epilogue``), id ``<its id>Fused``, its grid, params
    and perf-DB records those of the convolution it wraps.

    Costs nothing over the plain convolution but the epilogue's reads (one bias or four batch-norm values
    per output), and saves the unfused path's extra passes over y. Applies wherever the wrapped solver
    applies in the forward direction (and is enabled: MIOPY_FIND_ONLY_SOLVER, MIOPY_DISABLE_SOLVERS) and
    its hook serves every op of the epilogue.
    """

    algorithm = "fused"

    def __init__(self, conv: ConvSolver):
        self.conv = conv
        self.id = f"{conv.id}Fused"   # type: ignore[misc]  # per instance: one wrapper per convolution solver
        self.algorithm = conv.algorithm   # type: ignore[misc]
        self.grid, self.param_doc = conv.grid, conv.param_doc   # type: ignore[misc]
        self.dtypes = conv.dtypes & FUSED_DTYPES   # type: ignore[misc]
        self.tolerance, self.deterministic = conv.tolerance, conv.deterministic   # type: ignore[misc]

    def runs_on(self, dev: DeviceInfo) -> bool:
        return self.conv.runs_on(dev)

    def applicability(self, problem: FusedProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        conv = problem.conv
        require(conv is not None, "needs a convolution as the plan's first op")
        assert conv is not None
        require(conv.direction is Direction.FORWARD, "fuses forward convolutions only")
        require(self.conv.supports_epilogue, f"{self.conv.id} has no epilogue hook")
        require(self.conv in CONV_REGISTRY.solvers(), f"{self.conv.id} is disabled (MIOPY_FIND_ONLY_SOLVER, "
                                                      "MIOPY_DISABLE_SOLVERS)")
        missing = sorted(problem.epilogue.ops - self.conv.epilogue_ops)
        require(not missing, f"{self.conv.id}'s epilogue does not fuse {', '.join(missing)}")
        require_none(index_reason(conv.y.element_span))   # the epilogue's operand offsets are 32-bit
        self.conv.applicability(conv, dev)

    def invalid_reason(self, problem: FusedProblem, params: Params, dev: DeviceInfo) -> str | None:
        assert problem.conv is not None
        return self.conv.invalid_reason(problem.conv, params, dev)

    def search_space(self, problem: FusedProblem, dev: DeviceInfo):
        assert problem.conv is not None
        return self.conv.search_space(problem.conv, dev)

    def default_params(self, problem: FusedProblem, dev: DeviceInfo) -> Params:
        assert problem.conv is not None
        return self.conv.default_params(problem.conv, dev)

    def workspace_bytes(self, problem: FusedProblem) -> int:
        assert problem.conv is not None
        return self.conv.workspace_bytes(problem.conv)

    def tuned_as(self, problem: FusedProblem) -> tuple[Solver, Any]:
        """The convolution's records: tuning the convolution tunes its fused form."""
        return self.conv, problem.conv

    def solution(self, problem: FusedProblem, params: Params) -> Solution:
        assert problem.conv is not None
        epilogue = problem.epilogue if problem.epilogue.ops else None
        return self.conv.solution(problem.conv, params, epilogue)


def conv_fused_solvers() -> tuple[ConvEpilogueFused, ...]:
    """A fused wrapper of every convolution solver with the epilogue hook, in the convolution registry's order."""
    return tuple(ConvEpilogueFused(s) for s in CONV_REGISTRY.ALL if isinstance(s, ConvSolver) and s.supports_epilogue)
