"""find's accuracy check: a wrong candidate is dropped, reported with its error and never stored; the
tolerance rule (miopy.accuracy) that decides it."""
import dataclasses
import math

import pytest

from miopy import Direction, NotSupported, db
from miopy.accuracy import max_error, tolerance
from miopy.conv import registry
from miopy.conv.solvers.naive import ConvDirectNaive
from miopy.find import find_problem
from miopy.kernel_cache import KernelSpec
from miopy.tensor import DataType
from tests.helpers import make_problem

NAIVE, LOCAL = registry.get("ConvDirectNaive"), registry.get("ConvDirectLocal")


class ShiftedPad(ConvDirectNaive):
    """Deliberately wrong: writes every output, but with the padding off by one (a plausible index bug)."""

    id = "TestShiftedPad"
    algorithm = "direct"

    def solution(self, problem, params, epilogue=None):
        sol = super().solution(problem, params)
        launch = sol.launches[0]
        defines = {k: (str(int(v) + 1) if k == "PAD_H" else v) for k, v in launch.spec.defines}
        spec = KernelSpec.make(launch.spec.file, launch.spec.name, defines, launch.spec.options)
        return dataclasses.replace(sol, solver_id=self.id, launches=(dataclasses.replace(launch, spec=spec),))


class HalfWritten(ConvDirectNaive):
    """Deliberately wrong: launches half the work-items, so half the outputs are never written."""

    id = "TestHalfWritten"
    algorithm = "gemm"

    def solution(self, problem, params, epilogue=None):
        sol = super().solution(problem, params)
        launch = sol.launches[0]
        wg = launch.local_size[0]
        half = max(wg, launch.global_size[0] // 2 // wg * wg)
        return dataclasses.replace(sol, solver_id=self.id, launches=(dataclasses.replace(launch, global_size=(half,)),))


WRONG = (ShiftedPad(), HalfWritten())


@pytest.fixture
def test_registry(monkeypatch):
    """The convolution registry with the wrong solvers first (a find would rank them first by time)."""
    def install(solvers):
        monkeypatch.setattr(registry.REGISTRY, "ALL", tuple(solvers))
        monkeypatch.setattr(registry.REGISTRY, "_by_id", {s.id: s for s in solvers})
    return install


def timer_by_solver(times, calls):
    def timer(handle, plan, buffers):
        calls.append(plan.solver_id)
        return times[plan.solver_id]
    return timer


TIMES = {"TestShiftedPad": 0.5, "TestHalfWritten": 0.7, "ConvDirectLocal": 2.0, "ConvDirectNaive": 5.0}


@pytest.mark.parametrize("on_device", [True, False], ids=["device-compare", "host-compare"])
@pytest.mark.parametrize("direction", list(Direction))
def test_wrong_candidates_are_dropped_and_the_right_one_returned(fresh_dbs, handle, test_registry, direction,
                                                                 on_device, monkeypatch):
    monkeypatch.setenv("MIOPY_FIND_CHECK_DEVICE", "1" if on_device else "0")
    test_registry((*WRONG, LOCAL, NAIVE))
    problem = make_problem(direction, 2, 8, 9, 9, 8, 3, 3, pad=1)
    calls: list[str] = []
    result = find_problem(handle, problem, timer=timer_by_solver(TIMES, calls), mode="normal", store=True)
    assert [r.solver_id for r in result] == ["ConvDirectLocal", "ConvDirectNaive"]
    assert set(result.rejected) == {"TestShiftedPad", "TestHalfWritten"}
    assert result.rejected["TestHalfWritten"] == math.inf      # unwritten (NaN-poisoned) outputs
    limit = registry.REGISTRY.tolerance(LOCAL, problem)
    assert result.rejected["TestShiftedPad"] > 10 * limit
    assert "wrong result" in result.skipped["TestShiftedPad"]
    assert result.check == "ConvDirectNaive on the device"
    assert 0 <= result[0].max_error <= limit
    assert "TestShiftedPad" not in calls and "TestHalfWritten" not in calls   # never timed
    stored = db.find_db().get(handle.info.device_id, problem.key())
    assert [r.solver_id for r in stored] == ["ConvDirectLocal", "ConvDirectNaive"]


def test_without_a_naive_solver_the_host_float64_reference_checks(fresh_dbs, handle, test_registry):
    test_registry((ShiftedPad(), LOCAL))
    problem = make_problem(Direction.FORWARD, 1, 4, 7, 7, 4, 3, 3, pad=1)
    result = find_problem(handle, problem, timer=timer_by_solver(TIMES, []), mode="normal")
    assert [r.solver_id for r in result] == ["ConvDirectLocal"]
    assert set(result.rejected) == {"TestShiftedPad"} and result.check == "float64 on the host"


@pytest.mark.parametrize("off", ["argument", "environment"])
def test_turning_the_check_off_lets_the_wrong_winner_through(fresh_dbs, handle, test_registry, monkeypatch, off):
    test_registry((ShiftedPad(), NAIVE))
    problem = make_problem(Direction.FORWARD, 1, 4, 7, 7, 4, 3, 3, pad=1)
    if off == "environment":
        monkeypatch.setenv("MIOPY_FIND_VERIFY", "0")
    result = find_problem(handle, problem, timer=timer_by_solver(TIMES, []), mode="normal",
                          verify=False if off == "argument" else None)
    assert result[0].solver_id == "TestShiftedPad" and not result.rejected
    assert math.isnan(result[0].max_error) and result.check.startswith("not checked")


def test_the_only_solver_being_wrong_is_not_supported(fresh_dbs, handle, test_registry):
    test_registry((ShiftedPad(), NAIVE))
    problem = make_problem(Direction.FORWARD, 1, 4, 7, 7, 4, 3, 3, pad=1)
    with pytest.raises(NotSupported, match="wrong result"):
        find_problem(handle, problem, timer=timer_by_solver(TIMES, []), mode="normal", solvers=[ShiftedPad()])


def test_tolerance_follows_dtype_math_mode_reduction_and_solver_bound():
    fp32 = tolerance(DataType.FLOAT32, 9)
    assert fp32 == pytest.approx(1e-3, rel=1e-3)
    assert tolerance(DataType.FLOAT16, 9) == pytest.approx(2.0 ** -11 + 1e-3)   # + the stored output's rounding
    assert tolerance(DataType.FLOAT32, 9, "tf32") == pytest.approx(1e-2, rel=1e-3)
    assert tolerance(DataType.FLOAT32, 4 * 1024) == pytest.approx(2e-3, rel=1e-3)     # sqrt growth past 1024 terms
    assert tolerance(DataType.FLOAT32, 9, solver_bound=5e-3) == pytest.approx(5e-3, rel=1e-3)   # Winograd's own bound
    assert tolerance(DataType.FLOAT16, 9, solver_bound=5e-3) == pytest.approx(2.0 ** -11 + 5e-3)
    assert tolerance(DataType.FLOAT32, 9, "some-future-mode") >= tolerance(DataType.FLOAT32, 9, "tf32")


def test_parallel_prebuild_compiles_each_program_once(fresh_dbs, tmp_path, monkeypatch):
    import miopy
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MIOPY_FIND_JOBS", "4")
    handle = miopy.Handle()                       # empty memory cache, empty disk cache: every program compiles
    problem = make_problem(Direction.FORWARD, 1, 16, 6, 6, 16, 3, 3, pad=1)
    result = find_problem(handle, problem, timer=timer_by_solver(dict.fromkeys(
        [s.id for s in registry.ALL], 1.0), []), mode="normal")
    assert len(result) >= 3 and not result.rejected
    stats = handle.cache_stats()
    assert stats["compiled"] == len(handle.kernels._programs) >= 3     # threads never built one program twice


def test_early_stop_times_a_hopeless_candidate_once():
    from miopy.find import EARLY_STOP_FACTOR, _early_stop_timer

    class FakeHandle:
        def __init__(self, times):
            self.times, self.calls = list(times), []

        def time_ms(self, enqueue, warmup=2, iters=5):
            self.calls.append((warmup, iters))
            return self.times.pop(0)

    slow = FakeHandle([EARLY_STOP_FACTOR * 2.0 + 1])
    assert _early_stop_timer(slow, None, {}, best=2.0) == EARLY_STOP_FACTOR * 2.0 + 1 and slow.calls == [(1, 1)]
    close = FakeHandle([2.5, 2.2])
    assert _early_stop_timer(close, None, {}, best=2.0) == 2.2 and close.calls == [(1, 1), (2, 5)]


@pytest.mark.parametrize("dtype", ["FP32", "FP16"])
def test_the_device_comparison_is_max_error(handle, dtype):
    """check_error.cl against miopy.accuracy.max_error on the same data: errors of every size, an unwritten (NaN)
    and an overflowed (inf) element, and the reference's NaN gaps skipped."""
    import numpy as np
    import pyopencl as cl

    from miopy.find import AccuracyCheck
    problem = make_problem(Direction.FORWARD, 2, 3, 9, 11, 5, 3, 3, pad=1, dtype=dtype)
    check = AccuracyCheck(handle, problem, 0)
    role = problem.outputs()[0]
    desc = problem.tensors()[role]
    rng = np.random.default_rng(7)
    want = rng.standard_normal(desc.element_span).astype(desc.dtype.numpy)
    cases = {"close": want + rng.standard_normal(want.size).astype(want.dtype) * 1e-3}
    cases["unwritten"] = cases["close"].copy()
    cases["unwritten"][want.size // 3] = np.nan
    cases["overflowed"] = cases["close"].copy()
    cases["overflowed"][-1] = np.inf
    gapped = want.copy()
    gapped[::7] = np.nan                 # gaps of a strided tensor: NaN in the reference, skipped
    reference = cl.Buffer(handle.context, cl.mem_flags.READ_WRITE, want.nbytes)
    for name, got in cases.items():
        for expected in (want, gapped):
            cl.enqueue_copy(handle.queue, reference, expected)
            cl.enqueue_copy(handle.queue, check.buffers[role], got)
            keep = ~np.isnan(expected)
            host = max_error(got[keep], expected[keep])     # an infinite error is the largest float there
            device = check._device_error(role, reference)
            if host > 1e300:
                assert device == np.inf, name
            else:
                assert device == pytest.approx(host, rel=1e-3, abs=1e-7) and host > 1e-5, name
