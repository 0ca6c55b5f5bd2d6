"""Search strategies, Kernel Tuner style: each is a module with one function
``tune(space, runner, options) -> list[Measurement]``. A strategy never touches the device: it asks its
GuardedRunner for points and stops when ``runner.done``; the runner enforces budget, time and patience."""
from __future__ import annotations

from collections.abc import Callable

from . import exhaustive, fast, local_search, random_sample

STRATEGIES: dict[str, Callable] = {
    "exhaustive": exhaustive.tune,
    "random": random_sample.tune,
    "local": local_search.tune,
    "fast": fast.tune,
}
