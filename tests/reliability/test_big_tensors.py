"""Tensors past 2^31 elements (and 4 GiB): every solver either computes them right or says it does not apply
above its index range. The naive solver handles any size (64-bit offsets), so find always has a solver.

The fast tests need no memory: applicability reasons on descriptors, and the 64-bit kernels run on small
problems (forced). The `bigmem` tests run a > 2^31-element tensor through each direction on a device with
the memory for it (the GPU machine); they are deselected by default (`pytest -m bigmem` runs them).
"""
import os

import numpy as np
import pytest

import miopy
from miopy import ConvDesc, TensorDesc
from miopy.conv import reference, registry
from miopy.conv.problem import Direction
from miopy.conv.solvers import naive
from miopy.device import INT_LIMIT
from miopy.families import FAMILIES as FAMILIES_LIST
from tests.helpers import check_solution, make_problem, random_problem

NAIVE = registry.get("ConvDirectNaive")
# 1 x 8193 x 512 x 512 = 2^31 + 2^18 elements (8.6 GB of fp32): just past the 32-bit index range.
BIG = (1, 8193, 512, 512)
K = 2
TEST = "test_big_tensors"
APPLICABILITY = ("problems with a tensor past 2^31 elements (descriptors only), every solver, every direction, "
                 "1x1 and 3x3", "the naive solver applies (64-bit offsets); every other solver says why (its "
                 "32-bit index range, or the filter shape)", TEST)
WIDE = ("the 64-bit offset kernels, forced on small random problems (pads, strides, dilations, groups)",
        "every output verified against float64, every direction", TEST)
BIG_FORWARD = ("forward convolution of a 1x8193x512x512 input (2^31 + 2^18 elements, 8.6 GB), found and run",
               "find ranked the naive solver alone (the others out of their index range); the output has no "
               "unwritten element and matches float64 at 520 sampled points", TEST)
BIG_DATA = ("backward-data convolution writing a 1x8193x512x512 gradient (2^31 + 2^18 elements) with alpha 2 "
            "(the 64-bit blend)", "no unwritten element; matches float64 at 520 sampled points, the last ones "
            "included", TEST)
BIG_WEIGHTS = ("backward-weights convolution reducing a 1x8193x512x512 input (2^31 + 2^18 elements)",
               "matches float64 at every sampled weight", TEST)
TOO_BIG = ("find and allocation for a 1x8193x512x512 tensor on a device whose largest allocation is smaller",
           "OutOfResources before anything was allocated", TEST)


def _big_problem(direction, r=1, pad=0):
    return make_problem(direction, BIG[0], BIG[1], BIG[2], BIG[3], K, r, r, pad)


# -- without memory: applicability and the 64-bit kernels --------------------------------------------------
@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("r, pad", [(1, 0), (3, 1)])
def test_above_2_31_elements_only_the_naive_solver_applies_and_the_others_say_why(handle, direction, r, pad, report):
    problem = _big_problem(direction, r, pad)
    assert max(d.element_span for d in (problem.x, problem.y)) >= INT_LIMIT
    assert NAIVE.not_applicable_reason(problem, handle.info) is None
    assert dict(NAIVE.solution(problem, {"WG": 64}).launches[0].spec.defines)["INDEX_T"] == "long"
    for solver in registry.ALL:
        if solver is NAIVE or not solver.directions >= {direction}:
            continue
        reason = solver.not_applicable_reason(problem, handle.info)
        assert reason is not None, f"{solver.id} claims a {BIG} tensor"
        shape_reason = solver.not_applicable_reason(make_problem(direction, 1, 8, 16, 16, K, r, r, pad), handle.info)
        assert "2^31" in reason or shape_reason is not None, (solver.id, reason)   # else: out for its shape
    report.tally(*APPLICABILITY)


def test_small_problems_keep_32_bit_offsets():
    problem = make_problem(Direction.FORWARD, 2, 4, 8, 8, 4, 3, 3, 1)
    assert dict(NAIVE.solution(problem, {"WG": 64}).launches[0].spec.defines)["INDEX_T"] == "int"


@pytest.mark.parametrize("direction", list(Direction))
def test_the_64_bit_naive_kernels_are_right(handle, direction, monkeypatch, report):
    """The long-offset code path on small random problems (pads, strides, dilations, groups)."""
    monkeypatch.setattr(naive, "WIDE_INDEX_FROM", 0)
    rng = np.random.default_rng(int(direction))
    for i in range(3):
        problem = random_problem(rng, direction)
        assert dict(NAIVE.solution(problem, {"WG": 64}).launches[0].spec.defines)["INDEX_T"] == "long"
        check_solution(handle, NAIVE, problem, {"WG": 64}, seed=i)
    report.tally(*WIDE, repetitions=3)


# -- on a device with the memory: one > 2^31-element tensor per direction ------------------------------------
def _host_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


@pytest.fixture(scope="module")
def big_handle(handle):
    nbytes = BIG[0] * BIG[1] * BIG[2] * BIG[3] * 4
    if handle.info.max_alloc_bytes < nbytes or handle.info.global_mem_bytes < 3 * nbytes:
        pytest.skip(f"the device cannot hold {nbytes} bytes twice over ({handle.info.name})")
    if _host_memory() < 6 * nbytes:
        pytest.skip("not enough host memory for the big tensors and their checks")
    return handle


def _random(shape, seed) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def _sampled_error(got: np.ndarray, expect_at, shape, count=512, seed=0) -> float:
    """Hybrid error against float64 at count random positions and the last ones (where offsets are largest)."""
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    flat = [int(i) for i in rng.integers(0, size, count)] + [size - 1 - i for i in range(8)]
    worst = 0.0
    for index in flat:
        position = np.unravel_index(index, shape)
        expected = expect_at(position)
        worst = max(worst, abs(float(got[position]) - expected) / (1 + abs(expected)))
    return worst


@pytest.mark.bigmem
def test_forward_reads_an_input_past_2_31_elements(big_handle, report):
    handle, problem = big_handle, _big_problem(Direction.FORWARD)
    x, w = _random(BIG, 1), _random((K, BIG[1], 1, 1), 2)
    xd, wd, yd = problem.x, problem.w, problem.y
    dx, dw = handle.to_device(x), handle.to_device(w)
    dy = handle.to_device(np.full(yd.dims, np.nan, np.float32))
    found = miopy.find_convolution(handle, xd, wd, problem.conv, tensors={"x": dx, "w": dw, "y": dy})
    assert [r.solver_id for r in found] == [NAIVE.id], (found, found.skipped)
    dy = handle.to_device(np.full(yd.dims, np.nan, np.float32))
    miopy.convolution_forward(handle, xd, dx, wd, dw, problem.conv, yd, dy, algo=found[0])
    got = dy.get()
    assert not np.isnan(got).any()
    w64 = w[:, :, 0, 0].astype(np.float64)
    error = _sampled_error(got, lambda at: float(w64[at[1]] @ x[0, :, at[2], at[3]].astype(np.float64)), yd.dims)
    assert error <= reference.tolerance(NAIVE, problem), error
    report.tally(*BIG_FORWARD)


@pytest.mark.bigmem
def test_backward_data_writes_an_output_past_2_31_elements_through_a_64_bit_blend(big_handle, report):
    handle, problem = big_handle, _big_problem(Direction.BACKWARD_DATA)
    dy, w = _random(problem.y.dims, 3), _random((K, BIG[1], 1, 1), 4)
    d_dy, d_w = handle.to_device(dy), handle.to_device(w)
    d_dx = handle.to_device(np.full(BIG, np.nan, np.float32))
    algo = miopy.ConvAlgoPerf(NAIVE.id, "naive", 1.0, 0, {"WG": 256})
    miopy.convolution_backward_data(handle, problem.y, d_dy, problem.w, d_w, problem.conv, problem.x, d_dx,
                                    algo=algo, alpha=2.0)   # alpha: the result goes through the blend kernel
    got = d_dx.get()
    del d_dx
    assert not np.isnan(got).any()
    w64, dy64 = w[:, :, 0, 0].astype(np.float64), dy[0].astype(np.float64)
    error = _sampled_error(got, lambda at: 2.0 * float(w64[:, at[1]] @ dy64[:, at[2], at[3]]), BIG)
    assert error <= reference.tolerance(NAIVE, problem), error
    report.tally(*BIG_DATA)


@pytest.mark.bigmem
def test_backward_weights_reduces_an_input_past_2_31_elements(big_handle, report):
    handle, problem = big_handle, _big_problem(Direction.BACKWARD_WEIGHTS)
    x, dy = _random(BIG, 5), _random(problem.y.dims, 6)
    d_x, d_dy = handle.to_device(x), handle.to_device(dy)
    d_dw = handle.to_device(np.full(problem.w.dims, np.nan, np.float32))
    algo = miopy.ConvAlgoPerf(NAIVE.id, "naive", 1.0, 0, {"WG": 64})
    miopy.convolution_backward_weights(handle, problem.y, d_dy, problem.x, d_x, problem.conv, problem.w, d_dw,
                                       algo=algo)
    got = d_dw.get()
    dy64 = dy[0].reshape(K, -1).astype(np.float64)
    plane = BIG[2] * BIG[3]
    error = _sampled_error(got, lambda at: float(dy64[at[0]] @ x[0, at[1]].reshape(plane).astype(np.float64)),
                           problem.w.dims, count=64)
    assert error <= reference.tolerance(NAIVE, problem), error
    report.tally(*BIG_WEIGHTS)


def test_find_and_the_calls_refuse_what_the_device_cannot_hold_without_allocating(handle, report):
    """Where the device is smaller than the big tensors (CI's CPU device), the same calls are refused with
    OutOfResources before anything is allocated; where it is not, the bigmem tests above run them."""
    problem = _big_problem(Direction.FORWARD)
    if problem.x.nbytes <= handle.info.max_alloc_bytes:
        pytest.skip("this device can hold the big tensor")
    with pytest.raises(miopy.OutOfResources, match="largest allocation"):
        miopy.find_convolution(handle, problem.x, problem.w, ConvDesc())
    with pytest.raises(miopy.OutOfResources, match="largest allocation"):
        handle.empty(BIG)
    assert TensorDesc("FP32", BIG).nbytes == problem.x.nbytes
    report.tally(*TOO_BIG, repetitions=2)


# -- every other family: its solvers and its solver-less plans ------------------------------------------------
FAMILIES = ("problems of every other family with a tensor past 2^31 elements (descriptors only): "
            + ", ".join(f.name for f in FAMILIES_LIST if f.name != "conv")
            + "; activation, set / scale / transform tensor, the unfused bias and the ONNX epilogue",
            "every solver not applicable, its reason the 32-bit index range; the solver-less plans NotSupported "
            "with that reason, before anything is allocated", TEST)
BIG_T = TensorDesc("FP32", (1, 16, 8192, 16385))   # 2^31 + 2^17 elements, 16 channels (short softmax rows)


def test_every_other_familys_solvers_state_their_index_range(handle, report):
    """Every family but convolution (whose big tensors the tests above run), every direction and mode posed on
    BIG_T (its samples.problems_on): refused as a problem for the index range, or every solver not applicable,
    for the index range unless it refuses the same problem on a small tensor too (out for its mode)."""
    small_t, count = TensorDesc("FP32", (2, 16, 4, 4)), 0
    for family in FAMILIES_LIST:
        if family.name == "conv":
            continue
        samples = family.module("samples")
        try:
            problems = samples.problems_on(BIG_T)
        except miopy.NotSupported as exc:   # refused as a problem (batch norm, dropout): the same reason
            assert "2^31" in str(exc), (family.name, exc)
            count += 1
            continue
        for problem, small in zip(problems, samples.problems_on(small_t), strict=True):
            for solver in problem.registry.ALL:
                reason = solver.not_applicable_reason(problem, handle.info)
                assert reason is not None, f"{family.name}: {solver.id} claims {problem.key()}"
                shape_reason = solver.not_applicable_reason(small, handle.info)
                assert "2^31" in reason or shape_reason is not None, (family.name, solver.id, reason)
            count += 1
    report.tally(*FAMILIES, repetitions=count)


def test_solverless_plans_refuse_past_2_31_elements_before_allocating(handle, monkeypatch, report):
    import pyopencl as cl
    monkeypatch.setattr(cl, "Buffer", None)   # any allocation would fail loudly
    bias = TensorDesc("FP32", (1, BIG_T.dims[1], 1, 1))
    calls = [lambda: miopy.activation_forward(handle, "relu", 0.0, 0.0, 0.0, BIG_T, None, BIG_T, None),
             lambda: miopy.activation_backward(handle, "relu", 0.0, 0.0, 0.0, BIG_T, None, BIG_T, None, BIG_T, None,
                                               BIG_T, None),
             lambda: miopy.set_tensor(handle, BIG_T, None, 1.0), lambda: miopy.scale_tensor(handle, BIG_T, None, 1.0),
             lambda: miopy.transform_tensor(handle, 1.0, BIG_T, None, 0.0, BIG_T, None),
             lambda: miopy.convolution_forward_bias(handle, bias, None, BIG_T, None)]
    for call in calls:
        with pytest.raises(miopy.NotSupported, match="2\\^31"):
            call()
    report.tally(*FAMILIES, repetitions=len(calls))
