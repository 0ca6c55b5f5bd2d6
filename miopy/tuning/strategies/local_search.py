"""Local search: steepest-descent hill climbing from the default over neighbouring grid values.

Each step measures every unmeasured neighbour of the current point as one batch (so they compile in
parallel) and moves to the best one if it is faster. At a local optimum it restarts from a random
unmeasured point, until the budget, time or patience is spent or every point is measured. Seeded, so an
interrupted run replays the same path from the tuning log.
"""
from __future__ import annotations

import random

from ...db import params_key
from ..runner import GuardedRunner, Measurement, TuneOptions
from ..space import SearchSpace


def tune(space: SearchSpace, runner: GuardedRunner, options: TuneOptions) -> list[Measurement]:
    rng = random.Random(options.seed)
    start = space.default if space.default in space else (space.points[0] if space.points else None)
    current = _first(runner.run([start])) if start is not None else None
    while current is not None and not runner.done:
        best = min(runner.run(space.neighbours(current.params)), key=lambda m: m.time_ms, default=None)
        if best is not None and best.time_ms < current.time_ms:
            current = best
            continue
        unmeasured = [p for p in space.points if params_key(p) not in runner.results]
        current = _first(runner.run([rng.choice(unmeasured)])) if unmeasured else None
    return list(runner.results.values())


def _first(measurements: list[Measurement]) -> Measurement | None:
    return measurements[0] if measurements else None
