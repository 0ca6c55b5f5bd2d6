"""Solvers whose kernels fail to build or launch for some params: find records each failure in
``result.skipped`` with its reason and goes on; the calls succeed with another solver (naive); nothing
is raised. An explicit record of a broken configuration raises a MiopyError and leaves the output alone.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import miopy
from miopy import ConvAlgoPerf, Direction, MiopyError, reference
from miopy.solvers import registry
from miopy.solvers.base import KernelLaunch, Solution
from miopy.solvers.naive import ConvDirectNaive
from tests.reliability.faults import PROBLEMS, Outcome
from tests.reliability.worker import descriptors, run_checked


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
    monkeypatch.setattr(registry, "ALL", solvers)
    monkeypatch.setattr(registry, "_BY_ID", {s.id: s for s in solvers})
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
    assert reference.max_error(ya.get(), reference.conv_forward(x, w, conv.pad)) < 1e-4
