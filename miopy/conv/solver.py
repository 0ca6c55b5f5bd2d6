"""The convolution solver base: what a convolution kernel family adds to the shared Solver interface.

A convolution solver states the directions it implements, and may apply a fusion epilogue (bias,
batch-norm inference, a residual add, activation) before it stores the forward output: ``solution(problem, params,
epilogue)`` receives any object with ``defines()`` and ``args`` (miopy.fusion.Epilogue).
"""
from __future__ import annotations

from typing import Any, ClassVar

from ..device import DeviceInfo
from ..solver import Params, Solution, Solver, require
from .problem import ConvProblem, Direction


class ConvSolver(Solver[ConvProblem]):
    """A family of kernels for convolution problems (see miopy.solver.Solver for the interface)."""

    directions: ClassVar[frozenset[Direction]] = frozenset({Direction.FORWARD})
    # Which epilogue ops (miopy.fusion.Epilogue.ops) the hook serves, when supports_epilogue is set.
    epilogue_ops: ClassVar[frozenset[str]] = frozenset({"bias", "batchnorm", "add", "activation"})
    supports_epilogue: ClassVar[bool] = False
    # The device type ("CPU") a solver is written for and applies to only; the heuristic ranks it first there.
    device_class: ClassVar[str | None] = None

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        require(problem.direction in self.directions, f"direction {problem.direction.name} not implemented")
        super().applicability(problem, dev)

    def solution(self, problem: ConvProblem, params: Params, epilogue: Any = None) -> Solution:
        raise NotImplementedError
