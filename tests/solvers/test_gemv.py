"""ConvGemv1x1 beyond the conformance test's two classifiers: every batch size up to 64 images (one image
group and several, the last groups short or empty), C not a multiple of the lanes, the vectors or the staged
weight tiles, K not a multiple of ROWS, the bias + ReLU epilogue in FP32 and FP16, the same bits every run,
grid points rejected without compiling, defaults on a described H100, and immediate mode choosing it for a
classifier at N = 32.
"""
import numpy as np
import pyopencl as cl
import pytest

from miopy.accuracy import max_error
from miopy.activation import ActivationMode
from miopy.conv import heuristic_model, reference, registry
from miopy.conv.problem import Direction
from miopy.conv.solvers.gemv_1x1 import MAX_IMAGES, MAX_OUTS, STAGE_DEFAULT_REGS, ConvGemv1x1, images_per_group
from miopy.device import DeviceInfo
from miopy.find import get_solutions
from miopy.fusion.epilogue import Epilogue, apply_reference
from tests.helpers import check_solution, make_problem, random_tensors, run_solution, tolerance

SOLVER = ConvGemv1x1()
H100 = DeviceInfo("NVIDIA CUDA", "NVIDIA Corporation", "NVIDIA H100", "580", "ALL | GPU", 132, 48 << 10, 1024,
                  (1024, 1024, 64), 80 << 30, False)


def _p(rows: int, groups: int, wg: int, vec: int, stage: int) -> dict:
    return {"ROWS": rows, "IMAGE_GROUPS": groups, "WG": wg, "VEC": vec, "STAGE": stage}


def _fc(n: int, c: int, k: int, dtype: str = "FP32"):
    return make_problem(Direction.FORWARD, n, c, 1, 1, k, 1, 1, dtype=dtype)


@pytest.mark.parametrize("n", [1, 5, 8, 9, 16, 32, 33, 64])
def test_default_params_every_batch_size(handle, n):
    problem = _fc(n, 70, 13)                     # 70: no lane count divides it; 13: no ROWS > 1 divides it
    params = SOLVER.default_params(problem, handle.info)
    assert SOLVER.is_valid(problem, params, handle.info), SOLVER.invalid_reason(problem, params, handle.info)
    check_solution(handle, SOLVER, problem, params, seed=n)


@pytest.mark.parametrize("c,params", [
    (70, _p(2, 4, 64, 1, 0)),     # 9 images a group, the last 6; 16 lanes over 70
    (70, _p(8, 16, 128, 1, 0)),   # 3 images a group, groups 11-15 past N; rows past K
    (68, _p(16, 32, 256, 4, 0)),  # 2 images a group, the 17th with 1; 8 lanes x 4
    (68, _p(1, 2, 256, 4, 0)),    # 17 images a group, 128 lanes x 4 > C
    (68, _p(2, 4, 64, 4, 0)),     # 16 lanes x 4 channels: 68 = 64 + 4
    (68, _p(2, 4, 64, 4, 2)),     # one 128-channel tile, zeros past 68
    (1000, _p(8, 16, 128, 4, 4)),  # 7 tiles of 128 and 104; rows past K
    (1000, _p(16, 32, 256, 4, 8)),  # 4 float4s a work-item, 8 lanes
], ids=["short-group", "rows-past-k", "many-groups", "long-lanes", "vec-tail", "stage-one-tile", "stage-tail",
        "stage-deep"])
def test_image_groups_with_ragged_ends(handle, c, params):
    problem = _fc(33, c, 13)
    assert SOLVER.is_valid(problem, params, handle.info), SOLVER.invalid_reason(problem, params, handle.info)
    check_solution(handle, SOLVER, problem, params)


@pytest.mark.parametrize("stage", [0, 4])
def test_same_bits_every_run(handle, stage):
    problem = _fc(32, 300, 24)
    params = _p(4, 4, 128, 4, stage)
    t = random_tensors(problem, 5)
    solution = SOLVER.solution(problem, params)
    first = run_solution(handle, solution, problem, t)
    assert np.array_equal(first, run_solution(handle, solution, problem, t))


@pytest.mark.parametrize("dtype", ["FP32", "FP16"])
@pytest.mark.parametrize("n", [9, 32])
def test_bias_relu_epilogue(handle, dtype, n):
    problem = _fc(n, 152, 37, dtype)                 # the default loads 4 channels at a time
    epilogue = Epilogue(bias=True, activation=ActivationMode.RELU)
    rng = np.random.default_rng(n)
    host = {"bias": rng.standard_normal(problem.k).astype(problem.dtype.numpy), "activ_alpha": 0.0,
            "activ_beta": 0.0, "activ_gamma": 0.0}
    mf = cl.mem_flags
    extra = {r: (cl.Buffer(handle.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=v) if isinstance(v, np.ndarray)
                 else np.float32(v)) for r, v in host.items()}
    t = random_tensors(problem, n)
    params = SOLVER.default_params(problem, handle.info)
    got = run_solution(handle, SOLVER.solution(problem, params, epilogue), problem, t, extra)
    assert got.dtype == problem.dtype.numpy
    conv = reference.conv_forward(t["x"], t["w"], problem.conv.pad, problem.conv.stride, problem.conv.dilation,
                                  problem.groups)
    want = apply_reference(epilogue, conv, host)
    assert (want == 0).any() and (want > 0).any()     # the ReLU clips some outputs and keeps others
    assert max_error(got, want) <= tolerance(SOLVER, problem)


@pytest.mark.parametrize("n,c", [(16, 90), (33, 92), (64, 90)])
def test_fp16_default_params(handle, n, c):
    problem = _fc(n, c, 21, "FP16")
    check_solution(handle, SOLVER, problem, SOLVER.default_params(problem, handle.info))


@pytest.mark.parametrize("n,params,reason", [
    (30, _p(16, 8, 256, 1, 0), "partial sums per work-item"),  # 16 x 4
    (30, _p(2, 32, 256, 1, 0), "> N=30 images"),
    (30, _p(2, 16, 64, 1, 0), "lanes per image group"),        # 4 lanes
    (30, _p(16, 16, 256, 1, 0), "twice K"),
    (30, _p(2, 4, 64, 4, 0), "not a multiple of VEC"),         # C = 66
    (30, _p(2, 4, 64, 1, 2), "needs VEC=4"),
    (32, _p(2, 8, 64, 4, 2), "not a multiple of IMAGE_GROUPS"),
    (8, _p(4, 1, 64, 4, 8), "float4s per work-item"),          # 4 x 8 / 1 = 32
    (30, _p(2, 3, 64, 1, 0), "not in grid"),
    (30, {"ROWS": 2, "WG": 64}, "grid keys"),                  # a record of the N <= 8 form
])
def test_invalid_params_rejected_without_compiling(handle, n, params, reason):
    problem = _fc(n, 68 if params.get("VEC") == 4 and params.get("STAGE") else 66, 8)
    before = handle.cache_stats()["compiled"]
    assert reason in (SOLVER.invalid_reason(problem, params, handle.info) or "")
    assert handle.cache_stats()["compiled"] == before


def test_local_memory_limit_rejects_params():
    small = DeviceInfo("p", "v", "tiny", "1", "GPU", 8, 6 << 10, 256, (256, 256, 256), 1 << 30, False)
    sums = SOLVER.invalid_reason(_fc(32, 64, 64), _p(8, 8, 256, 4, 0), small)
    assert sums is not None and "local memory" in sums            # 32 sums x 256 work-items x 4 B = 32 KiB
    problem = _fc(9, 256, 64)                                      # 8 sums x 128 work-items x 4 B = 4 KiB fits,
    tiled = _p(4, 8, 128, 4, 8)                                    # a 4 x 512 weight tile does not
    assert "local memory" in (SOLVER.invalid_reason(problem, tiled, small) or "")
    assert SOLVER.is_valid(problem, {**tiled, "STAGE": 0}, small)
    for n in (8, 32):
        assert SOLVER.is_valid(_fc(n, 64, 64), SOLVER.default_params(_fc(n, 64, 64), small), small)


def test_not_applicable_past_max_images(handle):
    assert SOLVER.is_applicable(_fc(MAX_IMAGES, 16, 8), handle.info)
    assert "images" in SOLVER.not_applicable_reason(_fc(MAX_IMAGES + 1, 16, 8), handle.info)


@pytest.mark.parametrize("n", [1, 4, 8, 9, 32, 33, 64])
@pytest.mark.parametrize("c,k", [(9216, 4096), (4096, 4096), (4096, 1000), (512, 10)])
def test_defaults_on_an_h100(n, c, k):
    """Valid, all sums in registers, and for AlexNet's classifier K / ROWS work-groups at least the compute
    units (twice them up to 8 images, where the matrix-vector form, one image group, stays as tuned before)."""
    problem = _fc(n, c, k)
    params = SOLVER.default_params(problem, H100)
    assert SOLVER.is_valid(problem, params, H100), SOLVER.invalid_reason(problem, params, H100)
    assert params["ROWS"] * images_per_group(n, params["IMAGE_GROUPS"]) <= MAX_OUTS
    if k >= 1000:
        assert -(-k // params["ROWS"]) >= H100.compute_units * (2 if n <= 8 else 1)
    if n <= 8:
        assert params["IMAGE_GROUPS"] == 1 and params["VEC"] == 1 and params["STAGE"] == 0
    else:   # 16-byte loads, at least 2 lanes per 32-wide SIMD unit, 2 float4s of the next tile in flight
        assert params["VEC"] == 4 and params["IMAGE_GROUPS"] <= 16
        assert params["ROWS"] * params["STAGE"] // params["IMAGE_GROUPS"] >= STAGE_DEFAULT_REGS


def test_immediate_mode_ranks_it_first_for_a_classifier(handle, fresh_dbs, monkeypatch):
    """The shape rule (what a GPU with no shipped heuristic model, such as an H100, gets)."""
    monkeypatch.setattr(heuristic_model, "model_for", lambda name: None)
    for n in (4, 32, 64):
        ranked = [r.solver_id for r in get_solutions(handle, _fc(n, 256, 100))]
        general = [s for s in ranked if registry.get(s).device_class is None]   # a CPU's own solvers lead on a CPU
        assert general[0] == SOLVER.id, (n, ranked)


def test_small_batch_defaults_unchanged():
    """AlexNet's FC1 at N = 1 keeps the form measured at 0.072 ms on an H100 (benchmarks/results/h100-networks.json)."""
    assert SOLVER.default_params(_fc(1, 9216, 4096), H100) == _p(8, 1, 256, 1, 0)
