"""Find modes (normal, fast, hybrid), MIOPY_FIND_ENFORCE, immediate mode and the heuristic ranking."""
import math

import numpy as np
import pytest

import miopy
from miopy import BadParam, ConvDesc, Direction, TensorDesc, db
from miopy.accuracy import max_error
from miopy.conv import api, heuristic, reference, registry
from miopy.conv.solvers.common import ConvSolver as Solver
from miopy.find import compile_solution, find_problem, get_solutions
from tests.helpers import make_problem

NAIVE = registry.get("ConvDirectNaive")


@pytest.fixture(autouse=True)
def naive_only_registry(monkeypatch):
    """Find-mode logic is tested over a one-solver registry, so timer counts and rankings are exact."""
    monkeypatch.setattr(registry.REGISTRY, "ALL", (NAIVE,))


class CountingTimer:
    """An injected timer that returns a fixed time and counts its calls."""

    def __init__(self, ms: float = 1.0):
        self.ms, self.calls = ms, 0

    def __call__(self, handle, prepared, buffers) -> float:
        self.calls += 1
        return self.ms


def _problem(c=4):
    return make_problem(Direction.FORWARD, 1, c, 6, 6, 4, 3, 3, 1)


def _stored(handle, problem):
    return db.find_db().get(handle.info.device_id, problem.key())


def test_normal_find_is_stored_and_hybrid_serves_it(fresh_dbs, handle):
    problem, timer = _problem(), CountingTimer(2.5)
    first = find_problem(handle, problem, timer=timer, mode="normal", store=True)
    assert timer.calls == 1 and not first.from_db
    again = find_problem(handle, problem, timer=timer)  # hybrid is the default
    assert timer.calls == 1 and again.from_db
    assert [(r.solver_id, r.params, r.time_ms, r.measured) for r in again] == [(NAIVE.id, {"WG": 64}, 2.5, True)]
    find_problem(handle, problem, timer=timer, mode="normal")
    assert timer.calls == 2


def test_only_complete_finds_with_real_timings_are_stored(fresh_dbs, handle, monkeypatch):
    problem = _problem()
    find_problem(handle, problem, timer=CountingTimer())
    assert _stored(handle, problem) == []
    monkeypatch.setenv("MIOPY_FIND_ONLY_SOLVER", NAIVE.id)
    find_problem(handle, problem, timer=CountingTimer(), store=True)
    assert _stored(handle, problem) == []
    monkeypatch.delenv("MIOPY_FIND_ONLY_SOLVER")
    find_problem(handle, problem)
    assert [r.solver_id for r in _stored(handle, problem)] == [NAIVE.id]


def test_fast_mode_never_benchmarks(fresh_dbs, handle, monkeypatch):
    problem, timer = _problem(), CountingTimer()
    monkeypatch.setenv("MIOPY_FIND_MODE", "fast")
    ranked = find_problem(handle, problem, timer=timer)
    assert timer.calls == 0 and not ranked.from_db
    assert all(not r.measured and math.isnan(r.time_ms) for r in ranked)
    find_problem(handle, problem, timer=CountingTimer(3.0), mode="normal", store=True)
    served = find_problem(handle, problem, timer=timer)
    assert timer.calls == 0 and served.from_db and served[0].time_ms == 3.0


def test_db_update_refinds_and_overwrites(fresh_dbs, handle, monkeypatch):
    problem = _problem()
    find_problem(handle, problem, timer=CountingTimer(5.0), store=True)
    monkeypatch.setenv("MIOPY_FIND_ENFORCE", "db_update")
    timer = CountingTimer(1.0)
    result = find_problem(handle, problem, timer=timer, store=True)
    assert timer.calls == 1 and not result.from_db
    assert [r.time_ms for r in _stored(handle, problem)] == [1.0]


def test_db_clean_drops_perf_and_find_records(fresh_dbs, handle, monkeypatch):
    problem, device = _problem(), handle.info.device_id
    db.user_perf_db().put(device, problem.key(), NAIVE.id, {"WG": 128}, 1.0)
    find_problem(handle, problem, timer=CountingTimer(), store=True)
    assert _stored(handle, problem)
    monkeypatch.setenv("MIOPY_FIND_ENFORCE", "db_clean")
    result = find_problem(handle, problem, timer=CountingTimer(), store=True)
    assert result[0].params_source == "default"
    assert db.user_perf_db().get(device, problem.key(), NAIVE.id) is None and _stored(handle, problem) == []


def test_retuned_solver_makes_the_find_record_stale(fresh_dbs, handle):
    problem = _problem()
    find_problem(handle, problem, timer=CountingTimer(), store=True)
    db.user_perf_db().put(handle.info.device_id, problem.key(), NAIVE.id, {"WG": 128}, 0.5)
    timer = CountingTimer()
    result = find_problem(handle, problem, timer=timer)
    assert timer.calls == 1 and not result.from_db
    assert (result[0].params, result[0].params_source) == ({"WG": 128}, "user perf DB")


def test_search_tunes_each_solver_then_finds(fresh_dbs, handle, monkeypatch):
    monkeypatch.setattr("miopy.tuning.compile_ahead.default_jobs", lambda: 0)
    monkeypatch.setenv("MIOPY_FIND_ENFORCE", "search")
    problem, timer = _problem(c=5), CountingTimer()
    result = api.find(handle, problem, timer=timer)   # the family's find tunes first (tuning sits above find)
    assert timer.calls == len(NAIVE.grid["WG"]) + 1  # every grid point, then find
    assert result[0].params_source == "user perf DB"
    assert len(db.tuning_log().get(handle.info.device_id, problem.key(), NAIVE.id)) == len(NAIVE.grid["WG"])


def test_unknown_mode_is_a_bad_param(fresh_dbs, handle, monkeypatch):
    with pytest.raises(BadParam, match="mode"):
        find_problem(handle, _problem(), mode="quick")
    monkeypatch.setenv("MIOPY_FIND_ENFORCE", "everything")
    with pytest.raises(BadParam, match="MIOPY_FIND_ENFORCE"):
        find_problem(handle, _problem())


def test_immediate_mode_ranks_and_compiles_without_running(fresh_dbs, handle):
    rng = np.random.default_rng(0)
    xd, wd, conv = TensorDesc("FP32", (1, 3, 7, 7)), TensorDesc("FP32", (5, 3, 3, 3)), ConvDesc(1)
    yd = conv.output_desc(xd, wd)
    problem = miopy.ConvProblem.create(Direction.FORWARD, xd, wd, conv)
    solutions = get_solutions(handle, problem)
    assert not solutions.from_db and [r.solver_id for r in solutions] == [NAIVE.id]
    record = compile_solution(handle, problem, solutions[0].solver_id)
    assert not record.measured and len(handle.plans) > 0
    x, w = rng.standard_normal(xd.dims).astype(np.float32), rng.standard_normal(wd.dims).astype(np.float32)
    y = handle.empty(yd.dims)
    compiled = handle.cache_stats()["compiled"]
    miopy.convolution_forward(handle, xd, handle.to_device(x), wd, handle.to_device(w), conv, yd, y, algo=record)
    assert handle.cache_stats()["compiled"] == compiled
    assert max_error(y.get(), reference.conv_forward(x, w, (1, 1))) < 1e-4
    find_problem(handle, problem, timer=CountingTimer(), store=True)
    assert get_solutions(handle, problem).from_db


def test_call_without_algo_uses_the_find_db_record(fresh_dbs, handle, monkeypatch):
    problem = make_problem(Direction.FORWARD, 1, 3, 5, 5, 2, 3, 3, 0)
    find_problem(handle, problem, timer=CountingTimer(), store=True)

    def no_find(*args, **kwargs):
        raise AssertionError("find ran although the find DB has a record")

    monkeypatch.setattr(api, "find_after_search", no_find)
    y = handle.empty(problem.y.dims)
    rng = np.random.default_rng(1)
    x, w = (rng.standard_normal(d.dims).astype(np.float32) for d in (problem.x, problem.w))
    miopy.convolution_forward(handle, problem.x, handle.to_device(x), problem.w, handle.to_device(w), problem.conv,
                              problem.y, y)
    assert handle.chosen[problem.key()].measured
    assert max_error(y.get(), reference.conv_forward(x, w)) < 1e-4


def _fake(algorithm: str, sid: str) -> Solver:
    return type(sid, (Solver,), {"id": sid, "algorithm": algorithm})()


@pytest.mark.parametrize("shape,expected", [
    ((1, 32, 8, 8, 32, 1, 1, 0), ["Gemm1x1", "Im2col", "Direct", "Wino", "Other", "Naive"]),
    ((1, 16, 8, 8, 16, 3, 3, 1), ["Wino", "Direct", "Gemm1x1", "Im2col", "Other", "Naive"]),
    ((1, 8, 8, 8, 8, 3, 3, 1), ["Direct", "Gemm1x1", "Im2col", "Wino", "Other", "Naive"]),
    ((1, 32, 9, 9, 32, 5, 5, 2), ["Wino", "Direct", "Gemm1x1", "Im2col", "Other", "Naive"]),
    ((1, 16, 9, 9, 32, 5, 5, 2), ["Direct", "Gemm1x1", "Im2col", "Wino", "Other", "Naive"]),
])
def test_heuristic_ranking(shape, expected):
    registry_order = [_fake("naive", "Naive"), _fake("other", "Other"), _fake("gemm", "Gemm1x1"),
                      _fake("winograd", "Wino"), _fake("direct", "Direct"), _fake("gemm", "Im2col")]
    problem = make_problem(Direction.FORWARD, *shape)
    assert [s.id for s in heuristic.rank(problem, registry_order)] == expected
