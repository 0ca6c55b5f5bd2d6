"""DeviceRunner: compiles candidates ahead (in parallel, through a Compiler) and times them one at a time."""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence

import pyopencl as cl

from ..errors import MiopyError
from ..find import Timer, default_timer
from ..handle import Handle
from ..plan import Plan, plan_of
from ..solver import Params, Problem, Solution, Solver
from .compile_ahead import Build, Compiler
from .runner import Measurement
from .workload import Workload


def first_run(handle: Handle, plan: Plan, buffers) -> float:
    """One profiled run after one warm-up: what the early timing cut compares with the best so far."""
    return handle.time_ms(lambda: plan.enqueue(buffers), warmup=1, iters=1)


class DeviceRunner:
    """Measures grid points of one solver on one problem. The points' builds are started ahead, at most
    ``compiler.batch_size`` beyond the point being timed, so the workers compile the next points while this
    process times the current one alone on the device. A point that fails to build its solution, compile or
    launch is a Measurement with time inf and the reason.

    Early timing cut: with ``cut`` set, a point whose first run (first_run, or the injected timer's
    ``first_run`` method) is more than cut x ``best()`` is not timed further; that run is its time
    (Measurement.cut). The others, the survivors, are timed by the timer (median of 5; the default timer's
    2 warm-ups are left out after a first run).
    An injected timer without a first_run method is never cut."""

    def __init__(self, handle: Handle, problem: Problem, solver: Solver, workload: Workload,
                 compiler: Compiler, timer: Timer | None = None, cut: float | None = None,
                 best: Callable[[], float] = lambda: math.inf):
        self.handle, self.problem, self.solver = handle, problem, solver
        self.workload, self.compiler, self.timer = workload, compiler, timer or default_timer
        self.quick: Timer | None = first_run if timer is None else getattr(timer, "first_run", None)
        self.cut, self.best = cut, best
        self.seconds = {"compile_wait": 0.0, "timing": 0.0}   # where this runner's time went

    def measure(self, points: Sequence[Params]) -> Iterator[Measurement]:
        solutions: dict[int, Solution] = {}
        failures: dict[int, str] = {}
        for i, params in enumerate(points):
            try:
                solutions[i] = self.solver.solution(self.problem, params)
            except MiopyError as exc:
                failures[i] = f"{type(exc).__name__}: {exc}"
        order = sorted(solutions)
        ahead = max(1, self.compiler.batch_size)
        builds: dict[int, Build] = {}
        started = 0
        try:
            for i, params in enumerate(points):
                while started < len(order) and len(builds) < ahead:   # builds: started, not yet waited for
                    j = order[started]
                    builds[j] = self.compiler.start([solutions[j]])[0]
                    started += 1
                if i in failures:
                    yield Measurement(params, math.inf, failures[i])
                    continue
                clock = time.perf_counter()
                error = builds.pop(i).wait()
                self.seconds["compile_wait"] += time.perf_counter() - clock
                if error is not None:
                    yield Measurement(params, math.inf, error)
                    continue
                clock = time.perf_counter()
                measurement = self._time(params, solutions[i])
                self.seconds["timing"] += time.perf_counter() - clock
                yield measurement
        finally:
            for build in builds.values():
                build.cancel()

    def _time(self, params: Params, solution: Solution) -> Measurement:
        try:
            plan = plan_of(self.handle, self.problem, solution)
            best, buffers = self.best(), self.workload.buffers
            warm = False
            if self.cut is not None and self.quick is not None and math.isfinite(best):
                first = float(self.quick(self.handle, plan, buffers))
                if first > self.cut * best:
                    return Measurement(params, first, cut=True)
                warm = self.timer is default_timer
            if warm:   # the first run warmed it up: the default timer's 5 runs without its 2 warm-ups
                ms = float(self.handle.time_ms(lambda: plan.enqueue(buffers), warmup=0))
            else:
                ms = float(self.timer(self.handle, plan, buffers))
        except (MiopyError, cl.Error) as exc:
            return Measurement(params, math.inf, f"{type(exc).__name__}: {exc}")
        return Measurement(params, ms) if math.isfinite(ms) else Measurement(params, math.inf, "timer gave no time")
