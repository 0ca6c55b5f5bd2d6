"""Tuning one solver, or every applicable tunable solver, on one problem.

The default point is measured first, so the result is never slower than the default by the run's own
measurements. Every measurement goes to the tuning log as it is made, so an interrupted run resumes
without measuring a point twice. The fastest point is checked against the float64 reference before it
is written to the user perf DB; one that fails is recorded as failed and the next fastest is tried.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pyopencl as cl

from .. import db
from ..device import allocation_reason
from ..errors import BadParam, MiopyError, NotApplicable
from ..find import FindResult, Timer, find_problem, resolve_enforce, tensor_bytes
from ..handle import Handle
from ..log import warn_once
from ..plan import check_fits, plan_of
from ..solver import Params, Problem, Solver
from .compile_ahead import Compiler
from .device_runner import DeviceRunner
from .priors import priors
from .runner import GuardedRunner, Measurement, TuneOptions
from .space import SearchSpace
from .strategies import STRATEGIES
from .workload import Workload

logger = logging.getLogger(__name__)

DEFAULT_BUDGET = 32
DEFAULT_OPTIONS = TuneOptions(budget=DEFAULT_BUDGET)
FAST_BUDGET = 128            # the fast strategy's point cap when none is given: its patience and seconds stop it
DEFAULT_CUT = {"fast": 1.5}  # early timing cut per strategy when TuneOptions.cut is None (others: no cut)
WITH_PRIORS = ("fast",)      # strategies whose search space carries priors (miopy.tuning.priors)
Progress = Callable[[Measurement], None]


@dataclass(frozen=True)
class TuneResult:
    """What tuning one solver on one problem found."""

    solver_id: str
    problem_key: str
    default_params: Params
    default_ms: float
    best_params: Params | None
    best_ms: float
    measured: int   # points timed in this run
    recorded: int   # points served from the tuning log
    failed: int     # points that failed to compile, launch or verify
    stored: bool    # the winner verified and is in the user perf DB
    cut: int = 0    # points the early timing cut timed once only
    seconds: dict = field(default_factory=dict)   # wall seconds: total, setup, compile_wait, timing, verify
    # (and adopt_threads: seconds the adopter threads spent loading workers' binaries, summed over threads)

    @property
    def speedup(self) -> float:
        finite = math.isfinite(self.default_ms) and math.isfinite(self.best_ms) and self.best_ms > 0
        return self.default_ms / self.best_ms if finite else math.nan


def default_budget(strategy_name: str) -> int:
    """The point budget a strategy runs with when the caller gives none."""
    return FAST_BUDGET if strategy_name == "fast" else DEFAULT_BUDGET


def strategy(name: str) -> Callable:
    """The strategy function registered under name."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise BadParam("strategy", f"unknown strategy {name!r}; known: {sorted(STRATEGIES)}") from None


def tune_solver(handle: Handle, problem: Problem, solver: Solver, *, strategy_name: str = "local",
                options: TuneOptions = DEFAULT_OPTIONS, timer: Timer | None = None,
                compiler: Compiler | None = None, on_result: Progress | None = None) -> TuneResult:
    """Tune solver on problem with a strategy and limits; store the verified winner in the user perf DB. A
    wrapper (a fused convolution) is tuned as what it wraps (Solver.tuned_as: its params are those records)."""
    solver, problem = solver.tuned_as(problem)
    reason = solver.not_applicable_reason(problem, handle.info) or _fit_reason(handle, problem, solver)
    if reason is not None:
        raise NotApplicable(f"{solver.id}: {reason}")
    started = time.perf_counter()
    walk = strategy(strategy_name)
    space = SearchSpace.of(solver, problem, handle.info)
    log, device, key = db.tuning_log(), handle.info.device_id, problem.key()
    if strategy_name in WITH_PRIORS:
        known = priors(space, solver.id, device, key)
        space = dataclasses.replace(space, hints=known.hints, order=known.order)
    recorded = _recorded(log, device, key, solver, space)
    cut = options.cut if options.cut is not None else DEFAULT_CUT.get(strategy_name)

    def record(m: Measurement) -> None:
        if not m.cached:
            log.put(device, key, solver.id, db.TuningPoint(m.params, m.time_ms, m.error))
        if on_result is not None:
            on_result(m)

    workload = Workload(handle, problem, solver.workspace_bytes(problem))
    setup = time.perf_counter() - started
    with contextlib.nullcontext(compiler) if compiler is not None else Compiler(handle) as active:
        adopted = active.adopt_s
        measurer = DeviceRunner(handle, problem, solver, workload, active, timer, cut)
        runner = GuardedRunner(measurer, options, recorded, record, width=max(8, active.batch_size))
        measurer.best = lambda: runner.best_ms
        runner.run([space.default])
        walk(space, runner, options)
        adopted = active.adopt_s - adopted
    verify = time.perf_counter()
    winner = _verified_winner(handle, problem, solver, workload, runner, log)
    if winner is not None:
        db.user_perf_db().put(device, key, solver.id, winner.params, winner.time_ms)
    now = time.perf_counter()
    seconds = {"total": now - started, "setup": setup, **measurer.seconds, "verify": now - verify,
               "adopt_threads": adopted}
    return _summary(solver, problem, space, runner, winner, seconds)


def tune_problem(handle: Handle, problem: Problem, *, solvers: Sequence[Solver] | None = None,
                 strategy_name: str = "local", options: TuneOptions = DEFAULT_OPTIONS, timer: Timer | None = None,
                 jobs: int | None = None, compiler: Compiler | None = None,
                 on_result: Progress | None = None) -> list[TuneResult]:
    """Tune every applicable solver with a grid (of solvers, else the registry) on problem; OutOfResources when
    the device cannot hold the problem's tensors. With options.time_budget_s the solvers share that many
    seconds: the smallest search spaces go first, and each solver gets an equal share of what is left when
    it starts (so time a small space did not use goes to the larger ones); results keep the solvers' order."""
    check_fits(handle, tensor_bytes(problem))
    chosen = tunable(handle, problem, solvers)
    budget = options.time_budget_s
    order = list(range(len(chosen)))
    if budget is not None:
        order.sort(key=lambda i: len(SearchSpace.of(chosen[i], problem, handle.info)))
    deadline = time.monotonic() + (budget or 0.0)
    results: dict[int, TuneResult] = {}
    with contextlib.nullcontext(compiler) if compiler is not None else Compiler(handle, jobs) as active:
        for n, i in enumerate(order):
            share = options
            if budget is not None:
                left = max(deadline - time.monotonic(), 1e-3)
                share = dataclasses.replace(options, time_budget_s=left / (len(order) - n))
            results[i] = tune_solver(handle, problem, chosen[i], strategy_name=strategy_name, options=share,
                                     timer=timer, compiler=active, on_result=on_result)
    return [results[i] for i in range(len(chosen))]


def tunable(handle: Handle, problem: Problem, solvers: Sequence[Solver] | None = None) -> list[Solver]:
    """The solvers (default: the registry) that apply to problem, whose workspace the device can hold beside
    the problem's tensors, and that have something to tune."""
    return [s for s in (problem.registry.solvers() if solvers is None else solvers)
            if s.grid and s.is_applicable(problem, handle.info) and _fit_reason(handle, problem, s) is None]


def _fit_reason(handle: Handle, problem: Problem, solver: Solver) -> str | None:
    """Why the device cannot hold solver's workspace beside problem's tensors, or None."""
    return allocation_reason(handle.info, {**tensor_bytes(problem), "workspace": solver.workspace_bytes(problem)})


def _recorded(log: db.TuningLog, device: str, key: str, solver: Solver, space: SearchSpace) -> dict[str, Measurement]:
    """The tuning log's points of solver on key that are in its search space. This version logs only such
    points, so any other was damaged: those are left out with one warning."""
    stored = log.get(device, key, solver.id)
    recorded = {k: Measurement(p.params, p.time_ms, p.error, cached=True)
                for k, p in stored.items() if p.params in space}
    if len(recorded) < len(stored):
        warn_once(logger, f"tuning log: {len(stored) - len(recorded)} point(s) of {solver.id} on {key} are not in "
                          "its search space; ignoring them")
    return recorded


def _verified_winner(handle: Handle, problem: Problem, solver: Solver, workload: Workload,
                     runner: GuardedRunner, log: db.TuningLog) -> Measurement | None:
    """The fastest measured point whose output matches float64; failures are recorded as such."""
    for m in sorted((m for m in runner.results.values() if m.ok), key=lambda m: m.time_ms):
        try:
            error = workload.error_of(plan_of(handle, problem, solver.solution(problem, m.params)), solver)
        except (MiopyError, cl.Error) as exc:
            error = f"{type(exc).__name__}: {exc}"
        if error is None:
            return m
        failed = Measurement(m.params, math.inf, error)
        runner.results[db.params_key(m.params)] = failed
        log.put(handle.info.device_id, problem.key(), solver.id, db.TuningPoint(m.params, math.inf, error))
    return None


def _summary(solver: Solver, problem: Problem, space: SearchSpace, runner: GuardedRunner,
             winner: Measurement | None, seconds: dict) -> TuneResult:
    results = list(runner.results.values())
    default = runner.results.get(db.params_key(space.default))
    return TuneResult(solver.id, problem.key(), space.default, default.time_ms if default else math.nan,
                      winner.params if winner else None, winner.time_ms if winner else math.inf,
                      measured=sum(not m.cached for m in results), recorded=sum(m.cached for m in results),
                      failed=sum(not m.ok for m in results), stored=winner is not None,
                      cut=sum(m.cut for m in results), seconds=seconds)


def find_after_search(handle: Handle, problem: Problem, **kwargs) -> FindResult:
    """find_problem for any family's problem, under MIOPY_FIND_ENFORCE=search tuning every applicable solver
    first (the fast strategy): find itself sits below tuning, so the families' calls find through this."""
    if kwargs.get("solvers") is None and resolve_enforce() == "search":
        tune_problem(handle, problem, strategy_name="fast", timer=kwargs.get("timer"))
    return find_problem(handle, problem, **kwargs)
