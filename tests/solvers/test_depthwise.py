"""ConvDepthwise beyond the registry conformance test: channel multipliers with stride and dilation, both
window modes, split backward-weights (deterministic, accurate), reasons, and the heuristic's choice."""
import dataclasses

import pytest

from miopy.accuracy import max_error
from miopy.conv import heuristic, registry
from miopy.conv.problem import Direction
from miopy.conv.solvers.depthwise import ConvDepthwise, max_split
from miopy.device import DeviceInfo
from tests.helpers import check_solution, expected, make_problem, random_tensors, run_solution

SOLVER = ConvDepthwise()
H100 = DeviceInfo("NVIDIA CUDA", "NVIDIA Corporation", "NVIDIA H100", "580", "ALL | GPU", 132, 48 << 10, 1024,
                  (1024, 1024, 64), 80 << 30, False)
TILED = {"TILE_H": 2, "TILE_W": 2, "WG_X": 8, "WG_Y": 2, "USE_LOCAL": False, "SPLIT": 1}


@pytest.mark.parametrize("use_local", [False, True])
@pytest.mark.parametrize("direction", [Direction.FORWARD, Direction.BACKWARD_DATA], ids=lambda d: d.name)
def test_multiplier_stride_dilation_ragged_tiles(handle, direction, use_local):
    """3 channels x multiplier 3, stride (2, 1), dilation (1, 2), uneven pads: 2x2 tiles leave ragged edges,
    and backward-data skips taps that fall between strided outputs."""
    problem = make_problem(direction, 2, 3, 13, 11, 9, 3, 3, pad=(2, 0, 1, 2), stride=(2, 1), dilation=(1, 2),
                           groups=3)
    params = {**TILED, "USE_LOCAL": use_local}
    assert SOLVER.is_valid(problem, params, handle.info), SOLVER.invalid_reason(problem, params, handle.info)
    check_solution(handle, SOLVER, problem, params)


def test_backward_weights_split_is_deterministic(handle):
    """8 work-groups per channel over 2*21 rows (the last chunk ragged), multiplier 2: same bits twice."""
    problem = make_problem(Direction.BACKWARD_WEIGHTS, 2, 4, 21, 19, 8, 3, 3, pad=1, groups=4)
    assert max_split(problem) >= 8
    params = {"TILE_H": 1, "TILE_W": 4, "WG_X": 32, "WG_Y": 1, "USE_LOCAL": False, "SPLIT": 8}
    solution = SOLVER.solution(problem, params)
    assert len(solution.launches) == 2 and solution.workspace_bytes == SOLVER.workspace_bytes(problem) > 0
    t = random_tensors(problem, seed=5)
    first, second = (run_solution(handle, solution, problem, t) for _ in range(2))
    assert first.tobytes() == second.tobytes()
    assert max_error(first, expected(problem, t)) <= 1e-5


def test_backward_weights_long_reduction_stays_accurate(handle):
    """65536 terms per weight (N=1, 256x256): tree and split sums keep the error near a single rounding."""
    problem = make_problem(Direction.BACKWARD_WEIGHTS, 1, 2, 256, 256, 2, 3, 3, pad=1, groups=2)
    params = SOLVER.default_params(problem, handle.info)
    err = check_solution(handle, SOLVER, problem, params)
    assert err <= 1e-5


def test_applicability_reasons(handle):
    grouped = make_problem(Direction.FORWARD, 1, 8, 8, 8, 8, 3, 3, pad=1, groups=4)
    assert "not depthwise" in SOLVER.not_applicable_reason(grouped, handle.info)
    large = make_problem(Direction.FORWARD, 1, 4, 12, 12, 4, 9, 9, groups=4)
    assert "taps" in SOLVER.not_applicable_reason(large, handle.info)


def test_invalid_params_have_reasons():
    fwd = make_problem(Direction.FORWARD, 64, 32, 112, 112, 32, 3, 3, pad=1, groups=32)
    assert "backward-weights only" in SOLVER.invalid_reason(fwd, {**TILED, "SPLIT": 2}, H100)
    wide = {**TILED, "TILE_W": 8, "WG_X": 256, "WG_Y": 1}
    assert "larger than" in SOLVER.invalid_reason(fwd, wide, H100)
    small_local = dataclasses.replace(H100, local_mem_bytes=4096)
    tall = {**TILED, "TILE_H": 4, "WG_X": 16, "WG_Y": 16, "USE_LOCAL": True}
    assert "local memory" in SOLVER.invalid_reason(fwd, tall, small_local)
    wgrad = fwd.with_direction(Direction.BACKWARD_WEIGHTS)
    assert "TILE_H=1" in SOLVER.invalid_reason(wgrad, TILED, H100)


@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
def test_gpu_defaults_are_valid_on_mobilenet(direction):
    """MobileNet's first depthwise layer on an H100 (no compile): defaults valid, work for every unit."""
    problem = make_problem(direction, 64, 32, 112, 112, 32, 3, 3, pad=1, groups=32)
    params = SOLVER.default_params(problem, H100)
    assert SOLVER.is_valid(problem, params, H100), SOLVER.invalid_reason(problem, params, H100)
    if direction is Direction.BACKWARD_WEIGHTS:
        assert params["SPLIT"] * problem.k >= 2 * H100.compute_units


def test_heuristic_prefers_depthwise(handle):
    problem = make_problem(Direction.FORWARD, 2, 16, 12, 12, 32, 3, 3, pad=1, groups=16)
    order, rule = heuristic.preference(problem)
    assert order[0] == "depthwise" and "depthwise" in rule
    applicable = [s for s in registry.ALL if s.is_applicable(problem, handle.info) and s.device_class is None]
    assert heuristic.rank(problem, applicable)[0].id == SOLVER.id   # (a CPU's own solvers come first on a CPU)
    plain = make_problem(Direction.FORWARD, 2, 16, 12, 12, 32, 3, 3, pad=1, groups=1)
    assert heuristic.preference(plain)[0][0] != "depthwise"
