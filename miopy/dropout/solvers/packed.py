"""DropoutPacked: packed data, four elements per work-item from one Philox draw, vector loads."""
from __future__ import annotations

from ...device import DeviceInfo
from ...solver import Params, Solution, Solver, require
from ..problem import DTYPES, DropoutProblem
from .common import launches, require_index_range


class DropoutPacked(Solver[DropoutProblem]):
    """One Philox call gives the four words of four consecutive elements: a quarter of the generator's
    arithmetic of the strided kernel, and 4-wide loads and stores (dropout.cl, PACKED=1). Packed data only."""

    id = "DropoutPacked"
    algorithm = "elementwise_flat"
    dtypes = DTYPES

    def applicability(self, problem: DropoutProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(problem.packed, "x or y is not packed (DropoutGeneric handles strides)")
        require_index_range(problem)

    def solution(self, problem: DropoutProblem, params: Params) -> Solution:
        blocks = (problem.x.element_count + 3) // 4
        return Solution(self.id, params, launches(problem, {"PACKED": 1}, blocks))
