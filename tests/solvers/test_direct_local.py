"""ConvDirectLocal beyond the registry conformance test: edges, groups, strided backward-data,
deterministic split backward-weights, and device limits checked without compiling."""
import dataclasses

import numpy as np
import pytest

from miopy.accuracy import max_error
from miopy.conv.problem import Direction
from miopy.conv.solvers.direct_local import ConvDirectLocal, gemm_shape, max_split
from miopy.device import DeviceInfo
from tests.helpers import check_solution, expected, make_problem, random_problem, random_tensors, run_solution

SOLVER = ConvDirectLocal()
H100 = DeviceInfo("NVIDIA CUDA", "NVIDIA Corporation", "NVIDIA H100", "580", "ALL | GPU", 132, 48 << 10, 1024,
                  (1024, 1024, 64), 80 << 30, False)
RAGGED = {"M_DIM": 4, "N_DIM": 8, "M_PER": 2, "N_PER": 2, "K_BLK": 8, "VEC": 2, "DOUBLE_BUF": True,
          "CHANNEL_BLOCKS": False, "SPLIT": 1}


@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
def test_sizes_that_are_not_multiples_of_the_tiles(handle, direction):
    """8x16 tiles and 8-deep slices on GEMMs of 13 or 5 rows, 63 or more columns, an inner dimension of
    45 or more, stepping through the flat channel x tap index."""
    problem = make_problem(direction, 1, 5, 7, 9, 13, 3, 3, pad=1)
    shape = gemm_shape(problem)
    assert shape.m % 8 and shape.n % 16 and shape.k % 8
    assert SOLVER.is_valid(problem, RAGGED, handle.info), SOLVER.invalid_reason(problem, RAGGED, handle.info)
    check_solution(handle, SOLVER, problem, RAGGED)


@pytest.mark.parametrize("direction", [Direction.FORWARD, Direction.BACKWARD_DATA], ids=lambda d: d.name)
def test_grouped_channel_blocks_with_ragged_channels(handle, direction):
    """3 groups of 5 input and 7 output channels: blocks of 8 channels are zero-padded; edges ragged."""
    problem = make_problem(direction, 2, 15, 6, 9, 21, 3, 3, pad=1, stride=(1, 2), groups=3)
    params = {**RAGGED, "CHANNEL_BLOCKS": True}
    assert gemm_shape(problem).n % 16
    assert SOLVER.is_valid(problem, params, handle.info), SOLVER.invalid_reason(problem, params, handle.info)
    check_solution(handle, SOLVER, problem, params)


def test_backward_data_stride_2_dilation_2(handle):
    """Taps that fall between outputs must read zero; odd sizes leave ragged edges."""
    problem = make_problem(Direction.BACKWARD_DATA, 2, 6, 11, 12, 5, 3, 3, pad=2, stride=2, dilation=2)
    check_solution(handle, SOLVER, problem, RAGGED)


def test_grouped_backward_weights_split_is_deterministic(handle):
    """4 partial sums over N*P*Q = 1125 (the last chunk ragged), 2 groups: same bits on every run."""
    problem = make_problem(Direction.BACKWARD_WEIGHTS, 5, 8, 15, 15, 10, 3, 3, pad=1, groups=2)
    assert max_split(problem) >= 4
    params = {**RAGGED, "SPLIT": 4}
    assert SOLVER.is_valid(problem, params, handle.info), SOLVER.invalid_reason(problem, params, handle.info)
    solution = SOLVER.solution(problem, params)
    assert len(solution.launches) == 2 and solution.workspace_bytes == SOLVER.workspace_bytes(problem)
    t = random_tensors(problem, seed=3)
    first, second = (run_solution(handle, solution, problem, t) for _ in range(2))
    assert first.tobytes() == second.tobytes()
    assert max_error(first, expected(problem, t)) <= 1e-4


def test_workspace_does_not_depend_on_params(handle):
    problem = make_problem(Direction.BACKWARD_WEIGHTS, 5, 8, 15, 15, 10, 3, 3, pad=1, groups=2)
    sizes = {SOLVER.solution(problem, p).workspace_bytes for p in SOLVER.sample_space(problem, handle.info, 20)}
    assert sizes == {SOLVER.workspace_bytes(problem)}


def test_device_limits_rejected_without_compiling(handle):
    problem = make_problem(Direction.FORWARD, 2, 8, 10, 10, 8, 3, 3, pad=1)
    small = dataclasses.replace(handle.info, local_mem_bytes=4096, max_work_group_size=32)
    before = handle.cache_stats()["compiled"]
    fits = {**RAGGED, "K_BLK": 4}
    assert SOLVER.is_valid(problem, fits, small), SOLVER.invalid_reason(problem, fits, small)
    too_much_local = {**RAGGED, "K_BLK": 16}           # 2 x (16 x (8 + 16 + 8) x 4 B x 2 buffers) > 4 KiB
    assert "local memory" in SOLVER.invalid_reason(problem, too_much_local, small)
    too_many_items = {**RAGGED, "M_DIM": 8}             # 64 work-items > 32
    assert "work-group" in SOLVER.invalid_reason(problem, too_many_items, small)
    too_many_sums = {**RAGGED, "M_DIM": 4, "N_DIM": 4, "M_PER": 8, "N_PER": 16}
    assert "sums per work-item" in SOLVER.invalid_reason(make_problem(Direction.FORWARD, 2, 8, 10, 10, 32, 3, 3),
                                                         too_many_sums, small)
    assert handle.cache_stats()["compiled"] == before


@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
def test_default_params_are_valid_everywhere(handle, direction):
    """Pure check over random problems on this device and on an H100's limits (nothing compiles)."""
    rng = np.random.default_rng(int(direction))
    for dev in (handle.info, H100):
        for _ in range(40):
            problem = random_problem(rng, direction)
            params = SOLVER.default_params(problem, dev)
            assert SOLVER.is_valid(problem, params, dev), (problem.key(), SOLVER.invalid_reason(problem, params, dev))


@pytest.mark.parametrize("layer", [(96, 27, 256, 5, 2), (256, 13, 384, 3, 1), (384, 13, 384, 3, 1),
                                   (384, 13, 256, 3, 1)])
def test_gpu_forward_defaults_on_alexnet_use_sgemm_tiles(layer):
    c, size, k, f, pad = layer
    problem = make_problem(Direction.FORWARD, 128, c, size, size, k, f, f, pad=pad)
    params = SOLVER.default_params(problem, H100)
    assert SOLVER.is_valid(problem, params, H100)
    assert (params["M_DIM"] * params["M_PER"], params["N_DIM"] * params["N_PER"]) == (128, 128)
    assert params["M_DIM"] * params["N_DIM"] == 256 and params["VEC"] == 4


class _FakeEpilogue:
    """Stands in for a fusion epilogue: extra defines and trailing kernel arguments."""

    args = ("bias",)

    def defines(self):
        return {"MIOPY_FUSED": 1, "FUSE_BIAS": 1}


def test_forward_epilogue_goes_to_the_kernel_that_writes_y(handle):
    problem = make_problem(Direction.FORWARD, 2, 8, 10, 10, 8, 3, 3, pad=1)
    (launch,) = SOLVER.solution(problem, SOLVER.default_params(problem, handle.info), _FakeEpilogue()).launches
    assert dict(launch.spec.defines)["FUSE_BIAS"] == "1" and launch.args == ("x", "w", "y", "bias")
