"""DeviceRunner: compiles candidates (in parallel, through a Compiler) and times them one at a time."""
from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import pyopencl as cl

from ..errors import MiopyError
from ..find import Timer, default_timer
from ..handle import Handle
from ..plan import plan_of
from ..solver import Params, Problem, Solution, Solver
from .compile import Compiler
from .runner import Measurement
from .workload import Workload


class DeviceRunner:
    """Measures grid points of one solver on one problem: batches are compiled together, then each is
    timed alone on the device. A point that fails to build its solution, compile or launch is a Measurement
    with time inf and the reason."""

    def __init__(self, handle: Handle, problem: Problem, solver: Solver, workload: Workload,
                 compiler: Compiler, timer: Timer | None = None):
        self.handle, self.problem, self.solver = handle, problem, solver
        self.workload, self.compiler, self.timer = workload, compiler, timer or default_timer

    def measure(self, points: Sequence[Params]) -> Iterator[Measurement]:
        size = self.compiler.batch_size
        for start in range(0, len(points), size):
            yield from self._measure_batch(points[start:start + size])

    def _measure_batch(self, points: Sequence[Params]) -> Iterator[Measurement]:
        solutions: dict[int, Solution] = {}
        failures: dict[int, str] = {}
        for i, params in enumerate(points):
            try:
                solutions[i] = self.solver.solution(self.problem, params)
            except MiopyError as exc:
                failures[i] = f"{type(exc).__name__}: {exc}"
        order = sorted(solutions)
        for i, error in zip(order, self.compiler.compile([solutions[i] for i in order])):
            if error is not None:
                failures[i] = error
        for i, params in enumerate(points):
            yield (Measurement(params, math.inf, failures[i]) if i in failures
                   else self._time(params, solutions[i]))

    def _time(self, params: Params, solution: Solution) -> Measurement:
        try:
            plan = plan_of(self.handle, self.problem, solution)
            ms = float(self.timer(self.handle, plan, self.workload.buffers))
        except (MiopyError, cl.Error) as exc:
            return Measurement(params, math.inf, f"{type(exc).__name__}: {exc}")
        return Measurement(params, ms) if math.isfinite(ms) else Measurement(params, math.inf, "timer gave no time")
