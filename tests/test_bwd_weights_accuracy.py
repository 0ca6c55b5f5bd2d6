"""Backward-weights on a long reduction: every solver that applies sums 262144 terms per weight (N=1,
1 -> 2 channels, 3x3, 512x512) and stays within 3e-6 of float64 relative to the largest weight gradient
(split partial sums, blocked accumulation, fixed-order second passes; plain running sums reach 1e-5),
and gives the same bits twice."""
import numpy as np
import pytest

from miopy.conv import registry
from miopy.conv.problem import Direction
from tests.helpers import expected, make_problem, random_tensors, run_solution

PROBLEM = make_problem(Direction.BACKWARD_WEIGHTS, 1, 1, 512, 512, 2, 3, 3, pad=1)
SOLVERS = [s for s in registry.ALL if Direction.BACKWARD_WEIGHTS in s.directions]


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda s: s.id)
def test_long_reduction_stays_accurate(handle, solver):
    if not solver.is_applicable(PROBLEM, handle.info):
        pytest.skip(solver.not_applicable_reason(PROBLEM, handle.info))
    assert PROBLEM.reduction_length() == 512 * 512
    t = random_tensors(PROBLEM, seed=11)
    solution = solver.solution(PROBLEM, solver.default_params(PROBLEM, handle.info))
    got, again = (run_solution(handle, solution, PROBLEM, t) for _ in range(2))
    want = expected(PROBLEM, t)
    relative = np.abs(got - want).max() / np.abs(want).max()
    assert relative <= 3e-6, f"{solver.id}: relative error {relative:.2e} over {PROBLEM.reduction_length()} terms"
    assert got.tobytes() == again.tobytes()


def test_direct_unsplit_long_reduction_sums_in_register_blocks(handle):
    """ConvDirectLocal with SPLIT=1 (a perf-DB record may hold one) sums 262144 terms in one work-group: the
    kernel then keeps 256-term blocks beside a running total, and the error stays as small as split sums'."""
    solver = registry.get("ConvDirectLocal")
    params = {**solver.default_params(PROBLEM, handle.info), "SPLIT": 1}
    solution = solver.solution(PROBLEM, params)
    assert dict(solution.launches[0].spec.defines)["SUM_STEPS"] != "0"
    t = random_tensors(PROBLEM, seed=12)
    got, want = run_solution(handle, solution, PROBLEM, t), expected(PROBLEM, t)
    assert np.abs(got - want).max() / np.abs(want).max() <= 3e-6


def test_im2col_unsplit_long_reduction_sums_in_register_blocks(handle):
    """ConvIm2colGemm with SPLIT_K=1: the GEMM's 262144-long inner chunk takes gemm.cl's blocked path."""
    solver = registry.get("ConvIm2colGemm")
    params = {**solver.default_params(PROBLEM, handle.info), "SPLIT_K": 1}
    solution = solver.solution(PROBLEM, params)
    assert any(dict(launch.spec.defines).get("SUM_STEPS", "0") != "0" for launch in solution.launches)
    t = random_tensors(PROBLEM, seed=13)
    got, want = run_solution(handle, solution, PROBLEM, t), expected(PROBLEM, t)
    assert np.abs(got - want).max() / np.abs(want).max() <= 3e-6
