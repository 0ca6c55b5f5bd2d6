"""Random sample: valid points drawn uniformly without replacement (seeded, so a rerun resumes), as many
as the budget allows."""
from __future__ import annotations

import random

from ..runner import GuardedRunner, Measurement, TuneOptions
from ..space import SearchSpace


def tune(space: SearchSpace, runner: GuardedRunner, options: TuneOptions) -> list[Measurement]:
    points = list(space.points)
    random.Random(options.seed).shuffle(points)
    return runner.run(points)
