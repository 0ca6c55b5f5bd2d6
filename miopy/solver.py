"""The solver interface every primitive family shares, the pure data a solver returns, and registries.

A solver is stateless: everything it returns derives from (problem, device info, params). ``solution``
touches no device, so it is unit-testable anywhere. Params are flat dicts of ints / strs / bools whose
keys are the solver's ``grid`` keys. Nothing here knows a family: a family (convolution, pooling, ...)
supplies its Problem type, its Solver subclasses and one Registry, and find, the DBs, tuning and plans
work on it unchanged.
"""
from __future__ import annotations

import inspect
import itertools
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import numpy as np

from . import config
from .accuracy import BASE_REDUCTION, FP32_BOUND, problem_tolerance, tolerance  # noqa: F401 (BASE_REDUCTION: re-exported)
from .device import DeviceInfo
from .errors import BadParam, NotApplicable
from .kernel_cache import KernelSpec
from .tensor import DataType, TensorDesc

Params = dict[str, Any]
# A kernel argument: a buffer role name ("x", "w", "y", "workspace", or an epilogue operand) or a scalar.
Arg = str | np.int32 | np.float32 | np.uint32 | np.int64 | np.uint64


class Problem(Protocol):
    """What a family's problem offers the shared machinery."""

    registry: ClassVar[Registry]

    @property
    def dtype(self) -> DataType: ...

    def key(self) -> str:
        """Readable DB key, unique within the family and distinct from other families' keys."""

    def tensors(self) -> Mapping[str, TensorDesc]:
        """Every buffer role a solution reads or writes, with its descriptor (workspace excluded)."""

    def outputs(self) -> tuple[str, ...]:
        """The roles a solution writes."""

    def reduction_length(self) -> int:
        """Terms summed into each output (1 for element-wise ops): scales the verification tolerance."""

    # Optional: ``updated_roles() -> tuple[str, ...]``, the outputs its solutions read before they write them
    # (running statistics, an RNG state): checks never poison those.
    # Optional: ``positive_roles() -> tuple[str, ...]``, inputs random data must keep positive (variances).
    # Optional: ``scalars() -> Mapping[str, scalar]``, the per-call kernel arguments its solutions take by role
    # (dropout's rate, activation's alpha), with the values find, tuning and the tests bind (the values the
    # family's reference hook answers for); see run_scalars.


P = TypeVar("P")


def require(cond: bool, reason: str) -> None:
    """Raise NotApplicable(reason) unless cond holds; each applicability guard is one line."""
    if not cond:
        raise NotApplicable(reason)


def require_none(reason: str | None) -> None:
    """Raise NotApplicable(reason) when a device rule (miopy.device) gives one."""
    if reason is not None:
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


def run_scalars(problem: Problem) -> dict[str, Any]:
    """The per-call scalar arguments problem's solutions take, by role, with the values to run them with (the
    problem's optional ``scalars()``; none for most families)."""
    scalars = getattr(problem, "scalars", None)
    return dict(scalars()) if scalars is not None else {}


def round_up(value: int, multiple: int) -> int:
    return (value + multiple - 1) // multiple * multiple


def ceil_div(a: int, b: int) -> int:
    """ceil(a / b) for b > 0: the tiles of length b that cover a."""
    return -(-a // b)


class Applicable:
    """Applicability as data: subclasses raise NotApplicable in ``applicability``; these turn it into a
    reason or a bool (shared by every solver, fused ones included)."""

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


class Solver(Applicable, Generic[P]):
    """A family of kernels for one primitive's problems. Subclasses set the class attributes and override
    ``applicability``, ``default_params``, ``solution`` and, when tunable, ``grid`` and ``invalid_reason``.
    """

    id: ClassVar[str]                      # stable forever: the DB key
    algorithm: ClassVar[str]               # "naive", "direct", "gemm", "winograd", ...
    dtypes: ClassVar[frozenset[DataType]] = frozenset({DataType.FLOAT32})
    grid: ClassVar[Mapping[str, tuple]] = {}
    param_doc: ClassVar[Mapping[str, str]] = {}
    deterministic: ClassVar[bool] = True
    # Bound on the hybrid error |a-e|/(1+|e|) vs float64 for solvers whose arithmetic rounds more than a
    # direct sum (Winograd transforms); None: the checker's default for a direct sum.
    tolerance: ClassVar[float | None] = None
    # The directions of its family the solver implements; None: it claims none in particular (it is tested on
    # every direction it applies to).
    directions: ClassVar[frozenset[Any] | None] = None

    def runs_on(self, dev: DeviceInfo) -> bool:
        """Whether dev can run this solver's kernels at all (a CPU-only or a tensor-core solver elsewhere cannot);
        registry-wide tests skip a solver on a device it does not run on."""
        return True

    # -- applicability ------------------------------------------------------------------------------
    def applicability(self, problem: P, dev: DeviceInfo) -> None:
        """Raise NotApplicable with a reason when the solver cannot run problem on dev."""
        dtype = problem.dtype  # type: ignore[attr-defined]
        require(dtype in self.dtypes, f"{dtype.value} is not implemented")

    # -- tuning space ---------------------------------------------------------------------------------
    def invalid_reason(self, problem: P, params: Params, dev: DeviceInfo) -> str | None:
        """Why params cannot run problem on dev, or None. Subclasses extend with device limits.

        A value must be a grid value of the same type: 64.0 or True read from a DB is not 64 or 1."""
        if set(params) != set(self.grid):
            return f"params keys {sorted(params)} != grid keys {sorted(self.grid)}"
        for name, value in params.items():
            if not any(type(value) is type(v) and value == v for v in self.grid[name]):
                return f"{name}={value!r} not in grid {self.grid[name]}"
        return None

    def is_valid(self, problem: P, params: Params, dev: DeviceInfo) -> bool:
        return self.invalid_reason(problem, params, dev) is None

    def search_space(self, problem: P, dev: DeviceInfo) -> Iterator[Params]:
        """Every valid grid point, in grid order."""
        names = list(self.grid)
        for values in itertools.product(*(self.grid[n] for n in names)):
            params = dict(zip(names, values))
            if self.is_valid(problem, params, dev):
                yield params

    def sample_space(self, problem: P, dev: DeviceInfo, count: int, seed: int = 0) -> list[Params]:
        """Up to count valid grid points drawn at random (without enumerating huge grids twice)."""
        space = list(self.search_space(problem, dev))
        random.Random(seed).shuffle(space)
        return space[:count]

    def default_params(self, problem: P, dev: DeviceInfo) -> Params:
        """Constant-time heuristic; always valid for an applicable problem."""
        return {}

    def workspace_bytes(self, problem: P) -> int:
        """Workspace the solver needs; never depends on params."""
        return 0

    def tuned_as(self, problem: P) -> tuple[Solver, Any]:
        """The solver and problem whose perf-DB records give this solver's params on problem: itself, or for a
        wrapper (a fused convolution) the solver and problem it wraps."""
        return self, problem

    def solution(self, problem: P, params: Params) -> Solution:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.id


Reference = Callable[[Any, Mapping[str, np.ndarray]], dict[str, np.ndarray]]
# (problem, candidates) or (problem, candidates, device info or None) -> candidates in the order to try.
Ranker = Callable[..., list[Solver]]
# (problem, host arrays by role, random generator) -> None: random inputs made valid in place.
Prepare = Callable[[Any, dict[str, np.ndarray], np.random.Generator], None]

_REGISTRIES: list[Registry] = []

# Boda's hybrid |a-e|/(1+|e|) bound for an fp32 result, unless the solver declares its own (Winograd).
DEFAULT_TOLERANCE = FP32_BOUND


class Registry:
    """A family's ordered solvers. Order is the tie-break and the default ranking: most specialised first,
    the naive fallback last. Ids are stable strings, unique across every family; a retired id is never
    reused. ``reference`` gives the float64 outputs a solution is checked against (find's and tuning's checks,
    the conformance test); ``rank`` orders candidates when nothing was measured (immediate mode);
    ``prepare(problem, host, rng)``, when given, makes random host inputs valid in place (indices an argmax can
    give, a mask of 0s and 1s)."""

    def __init__(self, family: str, problem_type: type, solvers: Sequence[Solver], reference: Reference,
                 rank: Ranker | None = None, prepare: Prepare | None = None):
        self.family, self.ALL = family, tuple(solvers)
        self._by_id = {s.id: s for s in self.ALL}
        assert len(self._by_id) == len(self.ALL), f"duplicate solver id in {family}"
        for other in _REGISTRIES:
            clash = set(self._by_id) & set(other._by_id)
            assert not clash or other.family == family, f"solver ids {clash} in {family} and {other.family}"
        _REGISTRIES[:] = [r for r in _REGISTRIES if r.family != family] + [self]
        self.reference = reference
        self.prepare = prepare
        self._rank = rank
        self._rank_takes_dev = rank is not None and len(inspect.signature(rank).parameters) >= 3
        problem_type.registry = self  # type: ignore[attr-defined]

    def solvers(self) -> tuple[Solver, ...]:
        """The registry after MIOPY_FIND_ONLY_SOLVER and MIOPY_DISABLE_SOLVERS (ids of any family)."""
        only, disabled = config.find_only_solver(), config.disabled_solvers()
        known = {sid for r in _REGISTRIES for sid in r._by_id}
        for name, ids in (("MIOPY_FIND_ONLY_SOLVER", {only} if only else set()),
                          ("MIOPY_DISABLE_SOLVERS", disabled)):
            unknown = ids - known
            if unknown:
                raise BadParam(name, f"unknown solver id(s) {sorted(unknown)}; known: {sorted(known)}")
        if only is not None and only not in self._by_id:
            only = None  # names another family's solver: this family is not restricted
        return tuple(s for s in self.ALL if (only is None or s.id == only) and s.id not in disabled)

    def get(self, solver_id: str) -> Solver:
        """The solver with this id (whether or not the environment filters it out)."""
        try:
            return self._by_id[solver_id]
        except KeyError:
            raise BadParam("solver", f"unknown {self.family} solver id {solver_id!r}; "
                                     f"known: {sorted(self._by_id)}") from None

    def rank(self, problem, candidates: Sequence[Solver], dev: DeviceInfo | None = None) -> list[Solver]:
        """candidates in the order immediate mode tries them on dev (registry order unless the family ranks;
        a family's ranker may use dev to pick a model trained for that device)."""
        if self._rank is None:
            return list(candidates)
        return self._rank(problem, candidates, dev) if self._rank_takes_dev else self._rank(problem, candidates)

    def tolerance(self, solver: Solver, problem) -> float:
        """The max_error solver's result may have against float64 (miopy.accuracy.tolerance): the stored
        output's rounding plus the arithmetic's bound from the math mode, the solver's own bound and the
        reduction length of problem. See docs/guide/fp16.md."""
        return problem_tolerance(problem, solver.tolerance)


def registries() -> tuple[Registry, ...]:
    """Every registered family's registry (those whose package was imported)."""
    return tuple(_REGISTRIES)
