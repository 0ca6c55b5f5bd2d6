"""Solver base class and the pure data a solver returns (Solution, KernelLaunch).

A solver is stateless: everything it returns derives from (problem, device info, params). ``solution``
touches no device, so it is unit-testable anywhere. Params are flat dicts of ints / strs / bools whose
keys are the solver's ``grid`` keys.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator, Mapping

import numpy as np

from ..convolution import ConvProblem, Direction
from ..errors import NotApplicable
from ..handle import DeviceInfo
from ..kernel_cache import KernelSpec
from ..tensor import DataType

Params = dict[str, Any]
# A kernel argument: a buffer role name ("x", "w", "y", "workspace", or an epilogue operand) or a scalar.
Arg = str | np.int32 | np.float32 | np.uint32


def require(cond: bool, reason: str) -> None:
    """Raise NotApplicable(reason) unless cond holds; each applicability guard is one line."""
    if not cond:
        raise NotApplicable(reason)


@dataclass(frozen=True)
class KernelLaunch:
    """One NDRange: which kernel, its global and local sizes, and its arguments by role."""

    spec: KernelSpec
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    args: tuple[Arg, ...]


@dataclass(frozen=True)
class Solution:
    """Everything needed to run one solver with one set of params on one problem."""

    solver_id: str
    params: Params = field(hash=False)
    launches: tuple[KernelLaunch, ...]
    workspace_bytes: int = 0


def round_up(value: int, multiple: int) -> int:
    return (value + multiple - 1) // multiple * multiple


class Applicable:
    """Applicability as data: subclasses raise NotApplicable in ``applicability``; these turn it into a
    reason or a bool (shared by convolution solvers and fused solvers)."""

    def applicability(self, problem, dev: DeviceInfo) -> None:
        raise NotImplementedError

    def not_applicable_reason(self, problem, dev: DeviceInfo) -> str | None:
        try:
            self.applicability(problem, dev)
        except NotApplicable as exc:
            return str(exc)
        return None

    def is_applicable(self, problem, dev: DeviceInfo) -> bool:
        return self.not_applicable_reason(problem, dev) is None


class Solver(Applicable):
    """A family of kernels for convolution problems. Subclasses set the class attributes and override
    ``applicability``, ``default_params``, ``solution`` and, when tunable, ``grid`` and ``invalid_reason``.
    """

    id: ClassVar[str]                      # stable forever: the DB key
    algorithm: ClassVar[str]               # "naive", "direct", "gemm", "winograd", ...
    directions: ClassVar[frozenset[Direction]] = frozenset({Direction.FORWARD})
    # Which epilogue ops (miopy.epilogue.Epilogue.ops) the hook serves, when supports_epilogue is set.
    epilogue_ops: ClassVar[frozenset[str]] = frozenset({"bias", "batchnorm", "activation"})
    grid: ClassVar[Mapping[str, tuple]] = {}
    param_doc: ClassVar[Mapping[str, str]] = {}
    deterministic: ClassVar[bool] = True
    supports_epilogue: ClassVar[bool] = False
    # Bound on the hybrid error |a-e|/(1+|e|) vs float64 for solvers whose arithmetic rounds more than a
    # direct sum (Winograd transforms); None: the checker's default for a direct sum.
    tolerance: ClassVar[float | None] = None

    # -- applicability ------------------------------------------------------------------------------
    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        """Raise NotApplicable with a reason when the solver cannot run problem on dev."""
        require(problem.direction in self.directions, f"direction {problem.direction.name} not implemented")
        require(problem.dtype is DataType.FLOAT32, "only FP32 is implemented")

    # -- tuning space ---------------------------------------------------------------------------------
    def invalid_reason(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
        """Why params cannot run problem on dev, or None. Subclasses extend with device limits.

        A value must be a grid value of the same type: 64.0 or True read from a DB is not 64 or 1."""
        if set(params) != set(self.grid):
            return f"params keys {sorted(params)} != grid keys {sorted(self.grid)}"
        for name, value in params.items():
            if not any(type(value) is type(v) and value == v for v in self.grid[name]):
                return f"{name}={value!r} not in grid {self.grid[name]}"
        return None

    def is_valid(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> bool:
        return self.invalid_reason(problem, params, dev) is None

    def search_space(self, problem: ConvProblem, dev: DeviceInfo) -> Iterator[Params]:
        """Every valid grid point, in grid order."""
        names = list(self.grid)
        for values in itertools.product(*(self.grid[n] for n in names)):
            params = dict(zip(names, values))
            if self.is_valid(problem, params, dev):
                yield params

    def sample_space(self, problem: ConvProblem, dev: DeviceInfo, count: int, seed: int = 0) -> list[Params]:
        """Up to count valid grid points drawn at random (without enumerating huge grids twice)."""
        space = list(self.search_space(problem, dev))
        random.Random(seed).shuffle(space)
        return space[:count]

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        """Constant-time heuristic; always valid for an applicable problem."""
        return {}

    def workspace_bytes(self, problem: ConvProblem) -> int:
        """Workspace the solver needs; never depends on params."""
        return 0

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.id
