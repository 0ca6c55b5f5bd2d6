"""ConvCpuGemm beyond the registry-wide conformance test: the packed copies' edges (crop where pads exceed
the filter's reach in backward-data, ragged pixel and channel tiles), strides and dilations, its
applicability limits and defaults, and the heuristic's order between the two CPU solvers.
"""
import dataclasses

import pytest

from miopy.conv.heuristic import rank
from miopy.conv.problem import Direction
from miopy.conv.solvers.cpu_direct import ConvCpuDirect
from miopy.conv.solvers.cpu_gemm import ConvCpuGemm, forward_gemm
from tests.helpers import check_solution, make_problem

SOLVER = ConvCpuGemm()
# (n, c, h, w, k, r, s, pad, stride, dilation)
SHAPES = [
    (2, 5, 9, 11, 19, 3, 3, 1, 1, 1),     # ragged channel vectors and pixel tiles
    (1, 6, 13, 12, 8, 3, 3, 2, 1, 2),     # dilation
    (1, 3, 15, 15, 16, 5, 5, 3, 1, 1),    # pad 3 > reach - pad: backward-data crops dy
    (2, 12, 7, 7, 24, 1, 1, 0, 1, 1),     # 1x1 on a 7x7 map
    (1, 8, 14, 17, 12, 3, 3, 1, 2, 1),    # stride 2 (forward, backward-weights)
]
CASES = [(d, s) for d in Direction for s in SHAPES
         if d is not Direction.BACKWARD_DATA or s[8] == 1]


@pytest.mark.parametrize("direction,shape", CASES, ids=[f"{d.letter}-{SHAPES.index(s)}" for d, s in CASES])
def test_tiles_match_reference(cpu_handle, direction, shape):
    handle = cpu_handle
    problem = make_problem(direction, *shape)
    assert SOLVER.is_applicable(problem, handle.info), SOLVER.not_applicable_reason(problem, handle.info)
    space = list(SOLVER.search_space(problem, handle.info))
    picks = [SOLVER.default_params(problem, handle.info), space[-1]]   # the default and the last grid point
    for i, params in enumerate(picks):
        check_solution(handle, SOLVER, problem, params, seed=i)


def test_backward_data_is_the_transposed_forward():
    g = forward_gemm(make_problem(Direction.BACKWARD_DATA, 1, 3, 15, 15, 16, 5, 5, 3))
    assert (g.ci, g.co, g.flip, g.top, g.left, g.po, g.qo) == (16, 3, True, 1, 1, 15, 15)
    g = forward_gemm(make_problem(Direction.FORWARD, 1, 3, 15, 15, 16, 5, 5, 3))
    assert (g.ci, g.co, g.flip, g.top) == (3, 16, False, 3)


def test_applicability_limits(handle):
    cpu = dataclasses.replace(handle.info, device_type="CPU")     # described: the checks run on any device
    strided = make_problem(Direction.BACKWARD_DATA, 1, 8, 14, 17, 12, 3, 3, 1, 2)
    assert "stride > 1" in SOLVER.not_applicable_reason(strided, cpu)
    grouped = make_problem(Direction.FORWARD, 1, 8, 8, 8, 8, 3, 3, 1, 1, 1, 2)
    assert "grouped" in SOLVER.not_applicable_reason(grouped, cpu)
    gpu = dataclasses.replace(handle.info, device_type="GPU")
    assert "not CPU" in SOLVER.not_applicable_reason(make_problem(Direction.FORWARD, *SHAPES[0]), gpu)
    weights = make_problem(Direction.BACKWARD_WEIGHTS, *SHAPES[0])
    assert "does not divide" in SOLVER.invalid_reason(weights, {"VW": 8, "T": 8}, cpu)


@pytest.mark.parametrize("direction", list(Direction))
def test_defaults_are_valid_on_network_layers(handle, direction):
    for shape in [(1, 64, 56, 56, 64, 3, 3, 1), (8, 3, 224, 224, 64, 7, 7, 3, 2), (1, 512, 7, 7, 512, 3, 3, 1),
                  (1, 1024, 14, 14, 256, 1, 1, 0), (1, 256, 56, 56, 512, 1, 1, 0, 2)]:
        problem = make_problem(direction, *shape)
        if SOLVER.is_applicable(problem, handle.info):
            params = SOLVER.default_params(problem, handle.info)
            assert SOLVER.is_valid(problem, params, handle.info), (problem.key(), params)


@pytest.mark.parametrize("direction,shape,first", [
    (Direction.FORWARD, (1, 16, 8, 8, 16, 3, 3, 1), "ConvCpuDirect"),
    (Direction.BACKWARD_DATA, (1, 16, 8, 8, 16, 3, 3, 1), "ConvCpuDirect"),
    (Direction.BACKWARD_WEIGHTS, (1, 16, 8, 8, 16, 3, 3, 1), "ConvCpuGemm"),
    (Direction.BACKWARD_WEIGHTS, (8, 64, 56, 56, 64, 3, 3, 1), "ConvCpuDirect"),   # x's copy outgrows the cache
    (Direction.BACKWARD_WEIGHTS, (1, 3, 32, 32, 16, 3, 3, 1), "ConvCpuDirect"),    # few channels per vector
])
def test_heuristic_order_between_the_cpu_solvers(direction, shape, first):
    problem = make_problem(direction, *shape)
    assert [s.id for s in rank(problem, [ConvCpuDirect(), SOLVER])][0] == first
    assert [s.id for s in rank(problem, [SOLVER, ConvCpuDirect()])][0] == first
