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


# Issue 16: sums whose rounding does not grow with the reduction. 262144 terms per weight over 288 weights
# (4 -> 8 channels; depthwise 16 channels), measured as rms(error) / (u * rms(gradient)), u = 2^-24: about
# sqrt(B / 6) for sums that round like B-term running sums, ~2.5 for a pairwise sum. Before the compensated
# register blocks (types.h COMPENSATED_ADD) ConvDirectLocal and ConvIm2colGemm summed their 4096-term split
# chunks directly (19 units), ConvCpuGemm whole rows and then the rows (10.8), ConvCpuDirect rows, 32-row
# blocks and the blocks (3.3), ConvDepthwise whole shares (20.5); the Winograd GEMMs ran 256-tile blocks beside a plain
# running total and added split partials in blocks of 16 (8.7 and 35).
LONG = make_problem(Direction.BACKWARD_WEIGHTS, 4, 4, 256, 256, 8, 3, 3, pad=1)
LONG_DW = make_problem(Direction.BACKWARD_WEIGHTS, 4, 16, 256, 256, 16, 3, 3, pad=1, groups=16)
# measured under PoCL: 2.6-3.2 (1.5-1.8 for the CPU solvers' 16- and 32-term lane blocks and the naive kernel's 32-term
# blocks, which beat its old 16-fold cascade, 2.5); Winograd 4.6 and 19
UNITS = {"ConvCpuDirect": 2.5, "ConvCpuGemm": 2.5, "ConvDirectNaive": 2.3,
         "ConvWinograd3x3F2WrW": 6.0, "ConvWinograd3x3F4WrW": 26.0}   # transforms round too (docs/notes/performance.md)


def sum_units(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(got - want)) / np.mean(np.square(want))) / 2.0 ** -24)


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda s: s.id)
def test_long_reduction_rounds_like_a_short_sum(handle, solver):
    problem = LONG_DW if solver.id == "ConvDepthwise" else LONG
    if not solver.is_applicable(problem, handle.info):
        pytest.skip(solver.not_applicable_reason(problem, handle.info))
    t = random_tensors(problem, seed=21)
    got = run_solution(handle, solver.solution(problem, solver.default_params(problem, handle.info)), problem, t)
    units = sum_units(got, expected(problem, t))
    assert units <= UNITS.get(solver.id, 4.0), f"{solver.id}: {units:.1f} units over {problem.reduction_length()} terms"
