"""ActivationPointwise: one work-item per element, any strides."""
from __future__ import annotations

from ...device import DeviceInfo, index_reason
from ...pointwise import POINTWISE_DTYPES, pointwise_launch
from ...solver import Params, Solution, Solver, require_none
from ..problem import ROLES, SCALAR_ROLES, ActivationProblem, Direction

PREFIX = {"x": "X", "y": "Y", "dy": "DY", "dx": "DX"}


class ActivationPointwise(Solver[ActivationProblem]):
    """y = f(x), or dx = dy * f'(x), with one work-item per element (kernels/activation.cl over the formulas of
    kernels/activation.h, which fusion's epilogue shares). Each tensor's strides are compiled in, so any layout
    runs without a copy; alpha, beta and gamma are arguments, so new values never recompile.

    Memory-bound: reads each input once and writes the output once. Applies to every problem below 2^31
    elements per tensor (32-bit offsets)."""

    id = "ActivationPointwise"
    algorithm = "pointwise"
    dtypes = POINTWISE_DTYPES

    def applicability(self, problem: ActivationProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require_none(index_reason(*(t.element_span for t in problem.tensors().values())))

    def solution(self, problem: ActivationProblem, params: Params) -> Solution:
        forward = problem.direction is Direction.FORWARD
        tensors = {PREFIX[role]: desc for role, desc in problem.tensors().items()}
        if not forward:   # the kernel's first tensor gives the dims and storage type: x, as the forward's
            tensors = {"X": tensors.pop("X"), **tensors}
        launch = pointwise_launch("activation.cl", "activation_fwd" if forward else "activation_bwd", tensors,
                                  {"ACTIV_MODE": int(problem.mode)}, (*ROLES[problem.direction], *SCALAR_ROLES))
        return Solution(self.id, dict(params), (launch,))
