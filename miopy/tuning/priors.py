"""What a search knows before it measures: a solver's points on a new problem ordered by what was measured
for the same solver on other problems (its "measured predecessors").

- hints: the tuned params of the same solver in the user and system perf DBs (this device's records first,
  then other devices of the same platform), those valid on this problem: a layer's winner is often
  another layer's winner too.
- order: every point of the space ranked by a cheap additive cost estimate fitted to the tuning log of
  this device and solver: for each other problem with two or more timed points, each point's
  log(time / that problem's best) (a failure counts as log 8) is credited to each of its param values; a
  point's estimate is the sum over its params of the mean credit of its value (a value never measured
  gets the mean of its param's values). Empty when the log holds nothing usable. Ties keep grid order, so
  the ranking is deterministic.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .. import db
from ..solver import Params
from .space import SearchSpace

FAILED = math.log(8.0)   # the credit of a point that failed (or was far slower): as bad as 8x the best


@dataclass(frozen=True)
class Priors:
    hints: tuple[Params, ...] = ()
    order: tuple[Params, ...] = ()


def priors(space: SearchSpace, solver_id: str, device: str, problem_key: str) -> Priors:
    """The priors of solver on problem_key from the user DB's tuning log and the perf DBs."""
    perf = db.user_perf_db().of_solver(solver_id) + db.system_perf_db().of_solver(solver_id)
    return Priors(hints(space, perf, device, problem_key),
                  order(space, db.tuning_log().of_solver(device, solver_id), problem_key))


def hints(space: SearchSpace, perf: Iterable[tuple[str, str, dict]], device: str,
          problem_key: str) -> tuple[Params, ...]:
    """Perf records' params valid in space, this device's first, then other devices of its platform; each once."""
    platform = device.split("|")[0]
    mine = [p for d, k, p in perf if d == device and k != problem_key]
    kin = [p for d, _, p in perf if d != device and d.split("|")[0] == platform]
    seen: dict[str, Params] = {}
    for params in mine + kin:
        if params in space:
            seen.setdefault(db.params_key(params), params)
    return tuple(seen.values())


def order(space: SearchSpace, log: Mapping[str, list[db.TuningPoint]], problem_key: str) -> tuple[Params, ...]:
    """space's points by the additive estimate fitted to log's other problems; () when nothing was fitted."""
    credit = _credits(log, problem_key)
    if not credit:
        return ()
    by_name: dict[str, list[float]] = defaultdict(list)
    for (name, _), value in credit.items():
        by_name[name].append(value)
    fallback = {name: sum(values) / len(values) for name, values in by_name.items()}

    def estimate(params: Params) -> float:
        return sum(credit.get((name, repr(value)), fallback.get(name, 0.0)) for name, value in params.items())

    return tuple(sorted(space.points, key=estimate))


def _credits(log: Mapping[str, list[db.TuningPoint]], problem_key: str) -> dict[tuple[str, str], float]:
    sums: dict[tuple[str, str], float] = defaultdict(float)
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for problem, points in log.items():
        if problem == problem_key:
            continue
        times = [p.time_ms for p in points if math.isfinite(p.time_ms) and p.time_ms > 0]
        if len(times) < 2:
            continue
        best = min(times)
        for p in points:
            ok = math.isfinite(p.time_ms) and p.time_ms > 0
            value = min(math.log(p.time_ms / best), FAILED) if ok else FAILED
            for name, v in p.params.items():
                sums[name, repr(v)] += value
                counts[name, repr(v)] += 1
    return {k: sums[k] / counts[k] for k in sums}
