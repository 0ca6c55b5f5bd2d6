"""DropoutGeneric: any strides, one element per work-item."""
from __future__ import annotations

from ...device import DeviceInfo
from ...pointwise import pointwise_defines
from ...solver import Params, Solution, Solver
from ..problem import DTYPES, DropoutProblem
from .common import launches, require_index_range


class DropoutGeneric(Solver[DropoutProblem]):
    """Decomposes each element's logical index and addresses x and y by their strides; draws the element's
    Philox block itself (the same mask as DropoutPacked). Any layout; pays 4x the generator arithmetic."""

    id = "DropoutGeneric"
    algorithm = "elementwise_strided"
    dtypes = DTYPES

    def applicability(self, problem: DropoutProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require_index_range(problem)

    def solution(self, problem: DropoutProblem, params: Params) -> Solution:
        defines = {"PACKED": 0, **pointwise_defines(problem.x.dims, {"X": problem.x, "Y": problem.y})}
        return Solution(self.id, params, launches(problem, defines, problem.x.element_count))
