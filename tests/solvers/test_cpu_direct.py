"""ConvCpuDirect beyond the registry-wide conformance test: every vector width on the paths the kernels
branch on (padded rows stored by stride phase, strides 1-3, dilation, groups, 1x1 planes as one row with a
ragged tail, backward-data phases, backward-weights tap blocks), its device class, and its defaults.
"""
import dataclasses

import pytest

from miopy.conv.heuristic import rank
from miopy.conv.problem import Direction
from miopy.conv.solvers.cpu_direct import ConvCpuDirect, flattens, padded_inputs
from miopy.conv.solvers.naive import ConvDirectNaive
from miopy.find import get_solutions
from tests.helpers import check_solution, make_problem

SOLVER = ConvCpuDirect()
# (n, c, h, w, k, r, s, pad, stride, dilation, groups)
SHAPES = [
    (2, 6, 9, 19, 12, 3, 3, 1, 1, 1, 1),     # padded, a ragged last vector
    (1, 4, 13, 23, 8, 3, 3, 1, 2, 1, 1),     # stride 2: two phases
    (1, 3, 17, 21, 6, 5, 5, 2, 3, 1, 1),     # stride 3, 5x5
    (1, 4, 11, 14, 4, 3, 3, 2, 1, 2, 2),     # dilation, groups
    (2, 12, 5, 7, 8, 1, 1, 0, 1, 1, 1),      # 1x1: each plane one row of 35 columns
    (1, 8, 9, 9, 16, 1, 1, 0, 2, 1, 1),      # 1x1 stride 2: padded
]
CASES = [(d, shape) for d in Direction for shape in SHAPES]


@pytest.mark.parametrize("direction,shape", CASES, ids=[f"{d.letter}-{SHAPES.index(s)}" for d, s in CASES])
def test_vector_widths_and_tiles_match_reference(cpu_handle, direction, shape):
    handle = cpu_handle
    problem = make_problem(direction, *shape)
    assert SOLVER.is_applicable(problem, handle.info)
    checked = 0
    space = list(SOLVER.search_space(problem, handle.info))
    widths = {p["VW"] for p in space}
    wide = 16 if 16 in widths and (SHAPES.index(shape) + int(direction)) % 2 else 8   # alternate over the cases
    for vw, pick in ((wide, 0), (4, -1)):   # the first tile valid at one width, the last at the narrowest
        points = [p for p in space if p["VW"] == vw]
        if points:
            check_solution(handle, SOLVER, problem, points[pick], seed=vw)
            checked += 1
    assert checked >= 2


def test_layout_of_the_padded_copies():
    assert flattens(make_problem(Direction.FORWARD, 1, 8, 5, 7, 8, 1, 1))
    assert not flattens(make_problem(Direction.FORWARD, 1, 8, 5, 7, 8, 1, 1, 0, 2))
    assert padded_inputs(make_problem(Direction.BACKWARD_WEIGHTS, 1, 8, 5, 7, 8, 1, 1)) == ()
    x_rows, dy_rows = padded_inputs(make_problem(Direction.BACKWARD_WEIGHTS, 2, 4, 13, 23, 8, 3, 3, 1, 2))
    assert (x_rows.role, x_rows.phases, x_rows.width % 2, x_rows.planes) == ("x", 2, 0, 8)
    assert (dy_rows.role, dy_rows.offset, dy_rows.width % 16) == ("y", x_rows.elements, 0)
    (rows,) = padded_inputs(make_problem(Direction.BACKWARD_DATA, 1, 4, 13, 23, 8, 3, 3, 1, 2))
    assert (rows.role, rows.phases, rows.left) == ("y", 1, 1)


def test_invalid_tiles_are_rejected(handle):
    problem = make_problem(Direction.FORWARD, 1, 6, 9, 19, 12, 3, 3, 1)
    assert "does not divide" in SOLVER.invalid_reason(problem, {"VW": 8, "KT": 8, "ST": 1}, handle.info)
    assert "backward-weights only" in SOLVER.invalid_reason(problem, {"VW": 8, "KT": 4, "ST": 3}, handle.info)
    wide = make_problem(Direction.FORWARD, 1, 6, 9, 5, 12, 3, 3, 1)
    assert "covers more than" in SOLVER.invalid_reason(wide, {"VW": 16, "KT": 4, "ST": 1}, handle.info)
    weights = make_problem(Direction.BACKWARD_WEIGHTS, 1, 6, 9, 19, 12, 3, 3, 1)
    assert "accumulators" in SOLVER.invalid_reason(weights, {"VW": 16, "KT": 6, "ST": 3}, handle.info)


def test_applies_to_cpus_only(handle):
    problem = make_problem(Direction.FORWARD, 1, 16, 8, 8, 16, 3, 3, 1)
    gpu = dataclasses.replace(handle.info, device_type="GPU")
    assert "not CPU" in SOLVER.not_applicable_reason(problem, gpu)
    if "CPU" in handle.info.device_type:
        assert SOLVER.is_applicable(problem, handle.info)


@pytest.mark.parametrize("direction", list(Direction))
def test_defaults_are_valid_on_network_layers(handle, direction):
    for shape in [(1, 64, 56, 56, 64, 3, 3, 1), (8, 3, 224, 224, 64, 7, 7, 3, 2), (1, 256, 14, 14, 256, 3, 3, 1),
                  (1, 1024, 14, 14, 256, 1, 1, 0), (1, 256, 56, 56, 512, 1, 1, 0, 2), (1, 512, 7, 7, 512, 3, 3, 1),
                  (1, 32, 112, 112, 32, 3, 3, 1, 1, 1, 32)]:
        problem = make_problem(direction, *shape)
        params = SOLVER.default_params(problem, handle.info)
        assert SOLVER.is_valid(problem, params, handle.info), (problem.key(), params)


def test_heuristic_puts_the_cpu_solver_first():
    problem = make_problem(Direction.FORWARD, 1, 16, 8, 8, 16, 3, 3, 1)
    assert [s.id for s in rank(problem, [ConvDirectNaive(), SOLVER])] == [SOLVER.id, "ConvDirectNaive"]


def test_immediate_mode_picks_it_on_a_cpu(fresh_dbs, handle):
    if "CPU" not in handle.info.device_type:
        pytest.skip("needs a CPU device")
    problem = make_problem(Direction.BACKWARD_DATA, 1, 32, 14, 14, 32, 1, 1)
    assert get_solutions(handle, problem)[0].solver_id == SOLVER.id
