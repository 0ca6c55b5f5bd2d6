"""Winograd F(2x2,3x3) and F(4x4,3x3): edge tiles, pads, backward-data, strides, applicability, params."""
import dataclasses

import numpy as np
import pytest

from miopy.accuracy import max_error
from miopy.conv import reference
from miopy.conv.problem import ConvDesc, ConvProblem, Direction
from miopy.conv.solvers.winograd import ConvWinograd3x3F2, ConvWinograd3x3F4
from miopy.device import DeviceInfo
from miopy.tensor import TensorDesc
from tests.helpers import check_solution, make_problem, run_solution

SOLVERS = [ConvWinograd3x3F2(), ConvWinograd3x3F4()]
IDS = [s.id for s in SOLVERS]
H100 = DeviceInfo(platform="NVIDIA CUDA", vendor="NVIDIA Corporation", name="NVIDIA H100 80GB HBM3",
                  driver_version="550", device_type="GPU", compute_units=132, local_mem_bytes=48 * 1024,
                  max_work_group_size=1024, max_work_item_sizes=(1024, 1024, 64), global_mem_bytes=80 << 30,
                  fp16=False)


EDGE_CASES = [(Direction.FORWARD, 0), (Direction.FORWARD, 1), (Direction.FORWARD, 2),
              (Direction.BACKWARD_DATA, 0), (Direction.BACKWARD_DATA, 2)]


@pytest.mark.parametrize("solver", SOLVERS, ids=IDS)
@pytest.mark.parametrize("direction,pad", EDGE_CASES, ids=[f"{d.name}-pad{p}" for d, p in EDGE_CASES])
def test_partial_edge_tiles_and_pads(handle, solver, direction, pad):
    """Odd H and W that leave partial tiles at the bottom and right edges, in both directions (backward-data
    with pad p runs the forward kernels with pad 2 - p)."""
    problem = make_problem(direction, 2, 5, 7, 9 + pad, 6, 3, 3, pad)
    check_solution(handle, solver, problem, solver.default_params(problem, handle.info))


@pytest.mark.parametrize("direction", [Direction.FORWARD, Direction.BACKWARD_DATA], ids=lambda d: d.name)
def test_f4_error_at_64_channels_as_documented(handle, direction):
    """F4's documented error at C = K = 64, pad 1, standard normal inputs (1.4e-4), with some margin: the
    error grows with the reduction length, and a regression here shows long before the 5e-3 bound."""
    solver, problem = SOLVERS[1], make_problem(direction, 1, 64, 8, 8, 64, 3, 3, 1)
    err = check_solution(handle, solver, problem, solver.default_params(problem, handle.info))
    assert err <= 3e-4, f"{direction.name}: error {err:.3g} above the documented 1.4e-4"


@pytest.mark.parametrize("direction", [Direction.FORWARD, Direction.BACKWARD_DATA], ids=lambda d: d.name)
def test_strided_tensors(handle, direction):
    """x with padded rows (not packed): read as input going forward, written as output going backward."""
    n, c, h, w, k = 1, 3, 6, 7, 4
    x_desc = TensorDesc("FP32", (n, c, h, w), strides=(c * h * (w + 3), h * (w + 3), w + 3, 1))
    problem = ConvProblem.create(direction, x_desc, TensorDesc("FP32", (k, c, 3, 3)), ConvDesc(1))
    rng = np.random.default_rng(0)
    t = {"x": rng.standard_normal(x_desc.element_span).astype(np.float32),
         "w": rng.standard_normal(problem.w.dims).astype(np.float32),
         "y": rng.standard_normal(problem.y.dims).astype(np.float32)}
    solver = SOLVERS[1]
    got = run_solution(handle, solver.solution(problem, solver.default_params(problem, handle.info)), problem, t)
    view = lambda flat: np.lib.stride_tricks.as_strided(flat, x_desc.dims, [4 * s for s in x_desc.strides])
    if direction is Direction.FORWARD:
        err = max_error(got, reference.conv_forward(view(t["x"]), t["w"], pad=(1, 1)))
    else:
        err = max_error(view(got), reference.conv_backward_data(t["y"], t["w"], x_desc.dims, pad=(1, 1)))
    assert err <= solver.tolerance


@pytest.mark.parametrize("solver", SOLVERS, ids=IDS)
@pytest.mark.parametrize("shape,reason", [
    ((5, 5, 2, 1, 1, 1), "not 3x3"),
    ((3, 3, 1, 2, 1, 1), "stride"),
    ((3, 3, 2, 1, 2, 1), "dilation"),
    ((3, 3, 3, 1, 1, 1), "padding"),
    ((3, 3, 1, 1, 1, 2), "grouped"),
])
def test_not_applicable_with_reason(handle, solver, shape, reason):
    r, s, pad, stride, dilation, groups = shape
    problem = make_problem(Direction.FORWARD, 1, 4, 16, 16, 4, r, s, pad, stride, dilation, groups)
    assert reason in solver.not_applicable_reason(problem, handle.info)


def test_backward_weights_not_claimed(handle):
    problem = make_problem(Direction.BACKWARD_WEIGHTS, 1, 4, 8, 8, 4, 3, 3, 1)
    for solver in SOLVERS:
        assert "direction" in solver.not_applicable_reason(problem, handle.info)


@pytest.mark.parametrize("solver", SOLVERS, ids=IDS)
def test_gpu_defaults_valid_and_workspace_independent_of_params(solver):
    for c, hw, k in ((64, 56, 64), (256, 56, 256), (512, 7, 512), (3, 5, 8)):
        problem = make_problem(Direction.FORWARD, 32, c, hw, hw, k, 3, 3, 1)
        params = solver.default_params(problem, H100)
        assert solver.is_valid(problem, params, H100), solver.invalid_reason(problem, params, H100)
        sizes = {solver.solution(problem, p).workspace_bytes for p in solver.sample_space(problem, H100, 8)}
        assert sizes == {solver.workspace_bytes(problem)}
    vgg = make_problem(Direction.FORWARD, 32, 256, 56, 56, 256, 3, 3, 1)
    assert solver.default_params(vgg, H100)["TILE_M"] == 128


def test_device_limits_reject_params(handle):
    solver, problem = SOLVERS[0], make_problem(Direction.FORWARD, 1, 8, 8, 8, 8, 3, 3, 1)
    big = {"TILE_M": 128, "TILE_N": 128, "WORK_M": 4, "WORK_N": 4, "K_BLK": 16}
    small = dataclasses.replace(handle.info, local_mem_bytes=16 * 1024, max_work_group_size=256)
    assert "local memory" in solver.invalid_reason(problem, {**big, "WORK_M": 8, "WORK_N": 8}, small)
    assert "work-group" in solver.invalid_reason(problem, {**big, "K_BLK": 8}, small)
    assert solver.is_valid(problem, solver.default_params(problem, small), small)


def test_epilogue_goes_to_the_output_transform(handle):
    class FakeEpilogue:
        args = ("bias",)

        def defines(self):
            return {"MIOPY_FUSED": 0}

    solver, problem = SOLVERS[1], make_problem(Direction.FORWARD, 1, 8, 8, 8, 8, 3, 3, 1)
    launches = solver.solution(problem, solver.default_params(problem, handle.info), FakeEpilogue()).launches
    assert launches[-1].spec.name == "wino_output_transform" and launches[-1].args[-1] == "bias"
    assert ("MIOPY_FUSED", "0") in launches[-1].spec.defines
    assert all("bias" not in launch.args for launch in launches[:-1])

