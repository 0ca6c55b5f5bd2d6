"""Fast: a few rounds of batched, multi-start local search, started from the most promising points.

1. A grid of at most ``2 x width`` points (``width``: the runner's batch, enough points to keep every
   compile worker busy) is measured whole, most promising first.
2. Otherwise the first round holds the default, the hints (other problems' tuned params valid here), the
   top ``width`` of the cost-estimate order (miopy.tuning.priors), the default's neighbours, then seeded
   random points: ``1.5 x width`` in all, in that order of precedence (a short first round, so the climb
   starts soon when seconds are few).
3. Each later round measures, as one batch of up to ``width`` points (so they compile in parallel), the
   unmeasured neighbours (one grid step in one param) of the best TOP points so far, best first; when those
   are all measured, the next unmeasured points of the order (else random ones).
4. It stops after ROUNDS_PATIENCE rounds in a row that did not improve the best by IMPROVES, when the
   space is spent, or when the runner is done (budget, time limit or budget of seconds, patience).

The runner's early timing cut (tuner.DEFAULT_CUT: 1.5) makes the hopeless points of each round cost one
run. Seeded and driven by measured times only, so a rerun with the same timings takes the same path, and
an interrupted run replays it from the tuning log.
"""
from __future__ import annotations

import random

from ...db import params_key
from ...solver import Params
from ..runner import GuardedRunner, Measurement, TuneOptions
from ..space import SearchSpace

TOP = 4                # the best points whose neighbourhoods a round explores
ROUNDS_PATIENCE = 3    # rounds without improvement before it stops
IMPROVES = 0.005       # a round improves when it beats the best by more than this fraction


def tune(space: SearchSpace, runner: GuardedRunner, options: TuneOptions) -> list[Measurement]:
    width = max(1, runner.width)
    ranked = list(space.order) or list(space.points)
    if len(space) <= 2 * width:
        runner.run(_start(space) + ranked)
        return list(runner.results.values())
    rng = random.Random(options.seed)
    pool = list(space.points)
    rng.shuffle(pool)
    start = _start(space)
    near = space.neighbours(start[0]) if start else []
    first = _unique(start + list(space.hints) + list(space.order[:width]) + near)
    runner.run(_fill(first, pool, width + width // 2, runner))
    stale = 0
    while not runner.done and stale < ROUNDS_PATIENCE:
        batch = _neighbourhood(space, runner, width)
        if not batch:
            batch = _fill([], ranked if space.order else pool, width, runner)
            if not batch:
                break
        before = runner.best_ms
        runner.run(batch)
        stale = 0 if runner.best_ms < before * (1 - IMPROVES) else stale + 1
    return list(runner.results.values())


def _start(space: SearchSpace) -> list[Params]:
    return [space.default] if space.default in space else []


def _neighbourhood(space: SearchSpace, runner: GuardedRunner, width: int) -> list[Params]:
    """Unmeasured neighbours of the best TOP measured points, best parent first, at most width."""
    best = sorted((m for m in runner.results.values() if m.ok), key=lambda m: m.time_ms)[:TOP]
    out: list[Params] = []
    for m in best:
        out += [p for p in space.neighbours(m.params) if params_key(p) not in runner.results]
    return _unique(out)[:width]


def _fill(first: list[Params], more: list[Params], size: int, runner: GuardedRunner) -> list[Params]:
    """first, then more, without points measured already, up to size."""
    return [p for p in _unique(first + more) if params_key(p) not in runner.results][:size]


def _unique(points: list[Params]) -> list[Params]:
    seen: dict[str, Params] = {}
    for p in points:
        seen.setdefault(params_key(p), p)
    return list(seen.values())
