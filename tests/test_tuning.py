"""Tuning: strategies on a replay runner (no device), tuning on PoCL with injected timers, resume after an
interruption, failures as data, verification of the winner, parallel compile, the CLIs and layer sets."""
import itertools
import math

import numpy as np
import pytest

import miopy
from miopy import BadParam, Direction, db, find
from miopy.cli import build_system_db
from miopy.cli import driver as driver_cli
from miopy.cli import tune as tune_cli
from miopy.conv import networks, registry
from miopy.conv.problem import OUTPUT_ROLE
from miopy.conv.solvers.naive import ConvDirectNaive
from miopy.errors import LaunchError
from miopy.kernel_cache import KernelSpec
from miopy.solver import KernelLaunch, Solution, round_up
from miopy.tuning import GuardedRunner, ReplayRunner, SearchSpace, TuneOptions, tune_solver
from miopy.tuning.strategies import STRATEGIES
from tests.helpers import make_problem

NAIVE = registry.get("ConvDirectNaive")

# -- strategies, with no device ---------------------------------------------------------------------------
GRID = {"A": (1, 2, 3, 4, 5, 6, 7, 8), "B": (1, 2, 3, 4)}
SPACE = SearchSpace(GRID, tuple(dict(A=a, B=b) for a, b in itertools.product(*GRID.values())), {"A": 1, "B": 1})
BOWL = {db.params_key(p): 1.0 + (p["A"] - 6) ** 2 + (p["B"] - 3) ** 2 for p in SPACE.points}  # best at A=6, B=3


def _search(strategy: str, options: TuneOptions, recorded=None, clock=None):
    replay = ReplayRunner(BOWL)
    extra = {"clock": clock} if clock else {}
    runner = GuardedRunner(replay, options, recorded, **extra)
    runner.run([SPACE.default])
    STRATEGIES[strategy](SPACE, runner, options)
    best = min(runner.results.values(), key=lambda m: m.time_ms)
    return best, runner, replay


def test_exhaustive_measures_every_point_once():
    best, runner, replay = _search("exhaustive", TuneOptions())
    assert best.params == {"A": 6, "B": 3} and replay.calls == len(SPACE) == len(runner.results)


def test_random_sample_respects_the_budget():
    best, runner, replay = _search("random", TuneOptions(budget=10, seed=3))
    assert replay.calls == 10 == len(runner.results)


def test_local_search_climbs_to_the_optimum_cheaply():
    best, runner, replay = _search("local", TuneOptions(patience=6))
    assert best.params == {"A": 6, "B": 3} and replay.calls < len(SPACE)


def test_neighbours_step_one_grid_value():
    assert sorted(map(db.params_key, SPACE.neighbours({"A": 1, "B": 2}))) == sorted(
        map(db.params_key, [{"A": 2, "B": 2}, {"A": 1, "B": 1}, {"A": 1, "B": 3}]))


def test_patience_and_time_limit_stop_a_search():
    rising = {db.params_key(p): float(i) for i, p in enumerate(SPACE.points)}  # the first point is the best
    runner = GuardedRunner(ReplayRunner(rising), TuneOptions(patience=3))
    STRATEGIES["exhaustive"](SPACE, runner, runner.options)
    assert len(runner.results) == 4
    ticks = itertools.count()
    _, runner, _ = _search("exhaustive", TuneOptions(time_limit_s=5), clock=lambda: float(next(ticks)))
    assert 1 < len(runner.results) < 5


def test_recorded_points_are_served_without_measuring():
    recorded = {db.params_key(p): miopy.tuning.Measurement(p, BOWL[db.params_key(p)], cached=True)
                for p in SPACE.points[:5]}
    best, runner, replay = _search("exhaustive", TuneOptions(), recorded)
    assert replay.calls == len(SPACE) - 5 and best.params == {"A": 6, "B": 3}


# -- tuning on the device, with injected timers -----------------------------------------------------------
class WgTimer:
    """Times by work-group size; counts calls; optionally raises on one call or for one size."""

    def __init__(self, times, interrupt_at=None, fail_wg=None):
        self.times, self.interrupt_at, self.fail_wg, self.calls = times, interrupt_at, fail_wg, 0

    def __call__(self, handle, prepared, buffers):
        self.calls += 1
        if self.calls == self.interrupt_at:
            raise KeyboardInterrupt
        wg = prepared.solution.params["WG"]
        if wg == self.fail_wg:
            raise LaunchError(f"simulated launch failure at WG={wg}")
        return self.times[wg]


def _tune(handle, problem, timer, solver=NAIVE, **options):
    return tune_solver(handle, problem, solver, strategy_name=options.pop("strategy", "local"),
                       options=TuneOptions(**options), timer=timer, compiler=miopy.tuning.Compiler(handle, 0))


def test_tiny_budget_stores_the_point_the_timer_makes_fastest(fresh_dbs, handle):
    problem = make_problem(Direction.FORWARD, 1, 4, 6, 6, 4, 3, 3, 1)
    timer = WgTimer({64: 3.0, 128: 1.0, 256: 2.0})
    result = _tune(handle, problem, timer, budget=2)
    assert timer.calls == 2 and (result.default_ms, result.best_ms) == (3.0, 1.0)
    assert result.stored and result.best_params == {"WG": 128} and result.speedup == 3.0
    assert find.params_for(NAIVE, problem, handle) == ({"WG": 128}, "user perf DB")


def test_interrupted_run_resumes_without_remeasuring(fresh_dbs, handle):
    problem = make_problem(Direction.BACKWARD_DATA, 1, 4, 6, 6, 4, 3, 3, 1)
    times = {64: 3.0, 128: 2.0, 256: 1.0}
    with pytest.raises(KeyboardInterrupt):
        _tune(handle, problem, WgTimer(times, interrupt_at=3), strategy="exhaustive")
    timer = WgTimer(times)
    result = _tune(handle, problem, timer, strategy="exhaustive")
    assert timer.calls == 1 and (result.recorded, result.measured) == (2, 1)
    assert result.best_params == {"WG": 256}


def test_failed_point_is_recorded_with_its_reason_and_skipped(fresh_dbs, handle):
    problem = make_problem(Direction.BACKWARD_WEIGHTS, 1, 4, 6, 6, 4, 3, 3, 1)
    result = _tune(handle, problem, WgTimer({64: 3.0, 128: 1.0, 256: 2.0}, fail_wg=128), strategy="exhaustive")
    assert result.best_params == {"WG": 256} and result.failed == 1
    logged = db.tuning_log().get(handle.info.device_id, problem.key(), NAIVE.id)[db.params_key({"WG": 128})]
    assert math.isinf(logged.time_ms) and "simulated launch failure" in logged.error


class WrongAt256(ConvDirectNaive):
    """The naive solver, except that WG=256 writes zeros: a fast config that does not verify."""

    id = "TestWrongAt256"

    def solution(self, problem, params, epilogue=None):
        if params["WG"] != 256:
            return super().solution(problem, params, epilogue)
        count = problem.y.element_count
        fill = KernelLaunch(KernelSpec.make("scale.cl", "fill"), (round_up(count, 64),), (64,),
                            (OUTPUT_ROLE[problem.direction], np.float32(0), np.int32(count)))
        return Solution(self.id, dict(params), (fill,))


def test_winner_that_fails_verification_is_rejected(fresh_dbs, handle):
    problem = make_problem(Direction.FORWARD, 1, 4, 6, 6, 4, 3, 3, 1)
    result = _tune(handle, problem, WgTimer({64: 3.0, 128: 2.0, 256: 1.0}), solver=WrongAt256(), strategy="exhaustive")
    assert result.best_params == {"WG": 128} and result.stored
    logged = db.tuning_log().get(handle.info.device_id, problem.key(), WrongAt256.id)[db.params_key({"WG": 256})]
    assert math.isinf(logged.time_ms) and logged.error.startswith("wrong result")


@pytest.mark.parametrize("binaries", [True, False], ids=["binaries as values", "driver-cached"])
def test_parallel_compile_needs_no_kernel_cache_directory(fresh_dbs, monkeypatch, tmp_path, binaries):
    """With no disk cache at all the workers' builds still reach the parent: as program binaries it adopts
    (entries of binaries), or through the driver's own cache (PoCL's markers); the records equal an
    in-process run's."""
    monkeypatch.setenv("MIOPY_DISABLE_CACHE", "1")
    monkeypatch.setenv("MIOPY_CACHE_BINARIES", "1" if binaries else "0")
    problem = make_problem(Direction.FORWARD, 1, 3, 9, 5, 2, 3, 3, 1)
    timer = WgTimer({64: 3.0, 128: 1.0, 256: 2.0})
    parallel = miopy.Handle()
    with miopy.tuning.Compiler(parallel, jobs=2) as compiler:
        result = tune_solver(parallel, problem, NAIVE, strategy_name="exhaustive", compiler=compiler, timer=timer)
    assert result.stored and result.failed == 0 and result.best_params == {"WG": 128}
    stats = parallel.cache_stats()
    assert (stats["adopted"] >= 1 and stats["compiled"] == 0) if binaries else stats["adopted"] == 0, stats
    record = db.user_perf_db().get(parallel.info.device_id, problem.key(), NAIVE.id)
    monkeypatch.setenv("MIOPY_USER_DB_PATH", str(tmp_path / "in-process.db"))
    in_process = miopy.Handle()
    alone = tune_solver(in_process, problem, NAIVE, strategy_name="exhaustive", timer=WgTimer(timer.times),
                        compiler=miopy.tuning.Compiler(in_process, 0))
    assert alone.measured == result.measured and alone.best_params == result.best_params == record.params


# -- CLIs and layer sets ------------------------------------------------------------------------------------
SMALL = ["-n", "1", "-c", "4", "-H", "6", "-W", "6", "-k", "4", "-y", "3", "-x", "3", "-p", "1", "-q", "1"]


def test_tune_cli_then_driver_reports_user_perf_db(fresh_dbs, capsys):
    assert tune_cli.main(SMALL + ["-F", "1", "--budget", "3", "--jobs", "0", "--strategy", "exhaustive"]) == 0
    out = capsys.readouterr().out
    assert "ConvDirectNaive" in out and "default ms" in out and "speedup" in out and "GFLOP/s" in out
    assert driver_cli.main(["conv"] + SMALL + ["-F", "1", "-i", "1"]) == 0
    assert "params from user perf DB" in capsys.readouterr().out


def test_network_layer_sets():
    expected = {"alexnet": 5, "vgg16": 9, "resnet50": 23, "googlenet": 49}
    assert {name: len(networks.layers(name)) for name in expected} == expected
    for name in expected:
        problems = networks.problems(name, 2)
        assert len({p.key() for p in problems}) == len(problems) and all(p.n == 2 for p in problems)
    with pytest.raises(BadParam, match="network"):
        networks.layers("lenet")


def test_build_system_db_writes_a_shippable_perf_file(fresh_dbs, handle, tmp_path, monkeypatch):
    tiny = networks.Layer(4, 6, 6, 4, 3, 3, 1, 1)
    monkeypatch.setitem(networks.NETWORKS, "tiny", (tiny,))
    out = tmp_path / "system.db"
    assert build_system_db.main(["--out", str(out), "--networks", "tiny", "--budget", "2", "--jobs", "0"]) == 0
    monkeypatch.setenv("MIOPY_SYSTEM_DB_PATH", str(out))
    problem = networks.problems("tiny", 1)[0]
    assert find.params_for(NAIVE, problem, handle)[1] == "system perf DB"
    assert db.user_perf_db().get(handle.info.device_id, problem.key(), NAIVE.id) is None


def test_build_system_db_keeps_each_problem_as_tuned_and_resumes_with_merge(fresh_dbs, handle, tmp_path,
                                                                            monkeypatch):
    """OUT is written after every problem: a build stopped after the first keeps it, and a rerun with --merge
    tunes only the problem OUT lacks (a device call's time limit no longer loses a whole build)."""
    layers = (networks.Layer(4, 6, 6, 4, 3, 3, 1, 1), networks.Layer(4, 6, 6, 8, 3, 3, 1, 1))
    monkeypatch.setitem(networks.NETWORKS, "tiny2", layers)
    out = tmp_path / "system.db"
    argv = ["--out", str(out), "--networks", "tiny2", "--budget", "2", "--jobs", "0", "-S", NAIVE.id]
    real, tuned = build_system_db.tune_problem, []

    def stopped_after_one(handle, problem, **kwargs):
        if tuned:
            raise KeyboardInterrupt
        tuned.append(problem.key())
        return real(handle, problem, **kwargs)

    monkeypatch.setattr(build_system_db, "tune_problem", stopped_after_one)
    with pytest.raises(KeyboardInterrupt):
        build_system_db.main(argv)
    assert {row[1] for row in build_system_db._existing(out)} == set(tuned)
    first, tuned[:] = tuned[0], []

    def counted(handle, problem, **kwargs):
        tuned.append(problem.key())
        return real(handle, problem, **kwargs)

    monkeypatch.setattr(build_system_db, "tune_problem", counted)
    assert build_system_db.main(argv + ["--merge"]) == 0
    assert len(tuned) == 1 and tuned[0] != first
    assert {row[1] for row in build_system_db._existing(out)} == {first, tuned[0]}


def test_system_db_merge_keeps_the_faster_record():
    from miopy.cli.build_system_db import faster
    old = ("dev", "key", "ConvDirectLocal", '{"a": 1}', 1.0, "0.1.0", "d1")
    slower = ("dev", "key", "ConvDirectLocal", '{"a": 2}', 1.1, "0.1.0", "d2")
    quicker = ("dev", "key", "ConvDirectLocal", '{"a": 3}', 0.9, "0.1.0", "d3")
    assert faster(old, slower) is old and faster(old, quicker) is quicker and faster(None, slower) is slower


def test_solvers_of_one_problem_share_its_float64_answer(fresh_dbs, handle, monkeypatch):
    """The reference is computed once per problem and seed in a process; a wrong winner is still caught."""
    from miopy.tuning.workload import EXPECTED
    EXPECTED.clear()
    problem = make_problem(Direction.FORWARD, 1, 4, 6, 6, 4, 3, 3, 1)
    calls = []
    reference = problem.registry.reference
    monkeypatch.setattr(problem.registry, "reference", lambda p, views: calls.append(p) or reference(p, views))
    times = WgTimer({64: 3.0, 128: 2.0, 256: 1.0})
    assert _tune(handle, problem, times, strategy="exhaustive").best_params == {"WG": 256}
    result = _tune(handle, problem, WgTimer({64: 3.0, 128: 2.0, 256: 1.0}), solver=WrongAt256(), strategy="exhaustive")
    assert result.best_params == {"WG": 128} and len(calls) == 1
    other = make_problem(Direction.FORWARD, 1, 4, 6, 6, 8, 3, 3, 1)
    _tune(handle, other, WgTimer({64: 3.0, 128: 2.0, 256: 1.0}), strategy="exhaustive")
    assert len(calls) == 2 and calls[1] == other


# -- any family's problems --------------------------------------------------------------------------------
SOFTMAX = ["softmax", "-n", "4", "-c", "300", "-H", "1", "-W", "2", "-F", "1"]


def test_tune_cli_tunes_another_familys_problem_and_find_uses_it(fresh_dbs, handle, capsys):
    """miopy-tune with a primitive's driver command and flags tunes that family's solvers; the winners land in
    the user perf DB, where the family's calls find their params."""
    assert tune_cli.main(SOFTMAX + ["--budget", "2", "--jobs", "0", "--strategy", "exhaustive"]) == 0
    out = capsys.readouterr().out
    assert "SoftmaxBlockPerRow" in out and "SoftmaxItemPerRow" not in out   # 300-long rows: item-per-row refuses
    problem = tune_cli.drivers()["softmax"].problems(tune_cli.parser().parse_args(SOFTMAX))[0]
    params, source = find.params_for(problem.registry.get("SoftmaxBlockPerRow"), problem, handle)
    assert source == "user perf DB" and params in [{"WG": 32}, {"WG": 64}]


def test_tune_file_takes_driver_lines_of_any_family(tmp_path, fresh_dbs, capsys):
    path = tmp_path / "lines.txt"
    path.write_text("miopy-driver " + " ".join(SOFTMAX) + "\nMIOpenDriver conv " + " ".join(SMALL) + " -F 1\n")
    assert tune_cli.main(["--file", str(path), "--budget", "1", "--jobs", "0"]) == 0
    out = capsys.readouterr().out
    assert "2 problem(s)" in out and "softmax-accurate-channel-300" in out and "ConvDirectNaive" in out


def test_a_fused_convolution_is_tuned_as_its_convolution(fresh_dbs, handle, capsys):
    flags = ["CBAInfer", *SMALL, "-S", "ConvDirectNaiveFused", "--budget", "2", "--jobs", "0"]
    assert tune_cli.main(flags) == 0
    assert "ConvDirectNaive " in capsys.readouterr().out
    fused = tune_cli.drivers()["CBAInfer"].problems(tune_cli.parser().parse_args(flags))[0]
    assert find.params_for(registry.get("ConvDirectNaive"), fused.conv, handle)[1] == "user perf DB"
    assert find.params_for(miopy.fusion.REGISTRY.get("ConvDirectNaiveFused"), fused, handle)[1] == "user perf DB"


def test_find_after_search_tunes_any_family_first(fresh_dbs, handle, monkeypatch):
    from miopy.tuning import find_after_search
    problem = tune_cli.drivers()["softmax"].problems(tune_cli.parser().parse_args(SOFTMAX))[0]
    monkeypatch.setenv("MIOPY_FIND_ENFORCE", "search")
    result = find_after_search(handle, problem, timer=lambda h, plan, b: 1.0 + plan.params["WG"] / 1e3)
    assert result[0].params_source == "user perf DB"
    assert db.tuning_log().get(handle.info.device_id, problem.key(), "SoftmaxBlockPerRow")
