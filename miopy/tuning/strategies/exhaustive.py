"""Exhaustive search: every valid point in grid order, as far as the budget and time allow."""
from __future__ import annotations

from ..runner import GuardedRunner, Measurement, TuneOptions
from ..space import SearchSpace


def tune(space: SearchSpace, runner: GuardedRunner, options: TuneOptions) -> list[Measurement]:
    return runner.run(space.points)
