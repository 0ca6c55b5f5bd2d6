"""Runners own timing; strategies only see a GuardedRunner.

A runner's ``measure(points)`` yields one Measurement per point, in order. DeviceRunner (device_runner.py)
compiles and times on a device; ReplayRunner serves recorded timings, so strategy logic is testable with no
device. GuardedRunner wraps either: it serves points already recorded in the tuning log without measuring
them again, and stops when the budget, the time limit or the patience is spent.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..db import params_key
from ..errors import check
from ..solver import Params
from ..tensor import as_int, as_real


@dataclass(frozen=True)
class Measurement:
    """One grid point's time in ms (inf when it failed to compile, launch or verify, with the reason)."""

    params: Params
    time_ms: float
    error: str | None = None
    cached: bool = False  # served from the tuning log, not measured in this run
    cut: bool = False     # its first run was cut x slower than the best so far: that one run is its time

    @property
    def ok(self) -> bool:
        return math.isfinite(self.time_ms)


@dataclass(frozen=True)
class TuneOptions:
    """Limits of one solver's tuning run. None means no limit."""

    budget: int | None = None          # most points per solver, recorded ones included
    time_limit_s: float | None = None  # wall-clock seconds per solver
    patience: int | None = None        # stop after this many points in a row that do not beat the best
    seed: int = 0                      # for the strategies that draw at random
    cut: float | None = None           # early timing cut factor (None: the strategy's, see tuner.DEFAULT_CUT)
    time_budget_s: float | None = None  # seconds per problem, shared among its solvers by tune_problem

    def __post_init__(self) -> None:
        for name, least in (("budget", 1), ("patience", 1)):
            value = getattr(self, name)
            check(value is None or as_int(value, name) >= least, name, f"must be >= {least}, got {value}")
        for name in ("time_limit_s", "time_budget_s"):
            limit = getattr(self, name)
            check(limit is None or as_real(limit, name) > 0, name, f"must be > 0 s, got {limit}")
        check(as_int(self.seed, "seed") >= 0, "seed", f"must be >= 0, got {self.seed}")
        check(self.cut is None or as_real(self.cut, "cut") > 1, "cut",
              f"must be > 1 (a point whose first run is this many times the best is not timed further), got {self.cut}")

    @property
    def seconds(self) -> float:
        """The wall-clock seconds one solver may take: the smaller of time_limit_s and time_budget_s."""
        return min(math.inf if self.time_limit_s is None else self.time_limit_s,
                   math.inf if self.time_budget_s is None else self.time_budget_s)


class Runner(Protocol):
    def measure(self, points: Sequence[Params]) -> Iterator[Measurement]:
        """Yield one Measurement per point, in order."""


class ReplayRunner:
    """Serves recorded timings (params key -> ms); an unrecorded point fails. Counts what it served."""

    def __init__(self, timings: Mapping[str, float]):
        self.timings = dict(timings)
        self.calls = 0

    def measure(self, points: Sequence[Params]) -> Iterator[Measurement]:
        for params in points:
            self.calls += 1
            ms = self.timings.get(params_key(params))
            yield Measurement(params, ms) if ms is not None else Measurement(params, math.inf, "no recorded timing")


class GuardedRunner:
    """What a strategy sees. ``run(points)`` returns the measurements of the points it got to, in order:
    points already measured in this run are free, points in ``recorded`` are served without measuring (they
    count against the budget, so an interrupted run resumes where it stopped), the rest go to the inner
    runner one at a time until ``done``."""

    def __init__(self, inner: Runner, options: TuneOptions, recorded: Mapping[str, Measurement] | None = None,
                 on_result: Callable[[Measurement], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, width: int = 8):
        self.inner, self.options, self.clock = inner, options, clock
        self.recorded = dict(recorded or {})
        self.on_result = on_result
        self.results: dict[str, Measurement] = {}
        self.best_ms, self.since_best = math.inf, 0
        self.deadline = clock() + options.seconds
        self.width = width   # how many points a batch should hold to keep the compile workers busy

    @property
    def done(self) -> bool:
        """The budget, time limit or patience is spent (the first point is always measured)."""
        o = self.options
        return ((o.budget is not None and len(self.results) >= o.budget)
                or (bool(self.results) and self.clock() >= self.deadline)
                or (o.patience is not None and self.since_best >= o.patience))

    def run(self, points: Sequence[Params]) -> list[Measurement]:
        fresh: list[Params] = []
        for params in points:
            key = params_key(params)
            if key in self.results or self.done:
                continue
            if key in self.recorded:
                self._accept(key, self.recorded[key])
            elif all(params_key(p) != key for p in fresh):
                fresh.append(params)
        if fresh:
            self._measure(fresh)
        return [self.results[params_key(p)] for p in points if params_key(p) in self.results]

    def _measure(self, fresh: list[Params]) -> None:
        o = self.options
        room = len(fresh) if o.budget is None else max(0, o.budget - len(self.results))
        stream = self.inner.measure(fresh[:room])
        try:
            for measurement in stream:
                self._accept(params_key(measurement.params), measurement)
                if self.done:
                    break
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()

    def _accept(self, key: str, measurement: Measurement) -> None:
        self.results[key] = measurement
        if measurement.time_ms < self.best_ms:
            self.best_ms, self.since_best = measurement.time_ms, 0
        else:
            self.since_best += 1
        if self.on_result is not None:
            self.on_result(measurement)
