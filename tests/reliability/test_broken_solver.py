"""Solvers whose kernels fail to build or launch for some params: find records each failure in
``result.skipped`` with its reason and goes on; the calls succeed with another solver (naive); nothing
is raised. An explicit record of a broken configuration raises a MiopyError and leaves the output alone.
Tuning records each broken point in the tuning log with its reason and time inf, and stores a working
winner, which find then ranks.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import miopy
from miopy import ConvAlgoPerf, Direction, MiopyError, db
from miopy.accuracy import max_error
from miopy.conv import reference, registry
from miopy.conv.problem import map_problem
from miopy.conv.solvers.naive import ConvDirectNaive
from miopy.solver import KernelLaunch, Solution
from miopy.tuning import Compiler, TuneOptions, tune_problem
from tests.reliability.faults import PROBLEMS, USER_DB, Outcome, stored_records
from tests.reliability.worker import check_record, descriptors, run_checked


class _Broken(ConvDirectNaive):
    """Naive's kernels, spoiled one way (``spoil``) when params say BROKEN, intact otherwise."""

    grid = {"WG": (64,), "BROKEN": (True, False)}
    param_doc = {"WG": "work-group size", "BROKEN": "spoil the launch"}

    def default_params(self, problem, dev):
        return {"WG": 64, "BROKEN": True}

    def solution(self, problem, params, epilogue=None) -> Solution:
        launch = super().solution(problem, {"WG": params["WG"]}, epilogue).launches[0]
        if params["BROKEN"]:
            launch = self.spoil(launch)
        return Solution(self.id, dict(params), (launch,))

    def spoil(self, launch: KernelLaunch) -> KernelLaunch:
        raise NotImplementedError


def _with_spec(launch: KernelLaunch, **changes) -> KernelLaunch:
    return dataclasses.replace(launch, spec=dataclasses.replace(launch.spec, **changes))


class BrokenSourceFile(_Broken):
    id = "TestBrokenSourceFile"
    source = None  # set by the fixture: a kernel file with a syntax error, in a temporary directory

    def spoil(self, launch):
        return _with_spec(launch, file=str(self.source))


class BrokenDefine(_Broken):
    id = "TestBrokenDefine"

    def spoil(self, launch):
        return _with_spec(launch, defines=tuple((k, "K +" if k == "K" else v) for k, v in launch.spec.defines))


class MissingKernel(_Broken):
    id = "TestMissingKernel"

    def spoil(self, launch):
        return _with_spec(launch, name="no_such_kernel")


class MissingSourceFile(_Broken):
    id = "TestMissingSourceFile"

    def spoil(self, launch):
        return _with_spec(launch, file="/nonexistent/miopy/kernel.cl")


class LaunchTooWide(_Broken):
    id = "TestLaunchTooWide"

    def spoil(self, launch):
        wide = 1 << 20  # beyond any device's max work-group size
        return dataclasses.replace(launch, global_size=(wide,), local_size=(wide,))


BROKEN = (BrokenSourceFile(), BrokenDefine(), MissingKernel(), MissingSourceFile(), LaunchTooWide())
EXPECTED_ERROR = {"TestBrokenSourceFile": "CompileError", "TestBrokenDefine": "CompileError",
                  "TestMissingKernel": "CompileError", "TestMissingSourceFile": "CompileError",
                  "TestLaunchTooWide": "LaunchError"}


@pytest.fixture
def broken_registry(monkeypatch, tmp_path):
    """The broken solvers ahead of the real registry, as if they had been registered."""
    source = tmp_path / "broken.cl"
    source.write_text("__kernel void naive_fwd(__global float* y) { y[0] = ; }\n")
    monkeypatch.setattr(BrokenSourceFile, "source", source)
    solvers = BROKEN + registry.ALL
    monkeypatch.setattr(registry.REGISTRY, "ALL", solvers)
    monkeypatch.setattr(registry.REGISTRY, "_by_id", {s.id: s for s in solvers})
    return solvers


def test_find_skips_broken_solvers_and_the_call_succeeds(broken_registry, report):
    handle = miopy.Handle()  # nothing found or built before the broken solvers were registered
    for direction in Direction:
        found = run_checked(handle, PROBLEMS[0], direction, seed=int(direction), mode="normal")
        assert found[0].solver_id not in EXPECTED_ERROR
        for solver_id, error in EXPECTED_ERROR.items():
            assert found.skipped[solver_id].startswith(error), found.skipped[solver_id]
    report.record(Outcome(
        fault="solvers whose kernels fail to build (syntax error in a kernel file, broken define, missing "
              "kernel, missing file) or to launch (work-group too wide)", store="-", processes=1,
        repetitions=len(Direction) * len(BROKEN),
        happened=f"find skipped all {len(BROKEN)} in every direction with their reasons "
                 f"({', '.join(sorted(set(EXPECTED_ERROR.values())))}) and ranked the working solvers; "
                 "every result verified against the reference; nothing raised", test="test_broken_solver"))


@pytest.mark.parametrize("solver", BROKEN, ids=lambda s: s.id)
def test_explicit_broken_record_raises_a_miopy_error_and_good_params_run(solver, broken_registry, handle):
    xd, wd, conv, yd = descriptors(PROBLEMS[0])
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xd.dims).astype(np.float32), rng.standard_normal(wd.dims).astype(np.float32)
    poison = np.full(yd.dims, np.nan, np.float32)
    xa, wa, ya = handle.to_device(x), handle.to_device(w), handle.to_device(poison)
    broken = ConvAlgoPerf(solver.id, "naive", 1.0, 0, {"WG": 64, "BROKEN": True})
    with pytest.raises(MiopyError):
        miopy.convolution_forward(handle, xd, xa, wd, wa, conv, yd, ya, algo=broken)
    assert np.isnan(ya.get()).all()
    fine = ConvAlgoPerf(solver.id, "naive", 1.0, 0, {"WG": 64, "BROKEN": False})
    miopy.convolution_forward(handle, xd, xa, wd, wa, conv, yd, ya, algo=fine)
    assert max_error(ya.get(), reference.conv_forward(x, w, conv.pad)) < 1e-4


def test_tuning_records_broken_points_and_stores_a_working_winner(broken_registry, tmp_path, monkeypatch, report):
    """Each broken solver's default point is broken: tuning logs it as failed (time inf, the error) and
    stores the working point, which find then ranks with its tuned params."""
    monkeypatch.setenv("MIOPY_SYSTEM_DB_PATH", str(tmp_path / "no-system.db"))
    handle = miopy.Handle()
    xd, wd, conv, _ = descriptors(PROBLEMS[0])
    problem = map_problem(Direction.FORWARD, xd, wd, conv).problem
    broken, working = {"WG": 64, "BROKEN": True}, {"WG": 64, "BROKEN": False}
    with Compiler(handle, 0) as compiler:
        results = tune_problem(handle, problem, solvers=BROKEN, options=TuneOptions(budget=2), compiler=compiler)
    assert [(r.solver_id, r.stored, r.best_params, r.failed) for r in results] == [
        (s.id, True, working, 1) for s in BROKEN]
    log = stored_records(db.user_store().path)["tuning"]
    device, key = handle.info.device_id, problem.key()
    for solver in BROKEN:
        time_ms, error = log[device, key, solver.id, db.params_key(broken)]
        assert time_ms is None and error.startswith(EXPECTED_ERROR[solver.id]), (time_ms, error)
        assert log[device, key, solver.id, db.params_key(working)][0] > 0
    found = run_checked(handle, PROBLEMS[0], Direction.FORWARD, seed=0, mode="normal")
    for record in (r for r in found if r.solver_id in EXPECTED_ERROR):
        assert (record.params, record.params_source) == (working, db.USER_PERF), record
        check_record(handle, PROBLEMS[0], Direction.FORWARD, record, seed=1)
    ranked = sum(r.solver_id in EXPECTED_ERROR for r in found)
    check = USER_DB.check(db.user_store().path, handle)
    assert ranked == len(BROKEN) and not check.bad, (ranked, check)
    report.record(Outcome(
        fault="tuning solvers whose default params fail to build or launch (the broken solvers above)",
        store=USER_DB.name, processes=1, repetitions=len(BROKEN),
        happened=f"every tuning run completed: the broken point logged in the tuning table with time inf and its "
                 f"reason ({', '.join(sorted(set(EXPECTED_ERROR.values())))}), the working point stored as the "
                 f"winner; find then ranked all {len(BROKEN)} with their tuned params and every result verified",
        test="test_broken_solver"))
