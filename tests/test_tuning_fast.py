"""The fast strategy, its priors, the early timing cut and the time budget: strategy logic on a replay runner
(no device), the cut on PoCL with injected timers, the budget's split with a fake clock."""
import dataclasses
import itertools
import math

import pytest

import miopy
from miopy import Direction, db
from miopy.conv import registry
from miopy.tuning import GuardedRunner, Measurement, ReplayRunner, SearchSpace, TuneOptions, tune_solver, tuner
from miopy.tuning.priors import order
from miopy.tuning.strategies import STRATEGIES
from tests.helpers import make_problem

NAIVE = registry.get("ConvDirectNaive")

# A rugged 4-D grid (512 points): a bowl with its floor at A=11, B=3, C=2, D=1 and a ripple in A that makes
# local optima, so a plain hill climb from the default stalls.
GRID = {"A": tuple(range(16)), "B": tuple(range(8)), "C": (1, 2, 4, 8), "D": (0, 1)}
SPACE = SearchSpace(GRID, tuple(dict(zip(GRID, v)) for v in itertools.product(*GRID.values())),
                    {"A": 0, "B": 0, "C": 1, "D": 0})


def _cost(p, a=11, b=3):
    return 1.0 + 0.05 * (p["A"] - a) ** 2 + 0.1 * (p["B"] - b) ** 2 + 0.3 * abs(math.log2(p["C"]) - 1) \
        + 0.2 * (p["D"] != 1) + 0.15 * (p["A"] % 3 == 1)


TIMES = {db.params_key(p): _cost(p) for p in SPACE.points}
BEST = min(TIMES.values())


def _fast(space=SPACE, times=TIMES, options=None, recorded=None, width=8, replay=None):
    options = options or TuneOptions()
    replay = replay or ReplayRunner(times)
    runner = GuardedRunner(replay, options, recorded, width=width)
    runner.run([space.default])
    STRATEGIES["fast"](space, runner, options)
    return min(runner.results.values(), key=lambda m: m.time_ms), runner, replay


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_lands_within_a_few_percent_of_exhaustive_in_a_fraction_of_the_points(seed):
    best, runner, replay = _fast(options=TuneOptions(seed=seed))
    assert best.time_ms <= 1.03 * BEST, (best, BEST)
    assert replay.calls <= len(SPACE) // 3


def test_a_small_grid_is_measured_whole():
    small = SearchSpace({"A": (1, 2, 3)}, ({"A": 1}, {"A": 2}, {"A": 3}), {"A": 1})
    best, runner, replay = _fast(small, {db.params_key({"A": a}): t for a, t in ((1, 3.0), (2, 1.0), (3, 2.0))})
    assert replay.calls == 3 and best.params == {"A": 2}


def test_priors_from_another_problem_lead_the_search_to_the_floor_sooner():
    # another problem with the same floor, measured on a coarse sample, is this one's predecessor
    log = {"other": [db.TuningPoint(p, _cost(p), None) for p in SPACE.points[::7]]}
    ranked = order(SPACE, log, "this")
    assert _cost(ranked[0]) < 1.2 * BEST and len(ranked) == len(SPACE)
    assert order(SPACE, log, "other") == ()       # a problem's own points are not its predecessors
    informed = dataclasses.replace(SPACE, order=ranked)
    best, _, replay = _fast(informed, options=TuneOptions(budget=24))
    assert best.time_ms <= 1.03 * BEST and replay.calls <= 24


def test_interrupted_fast_search_resumes_on_the_same_path_without_remeasuring():
    _, whole, full = _fast()

    class Interrupted(ReplayRunner):
        def measure(self, points):
            for m in super().measure(points):
                if self.calls > 20:
                    raise KeyboardInterrupt
                yield m

    partial = GuardedRunner(Interrupted(TIMES), TuneOptions(), width=8)
    with pytest.raises(KeyboardInterrupt):
        partial.run([SPACE.default])
        STRATEGIES["fast"](SPACE, partial, partial.options)
    recorded = {k: Measurement(m.params, m.time_ms, cached=True) for k, m in partial.results.items()}
    assert len(recorded) == 20
    _, resumed, replay = _fast(recorded=recorded)
    assert set(resumed.results) == set(whole.results) and replay.calls == full.calls - 20


def test_time_budget_stops_the_search_but_the_first_point_is_always_measured():
    ticks = itertools.count()
    runner = GuardedRunner(ReplayRunner(TIMES), TuneOptions(time_budget_s=6, time_limit_s=100),
                           clock=lambda: float(next(ticks)))
    runner.run([SPACE.default])
    STRATEGIES["fast"](SPACE, runner, runner.options)
    assert 1 < len(runner.results) < 8
    spent = GuardedRunner(ReplayRunner(TIMES), TuneOptions(time_budget_s=1e-9))
    assert len(spent.run(list(SPACE.points[:3]))) == 1


def test_tune_problem_shares_its_budget_smallest_space_first(handle, monkeypatch):
    problem = make_problem(Direction.FORWARD, 1, 8, 8, 8, 8, 3, 3, 1)
    chosen = tuner.tunable(handle, problem)
    sizes = [len(SearchSpace.of(s, problem, handle.info)) for s in chosen]
    assert len(chosen) >= 2 and len(set(sizes)) >= 2
    now = iter(float(t) for t in itertools.count(step=10))   # every solver "takes" 10 s
    monkeypatch.setattr(tuner.time, "monotonic", lambda: next(now))
    calls = []

    def fake(handle, problem, solver, *, options, **_):
        calls.append((solver.id, options.time_budget_s))
        return solver.id

    monkeypatch.setattr(tuner, "tune_solver", fake)
    results = tuner.tune_problem(handle, problem, options=TuneOptions(time_budget_s=100.0))
    assert results == [s.id for s in chosen]                  # results keep the solvers' order
    assert [len(SearchSpace.of(registry.get(i), problem, handle.info)) for i, _ in calls] == sorted(sizes)
    n = len(chosen)
    assert [share for _, share in calls] == pytest.approx([(100 - 10 * (k + 1)) / (n - k) for k in range(n)])


# -- the early timing cut on the device, with injected timers ----------------------------------------------
class FirstRunTimer:
    """A timer with first_run (what the cut looks at): times by work-group size; counts full timings."""

    def __init__(self, times):
        self.times, self.full, self.first = times, 0, 0

    def __call__(self, handle, plan, buffers):
        self.full += 1
        return self.times[plan.solution.params["WG"]]

    def first_run(self, handle, plan, buffers):
        self.first += 1
        return self.times[plan.solution.params["WG"]]


@pytest.mark.parametrize("times", [dict(zip((64, 128, 256), t)) for t in itertools.permutations((1.0, 2.0, 5.0))])
def test_the_cut_never_drops_the_clearly_best_point(fresh_dbs, handle, times):
    problem = make_problem(Direction.FORWARD, 1, 4, 6, 6, 4, 3, 3, 1)
    timer = FirstRunTimer(times)
    result = tune_solver(handle, problem, NAIVE, strategy_name="exhaustive", options=TuneOptions(cut=1.5),
                         timer=timer, compiler=miopy.tuning.Compiler(handle, 0))
    best = min(times, key=times.get)
    assert result.best_params == {"WG": best} and result.best_ms == 1.0 and result.stored
    # the first point (the default, WG 64) is timed fully; each later one only when its first run is within
    # 1.5x of the best so far
    expected_cut, best_so_far = 0, times[64]
    for wg in (128, 256):
        expected_cut += times[wg] > 1.5 * best_so_far
        best_so_far = min(best_so_far, times[wg])
    assert result.cut == expected_cut and timer.full + result.cut == 3 and timer.first == 2


def test_fast_cuts_by_default_and_other_strategies_do_not(fresh_dbs, handle):
    problem = make_problem(Direction.FORWARD, 1, 4, 6, 6, 4, 3, 3, 1)
    times = {64: 2.0, 128: 5.0, 256: 1.0}
    fast = tune_solver(handle, problem, NAIVE, strategy_name="fast", timer=FirstRunTimer(times),
                       compiler=miopy.tuning.Compiler(handle, 0))
    assert fast.best_params == {"WG": 256} and fast.cut == 1
    other = make_problem(Direction.BACKWARD_DATA, 1, 4, 6, 6, 4, 3, 3, 1)
    local = tune_solver(handle, other, NAIVE, strategy_name="exhaustive", timer=FirstRunTimer(times),
                        compiler=miopy.tuning.Compiler(handle, 0))
    assert local.cut == 0 and local.best_params == {"WG": 256}


# -- builds ahead of timing ------------------------------------------------------------------------------------
def test_builds_move_into_this_process_when_the_workers_cannot_start(fresh_dbs, handle, monkeypatch):
    """A worker whose device cannot be opened breaks the pool before it builds anything: every point is then
    built here and measured, none is lost to the broken pool."""
    from miopy.tuning import compile_ahead as compile_module
    monkeypatch.setattr(compile_module, "device_address", lambda h: (99, 0))   # no such platform
    problem = make_problem(Direction.FORWARD, 1, 3, 7, 5, 2, 3, 3, 1)
    timer = FirstRunTimer({64: 3.0, 128: 1.0, 256: 2.0})
    with miopy.tuning.Compiler(handle, jobs=1) as compiler:
        result = tune_solver(handle, problem, NAIVE, strategy_name="exhaustive", timer=timer, compiler=compiler)
        assert compiler.jobs == 0
    assert result.measured == 3 and result.failed == 0 and result.best_params == {"WG": 128}


# -- the winner's check on large problems ----------------------------------------------------------------------
def test_a_large_problem_checks_its_winner_against_the_naive_solver_on_the_device(fresh_dbs, handle, monkeypatch):
    """Above HOST_CHECK_MAX_FLOPS (here: every problem) the float64 host reference is not computed; the naive
    solver's output on the device is the answer, and a wrong fast point is still rejected."""
    from miopy.tuning import workload
    from tests.test_tuning import WgTimer, WrongAt256
    workload.EXPECTED.clear()
    monkeypatch.setattr(workload, "HOST_CHECK_MAX_FLOPS", 0)
    problem = make_problem(Direction.FORWARD, 1, 4, 6, 6, 4, 3, 3, 1)
    monkeypatch.setattr(problem.registry, "reference", lambda *a: pytest.fail("host reference computed"))
    result = tune_solver(handle, problem, WrongAt256(), strategy_name="exhaustive",
                         timer=WgTimer({64: 3.0, 128: 2.0, 256: 1.0}), compiler=miopy.tuning.Compiler(handle, 0))
    assert result.best_params == {"WG": 128} and result.stored
    logged = db.tuning_log().get(handle.info.device_id, problem.key(), WrongAt256.id)[db.params_key({"WG": 256})]
    assert math.isinf(logged.time_ms) and "ConvDirectNaive on the device" in logged.error
    workload.EXPECTED.clear()
