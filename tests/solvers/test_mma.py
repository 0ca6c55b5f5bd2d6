"""ConvImplicitGemmMma (tensor cores through inline PTX mma.sync) beyond the registry conformance test.

Anywhere: its applicability reasons (off NVIDIA, under math mode strict), the PTX probe's disk cache, the
tuning grid on a described H100 (no compile), and the kernels' fragment layout and index mapping through
MMA_EMULATE (each mma computed by the warp through local memory with the PTX ISA's fragment layout and
TF32 rounding), so PoCL checks everything but the instruction itself. On NVIDIA's OpenCL (the GPU test run,
benchmarks/gpu_tests.sh): every direction in TF32 and fp16 against float64, outputs poisoned.

Error bound (docs/tensor_cores.md), elementwise, for a sum of L products:
    |a - e| <= (1 + u_out) * (2*u_in + u_in^2 + (L + 2) * 2^-23) * sum|x||w| + u_out * |e| + tiny
u_in = 2^-11 for fp32 operands rounded to TF32 (cvt.rna: 10 explicit mantissa bits), 0 for fp16 data (the
products are exact); u_out = 2^-11 for an fp16 output, 0 for fp32; (L + 2) * 2^-23 covers the fp32 sums
whatever their order and rounding (the tensor cores may truncate); tiny = 2^-24 for fp16 subnormals.
"""
import dataclasses
import itertools
import json

import numpy as np
import pytest

from miopy import ActivationMode, ptx_probe
from miopy.accuracy import max_error
from miopy.conv import reference
from miopy.conv.problem import OUTPUT_ROLE, ConvDesc, ConvProblem, Direction
from miopy.conv.solvers import mma
from miopy.conv.solvers.mma import (
    CHOICES,
    NEEDS_PTX,
    ConvImplicitGemmMma,
    column_bytes,
    emulated,
    local_bytes,
    mma_k,
)
from miopy.device import DeviceInfo
from miopy.find import get_solutions
from miopy.fusion.epilogue import Epilogue
from miopy.solver import Solver
from miopy.tensor import DataType, TensorDesc
from tests.helpers import run_solution

SOLVER = ConvImplicitGemmMma()
H100 = DeviceInfo("NVIDIA CUDA", "NVIDIA Corporation", "NVIDIA H100", "580", "ALL | GPU", 132, 48 << 10, 1024,
                  (1024, 1024, 64), 80 << 30, False, ptx_mma=("tf32", "f16", "cp_async"))
HOPPER = dataclasses.replace(H100, ptx_mma=H100.ptx_mma + ("wgmma",))   # with the wgmma probe (miopy.ptx_patch)
DTYPES = ("FP32", "FP16")
GEMV_SPLIT, NARROW_TILE = CHOICES.gemv_split, CHOICES.narrow_tile   # the narrow-GEMM defaults


def problem_of(direction, shape, dtype="FP32", math_mode="tf32") -> ConvProblem:
    n, c, h, w, k, r, s, pad, stride, dil, groups = shape
    x, wd = TensorDesc(dtype, (n, c, h, w)), TensorDesc(dtype, (k, c // groups, r, s))
    return ConvProblem.create(direction, x, wd, ConvDesc(pad, stride, dil, groups, math_mode=math_mode))


def host_tensors(problem: ConvProblem, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {r: rng.standard_normal(d.dims).astype(d.dtype.numpy) for r, d in problem.tensors().items()}


def check_within_bound(problem: ConvProblem, t: dict[str, np.ndarray], got: np.ndarray, params=None) -> float:
    """Assert got is within the format's elementwise bound of the float64 result (TF32 operands truncated where
    params say so); returns the worst fraction."""
    exact = reference.solve(problem, {r: a.astype(np.float64) for r, a in t.items()})
    magnitude = reference.solve(problem, {r: np.abs(a).astype(np.float64) for r, a in t.items()})
    half = problem.dtype is DataType.FLOAT16
    u_in, u_out = (0.0, 2.0**-11) if half else (2.0**-11, 0.0)
    if params is not None and SOLVER.truncates_tf32(problem, params):
        u_in = 2.0**-10
    terms = problem.reduction_length()
    limit = ((1 + u_out) * (2 * u_in + u_in**2 + (terms + 2) * 2.0**-23) * magnitude + u_out * np.abs(exact)
             + (2.0**-24 if half else 0.0))
    assert not np.isnan(got).any(), f"{np.isnan(got).sum()} outputs unwritten (still NaN)"
    err = np.abs(got.astype(np.float64) - exact)
    assert not err[limit == 0].any(), "outputs no term reaches (a bound of 0) are not exactly 0"
    worst = float(np.max(err / np.where(limit == 0, 1.0, limit)))
    assert worst <= 1.0, f"{problem.key()}: error {worst:.3g} x the format's bound"
    return worst


# -- applicability and its reasons -------------------------------------------------------------------------
SMALL = (2, 8, 9, 9, 16, 3, 3, 1, 1, 1, 1)


def test_off_nvidia_it_is_not_applicable_and_find_says_why(handle):
    if handle.info.ptx_mma:
        pytest.skip("this device compiles PTX mma")
    for dtype in DTYPES:
        problem = problem_of(Direction.FORWARD, SMALL, dtype)
        assert SOLVER.not_applicable_reason(problem, handle.info) == NEEDS_PTX
    found = get_solutions(handle, problem_of(Direction.FORWARD, SMALL))
    assert found.skipped[SOLVER.id] == NEEDS_PTX and SOLVER.id not in [r.solver_id for r in found]


def test_math_mode_gates_fp32_only():
    strict = problem_of(Direction.FORWARD, SMALL, "FP32", "strict")
    assert SOLVER.not_applicable_reason(strict, H100) == "math mode strict forbids TF32"
    for direction in Direction:
        assert SOLVER.not_applicable_reason(problem_of(direction, SMALL, "FP32"), H100) is None
        assert SOLVER.not_applicable_reason(problem_of(direction, SMALL, "FP16", "strict"), H100) is None
    tf32_only = dataclasses.replace(H100, ptx_mma=("tf32",))
    assert SOLVER.not_applicable_reason(problem_of(Direction.FORWARD, SMALL, "FP16"), tf32_only) == NEEDS_PTX


def test_strided_tensors_are_refused():
    problem = problem_of(Direction.FORWARD, SMALL)
    strided = dataclasses.replace(problem, x=TensorDesc("FP32", problem.x.dims, (1000, 100, 10, 1)))
    assert "packed" in SOLVER.not_applicable_reason(strided, H100)


# -- the probe's cache --------------------------------------------------------------------------------------
def test_probe_results_round_trip_on_disk_and_a_corrupt_file_is_a_miss(tmp_path, monkeypatch, handle):
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path))
    ptx_probe._write_disk("dev-a", ("tf32", "f16"))
    ptx_probe._write_disk("dev-b", ())
    assert ptx_probe._read_disk("dev-a") == ("tf32", "f16") and ptx_probe._read_disk("dev-b") == ()
    assert ptx_probe._read_disk("dev-c") is None
    ptx_probe._path().write_text("{not json")
    assert ptx_probe._read_disk("dev-a") is None
    ptx_probe._path().write_text(json.dumps({"dev-a": ["bogus"]}))
    assert ptx_probe._read_disk("dev-a") is None
    if "NVIDIA" not in handle.info.platform.upper():
        assert ptx_probe.supported_mma(handle.device, handle.info.device_id) == ()


class _FakePlatform:
    name = "NVIDIA CUDA"


class _FakeDevice:
    platform = _FakePlatform()


def test_probe_runs_once_per_device_then_memory_then_disk(tmp_path, monkeypatch):
    """On an NVIDIA platform the probe compiles each instruction family once; later asks are answered from
    memory, and a new process (memory cleared) from the disk file."""
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ptx_probe, "_MEMO", {})
    built = []
    monkeypatch.setattr(ptx_probe, "_compiles", lambda dev, source: built.append(source) or "m16n8k8" in source)
    assert ptx_probe.supported_mma(_FakeDevice(), "nv-1") == ("tf32",)
    assert ptx_probe.supported_mma(_FakeDevice(), "nv-1") == ("tf32",) and len(built) == 4
    monkeypatch.setattr(ptx_probe, "_MEMO", {})
    assert ptx_probe.supported_mma(_FakeDevice(), "nv-1") == ("tf32",) and len(built) == 4
    assert ptx_probe.supported_mma(_FakeDevice(), "nv-2") == ("tf32",) and len(built) == 8


def test_a_refused_cp_async_probe_leaves_cp_async_points_invalid_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ptx_probe, "_MEMO", {})
    monkeypatch.setattr(ptx_probe, "_compiles", lambda dev, source: "cp.async" not in source and "wgmma" not in source)
    found = ptx_probe.supported_mma(_FakeDevice(), "nv-old")
    assert found == ("tf32", "f16") and "cp.async.wait_group" in ptx_probe.probe_source("cp_async")
    device = dataclasses.replace(H100, ptx_mma=found)
    problem = problem_of(Direction.FORWARD, LAYERS[0])
    point = {**SOLVER.default_params(problem, device), "CP_ASYNC": True, "STAGES": 2}
    assert "cp.async" in SOLVER.invalid_reason(problem, point, device)
    assert SOLVER.invalid_reason(problem, point, H100) is None
    assert not any(p["CP_ASYNC"] or p["STAGES"] > 2 for p in SOLVER.search_space(problem, device))


# -- the tuning grid on a described H100 (nothing compiled) -------------------------------------------------
LAYERS = [(32, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1), (32, 64, 56, 56, 256, 1, 1, 0, 1, 1, 1),
          (32, 96, 27, 27, 256, 5, 5, 2, 1, 1, 1), (1, 3, 224, 224, 64, 7, 7, 3, 2, 1, 1),
          (2, 6, 7, 9, 13, 3, 3, 1, 1, 1, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
def test_default_params_are_valid_and_fit_local_memory(direction, dtype):
    for shape in LAYERS:
        problem = problem_of(direction, shape, dtype)
        params = SOLVER.default_params(problem, H100)
        assert SOLVER.invalid_reason(problem, params, H100) is None, (shape, params)
        assert local_bytes(params, problem.dtype, direction) <= H100.local_mem_bytes
        assert SOLVER.solution(problem, params) == SOLVER.solution(problem, params)


def test_invalid_points_say_why():
    problem = problem_of(Direction.FORWARD, LAYERS[0], "FP16")
    base = SOLVER.default_params(problem, H100)
    assert "multiple of the mma's k" in SOLVER.invalid_reason(problem, {**base, "K_BLK": 8}, H100)
    assert "16x8 mma tiles" in SOLVER.invalid_reason(problem, {**base, "M_BLK": 16, "WARPS_M": 2}, H100)
    big = {**base, "M_BLK": 256, "N_BLK": 256, "K_BLK": 64, "WARPS_M": 4, "WARPS_N": 4, "STAGES": 2}
    assert "local memory" in SOLVER.invalid_reason(problem, big, H100)
    assert SOLVER.invalid_reason(problem, {**base, "SPLIT": 2}, H100) is None        # split-K forward
    assert "SPLIT=32 > 8" in SOLVER.invalid_reason(problem, {**base, "SPLIT": 32}, H100)   # 8 x 1.6M partials
    big_out = problem_of(Direction.FORWARD, LAYERS[1], "FP16")                             # 25.7M outputs
    assert "SPLIT=2 > 1" in SOLVER.invalid_reason(big_out, {**SOLVER.default_params(big_out, H100), "SPLIT": 2}, H100)
    one_tap = problem_of(Direction.FORWARD, (2, 16, 8, 8, 16, 1, 1, 0, 1, 1, 1))         # one 16-channel slice
    point = {**SOLVER.default_params(one_tap, H100), "K_BLK": 16, "SPLIT": 2}
    assert "SPLIT=2 > the 1 slices" in SOLVER.invalid_reason(one_tap, point, H100)
    wgrad = problem_of(Direction.BACKWARD_WEIGHTS, (2, 8, 9, 9, 16, 3, 3, 1, 1, 1, 1))    # N*P*Q = 162
    assert "SPLIT=2 > 1" in SOLVER.invalid_reason(wgrad, {**SOLVER.default_params(wgrad, H100), "SPLIT": 2}, H100)


def test_split_k_defaults_fill_the_gpu_where_the_reduction_is_long():
    """Backward-weights with a small K x C*R*S and a long N*P*Q (ResNet-50 1x1 64->256 at 56x56: 256 x 64 over
    100352 terms) takes a 64x64-or-larger tile and enough splits for a wave of the H100's 132 compute units;
    forward / backward-data split where the output is a few tiles over a long reduction (a 6x6 filter over a 6x6
    image at N=5, Boda's b26, as the fully-connected layer it is: 4096 x 5 outputs over 9216 terms, on narrow tiles)
    and not on a large layer (VGG-16's 112x112)."""
    for dtype in DTYPES:
        wgrad = problem_of(Direction.BACKWARD_WEIGHTS, LAYERS[1], dtype)
        params = SOLVER.default_params(wgrad, H100)
        tiles = -(-256 // params["M_BLK"]) * -(-64 // params["N_BLK"])
        assert params["M_BLK"] * params["N_BLK"] >= 64 * 64 and tiles * params["SPLIT"] >= 0.95 * H100.compute_units
        assert SOLVER.workspace_bytes(wgrad) >= 4 * params["SPLIT"] * wgrad.w.element_count
        for direction in (Direction.FORWARD, Direction.BACKWARD_DATA):
            assert SOLVER.default_params(problem_of(direction, (32, 128, 112, 112, 128, 3, 3, 1, 1, 1, 1), dtype),
                                         H100)["SPLIT"] == 1
        for direction in (Direction.FORWARD, Direction.BACKWARD_DATA):   # fully connected: 5 columns, narrow tiles
            fc_like = problem_of(direction, (5, 256, 6, 6, 4096, 6, 6, 0, 1, 1, 1), dtype)
            params = SOLVER.default_params(fc_like, H100)
            assert params["SPLIT"] == GEMV_SPLIT and {k: params[k] for k in NARROW_TILE} == NARROW_TILE
            small = problem_of(direction, (5, 1024, 6, 6, 1000, 1, 1, 0, 1, 1, 1), dtype)    # 180 columns
            params = SOLVER.default_params(small, H100)
            assert params["SPLIT"] == 1 and {k: params[k] for k in NARROW_TILE} == NARROW_TILE


def test_vector_b_points_say_why():
    fp32 = problem_of(Direction.FORWARD, LAYERS[1])          # 56 x 56, 1x1
    base = SOLVER.default_params(fp32, H100)
    assert base["VECTOR_B"] == 0 and SOLVER.invalid_reason(fp32, {**base, "VECTOR_B": 4}, H100) is None
    assert "16 bytes" in SOLVER.invalid_reason(fp32, {**base, "VECTOR_B": 8}, H100)
    assert "CHANNEL_BLOCKS" in SOLVER.invalid_reason(fp32, {**base, "VECTOR_B": 4, "CHANNEL_BLOCKS": False,
                                                            "TRANSFORM_W": False, "VECTOR_A": False}, H100)
    narrow = problem_of(Direction.FORWARD, LAYERS[0])        # 14 x 14: 2-vectors only
    point = SOLVER.default_params(narrow, H100)
    assert SOLVER.invalid_reason(narrow, {**point, "VECTOR_B": 2}, H100) is None
    assert "multiples of 4" in SOLVER.invalid_reason(narrow, {**point, "VECTOR_B": 4}, H100)
    strided = problem_of(Direction.FORWARD, (2, 16, 16, 16, 16, 3, 3, 1, 2, 1, 1))
    assert "stride 1" in SOLVER.invalid_reason(strided, {**SOLVER.default_params(strided, H100), "VECTOR_B": 2}, H100)
    wgrad = problem_of(Direction.BACKWARD_WEIGHTS, LAYERS[1])
    assert "CHANNEL_BLOCKS" in SOLVER.invalid_reason(wgrad, {**SOLVER.default_params(wgrad, H100), "VECTOR_B": 2},
                                                     H100)


def test_pipeline_points_say_why():
    """STAGES > 2 only with cp.async, cp.async only with two stages or more, fp16 cp.async only with 16-byte A
    copies, and the ring within local memory (48 KiB on the H100)."""
    fp32 = problem_of(Direction.FORWARD, LAYERS[0])
    half = problem_of(Direction.FORWARD, LAYERS[0], "FP16")
    base = {**SOLVER.default_params(fp32, H100), "CP_ASYNC": False}
    assert "needs CP_ASYNC" in SOLVER.invalid_reason(fp32, {**base, "STAGES": 3}, H100)
    assert "STAGES >= 2" in SOLVER.invalid_reason(fp32, {**base, "STAGES": 1, "CP_ASYNC": True}, H100)
    small = {**base, "M_BLK": 64, "N_BLK": 64, "K_BLK": 16, "WARPS_M": 2, "WARPS_N": 2, "CP_ASYNC": True}
    for stages in (2, 3, 4):
        assert SOLVER.invalid_reason(fp32, {**small, "STAGES": stages}, H100) is None
    wide = {**small, "M_BLK": 128, "N_BLK": 128, "STAGES": 3}   # 3 x 18.5 KiB
    assert local_bytes(wide, fp32.dtype, fp32.direction) > H100.local_mem_bytes
    assert "local memory" in SOLVER.invalid_reason(fp32, wide, H100)
    half_point = {**SOLVER.default_params(half, H100), "CP_ASYNC": True, "STAGES": 2}
    assert SOLVER.invalid_reason(half, {**half_point, "VECTOR_A": True}, H100) is None
    assert SOLVER.invalid_reason(half, {**half_point, "VECTOR_A": False}, H100) is None   # pairs along k
    in_place = {**half_point, "VECTOR_A": False, "TRANSFORM_W": False}    # 3x3 weights: k strided in place
    assert "copies A in pairs" in SOLVER.invalid_reason(half, in_place, H100)
    odd_plane = problem_of(Direction.BACKWARD_WEIGHTS, (2, 8, 9, 9, 16, 3, 3, 1, 1, 1, 1), "FP16")   # P*Q = 81
    point = {**SOLVER.default_params(odd_plane, H100), "CP_ASYNC": True, "STAGES": 2, "VECTOR_A": False,
             "PAD_DY": False, "WGMMA": False}
    assert SOLVER.invalid_reason(odd_plane, point, H100) is None      # pairs, the odd tail element by element
    assert "P*Q=81 is not a multiple of 8" in SOLVER.invalid_reason(odd_plane, {**point, "VECTOR_A": True}, H100)
    # cp.async moves the prefetch out of registers: a 128x128x64 fp32 slice over 4 warps is 128 copies a lane
    deep = {**small, "M_BLK": 128, "N_BLK": 128, "K_BLK": 64, "STAGES": 2}
    assert "prefetched" in SOLVER.invalid_reason(fp32, {**deep, "CP_ASYNC": False}, H100)
    assert "prefetched" not in (SOLVER.invalid_reason(fp32, deep, H100) or "")


def test_default_params_pipeline_where_the_h100_measured_it_faster():
    """TF32 defaults use cp.async (two stages forward / backward-data, three in backward-weights) where the
    device has it; fp16 too in forward / backward-data on 128x128 tiles (two stages), and in backward-weights of
    filters larger than 1x1 over even output planes with the copy of x (three stages, where valid: ResNet-50's
    14x14 3x3), over odd planes of N*P*Q >= 16384 with dy's padded copy too (AlexNet's), else not; without the
    probe nothing changes; VECTOR_B stays off."""
    no_cp = dataclasses.replace(H100, ptx_mma=("tf32", "f16"))
    for direction in Direction:
        for dtype in DTYPES:
            for shape in LAYERS:
                problem = problem_of(direction, shape, dtype)
                params = SOLVER.default_params(problem, H100)
                assert SOLVER.is_valid(problem, params, H100) and params["VECTOR_B"] == 0
                plain = SOLVER.default_params(problem, no_cp)
                assert not plain["CP_ASYNC"] and plain["STAGES"] <= 2
                plane = problem.out_h * problem.out_w
                wgrad_copy = direction is Direction.BACKWARD_WEIGHTS and problem.r * problem.s > 1 \
                    and (plane % 2 == 0 or problem.n * plane >= 16384)
                if dtype == "FP16" and wgrad_copy and plane % 2:   # odd planes: dy's padded copy, 16-byte A
                    assert params["PAD_DY"] and params["VECTOR_A"] and params["CP_ASYNC"] and params["TRANSFORM_X"]
                    assert {k: v for k, v in params.items() if k not in ("PAD_DY", "VECTOR_A", "CP_ASYNC",
                            "TRANSFORM_X", "STAGES")} == {k: v for k, v in plain.items() if k not in (
                            "PAD_DY", "VECTOR_A", "CP_ASYNC", "TRANSFORM_X", "STAGES")}
                elif dtype == "FP16" and wgrad_copy and (params["CP_ASYNC"] or shape is LAYERS[0]):
                    assert params == {**plain, "TRANSFORM_X": True, "CP_ASYNC": True, "STAGES": 3}
                elif dtype == "FP16" and (direction is Direction.BACKWARD_WEIGHTS
                                          or plain["M_BLK"] * plain["N_BLK"] < 128 * 128):
                    assert params == plain
                elif dtype == "FP16":
                    assert params == {**plain, "CP_ASYNC": True, "STAGES": 2}
                elif params["CP_ASYNC"]:
                    assert params["STAGES"] == (3 if direction is Direction.BACKWARD_WEIGHTS else 2)
                else:   # the pipelined variants did not fit: the register path's params unchanged
                    assert params == plain


def test_pruned_search_space_is_the_filtered_grid(monkeypatch):
    """search_space skips values that no point can take; on a reduced grid it yields exactly the grid
    points that pass invalid_reason, in grid order."""
    small = {**ConvImplicitGemmMma.grid, "M_BLK": (16, 32), "N_BLK": (16, 32), "K_BLK": (16,), "WARPS_M": (1, 2),
             "WARPS_N": (1,), "SPLIT": (1, 2)}
    monkeypatch.setattr(ConvImplicitGemmMma, "grid", small)
    solver = ConvImplicitGemmMma()
    for direction in Direction:
        for dtype in DTYPES:
            problem = problem_of(direction, (2, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1), dtype)
            pruned = list(solver.search_space(problem, H100))
            full = list(Solver.search_space(solver, problem, H100))
            assert pruned == full and any(p["CP_ASYNC"] and p["STAGES"] == 4 for p in full)
            assert any(p["VECTOR_B"] == 4 for p in full) == (direction is not Direction.BACKWARD_WEIGHTS)


def test_pruned_search_space_with_wgmma_is_the_filtered_grid(monkeypatch):
    """With the wgmma probe, search_space's shortcuts for WGMMA points skip only invalid points."""
    small = {**ConvImplicitGemmMma.grid, "M_BLK": (64,), "N_BLK": (64, 128), "K_BLK": (16,), "WARPS_M": (1, 2),
             "WARPS_N": (1,), "SPLIT": (1,), "VECTOR_B": (0,), "PAD_DY": (False,), "COL2IM": (False,)}
    monkeypatch.setattr(ConvImplicitGemmMma, "grid", small)
    solver = ConvImplicitGemmMma()
    for direction in Direction:
        for dtype in DTYPES:
            problem = problem_of(direction, (8, 64, 8, 8, 64, 3, 3, 1, 1, 1, 1), dtype)
            full = list(Solver.search_space(solver, problem, HOPPER))
            assert list(solver.search_space(problem, HOPPER)) == full and any(p["WGMMA"] for p in full)


# -- the kernels' layout and index mapping, emulated (any OpenCL device) -----------------------------------
ODD = (2, 6, 7, 9, 13, 3, 3, (1, 2), (2, 1), (1, 2), 1)   # ragged tiles, pad, stride, dilation
def cfg(m_blk, n_blk, warps_m, warps_n, stages, blocks, split=1, transform=False, vector=False, k_blk=16,
        cp_async=False, vector_b=0, transform_x=False, col2im=False, pad_dy=False, wgmma=False) -> dict:
    return {"M_BLK": m_blk, "N_BLK": n_blk, "K_BLK": k_blk, "WARPS_M": warps_m, "WARPS_N": warps_n, "STAGES": stages,
            "CHANNEL_BLOCKS": blocks, "SPLIT": split, "TRANSFORM_W": transform, "LDMATRIX": False, "VECTOR_A": vector,
            "CP_ASYNC": cp_async, "VECTOR_B": vector_b, "TRANSFORM_X": transform_x, "COL2IM": col2im, "PAD_DY": pad_dy,
            "WGMMA": wgmma}


EMULATED = [  # (direction, params): one warp and two, one stage and two, channel blocks, the weight copy, a split
    (Direction.FORWARD, cfg(16, 32, 1, 2, 2, False)),
    (Direction.FORWARD, cfg(16, 16, 1, 1, 1, True, transform=True)),
    (Direction.BACKWARD_DATA, cfg(16, 16, 1, 1, 1, True, transform=True)),
    (Direction.BACKWARD_DATA, cfg(16, 32, 1, 2, 2, True)),
    (Direction.BACKWARD_WEIGHTS, cfg(32, 16, 2, 1, 2, False, split=2)),
    # 16-byte A fetches: 16 channels, 8x8 planes (multiples of the 4- and 8-element vectors)
    (Direction.FORWARD, cfg(16, 32, 1, 1, 2, True, transform=True, vector=True)),
    (Direction.BACKWARD_DATA, cfg(16, 16, 1, 1, 2, True, transform=True, vector=True)),
    (Direction.BACKWARD_WEIGHTS, cfg(16, 16, 1, 1, 2, False, vector=True, k_blk=32)),
]
VECTOR_SHAPE = (2, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1)


def wgmma_cfg(m_blk, n_blk, k_blk=16, stages=2, split=1) -> dict:
    return cfg(m_blk, n_blk, m_blk // 64, 1, stages, True, split=split, transform=True, vector=True, k_blk=k_blk,
               cp_async=True, transform_x=True, wgmma=True)


# WGMMA's core-matrix tiles, its copies' work-item mapping and its warps (four per 64 rows) through the emulated
# mma.sync: 64 rows of both GEMMs; ragged rows, channels past the slice, pad, stride, dilation
WGMMA_SHAPE = (2, 64, 8, 8, 64, 3, 3, 1, 1, 1, 1)
WGMMA_RAGGED = (2, 72, 7, 9, 72, 3, 3, (1, 2), (2, 1), (1, 2), 1)
EMULATED_WGMMA = [
    (Direction.FORWARD, WGMMA_SHAPE, wgmma_cfg(64, 64)),
    (Direction.BACKWARD_DATA, WGMMA_SHAPE, wgmma_cfg(64, 32, k_blk=32, stages=3)),
    (Direction.FORWARD, WGMMA_RAGGED, wgmma_cfg(128, 64, k_blk=32)),
    (Direction.BACKWARD_DATA, WGMMA_RAGGED, wgmma_cfg(64, 64, split=2)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction,shape,params", EMULATED_WGMMA,
                         ids=[f"{d.name}-{i}" for i, (d, _, _) in enumerate(EMULATED_WGMMA)])
def test_emulated_wgmma_layout_matches_float64_within_the_format_bound(handle, direction, shape, params, dtype):
    problem = problem_of(direction, shape, dtype)
    assert SOLVER.invalid_reason(problem, params, HOPPER) is None, SOLVER.invalid_reason(problem, params, HOPPER)
    assert "wgmma" in SOLVER.invalid_reason(problem, params, H100)
    t = host_tensors(problem, seed=4)
    got = run_solution(handle, emulated(SOLVER.solution(problem, params)), problem, t)
    check_within_bound(problem, t, got)


def wgmma_w_cfg(m_blk, n_blk, k_blk=32, stages=3, split=1, pad_dy=False, tf32=False, vector=True) -> dict:
    return cfg(m_blk, n_blk, m_blk // 64, 1, stages, False, split=split, vector=vector, k_blk=k_blk, cp_async=True,
               transform_x=not tf32, pad_dy=pad_dy, wgmma=True)


# fp16 backward-weights: B MN-major (blocks of 64 columns in the 128-byte mode, 32 in the 64-byte one), A (dy) K-major;
# even planes, and odd ones through dy's padded copy with ragged rows, pad and stride
EMULATED_WGMMA_W = [
    ((8, 64, 8, 8, 64, 3, 3, 1, 1, 1, 1), wgmma_w_cfg(64, 128, split=2)),
    (WGMMA_SHAPE, wgmma_w_cfg(64, 32, stages=2)),
    ((2, 64, 8, 8, 72, 3, 3, 1, 1, 1, 1), wgmma_w_cfg(128, 128, k_blk=16, stages=4)),
    ((2, 16, 7, 9, 72, 3, 3, 1, (1, 2), 1, 1), wgmma_w_cfg(64, 64, k_blk=64, stages=2, pad_dy=True)),
]


# TF32 backward-weights: B K-major, gathered from x in place (no channel-fastest copy), A by 16- or 4-byte copies
EMULATED_WGMMA_W_TF32 = [
    ((8, 16, 8, 8, 64, 3, 3, 1, 1, 1, 1), wgmma_w_cfg(64, 128, k_blk=16, stages=3, split=2, tf32=True)),
    ((2, 16, 7, 9, 72, 3, 3, 1, (1, 2), 1, 1), wgmma_w_cfg(128, 64, k_blk=32, stages=2, tf32=True, vector=False)),
]


@pytest.mark.parametrize("shape,params,dtype",
                         [(s, p, DataType.FLOAT16) for s, p in EMULATED_WGMMA_W]
                         + [(s, p, DataType.FLOAT32) for s, p in EMULATED_WGMMA_W_TF32],
                         ids=[f"fp16-{i}" for i in range(len(EMULATED_WGMMA_W))]
                         + [f"tf32-{i}" for i in range(len(EMULATED_WGMMA_W_TF32))])
def test_emulated_wgmma_backward_weights_matches_float64_within_the_format_bound(handle, shape, params, dtype):
    problem = problem_of(Direction.BACKWARD_WEIGHTS, shape, dtype)
    assert SOLVER.invalid_reason(problem, params, HOPPER) is None, SOLVER.invalid_reason(problem, params, HOPPER)
    t = host_tensors(problem, seed=5)
    got = run_solution(handle, emulated(SOLVER.solution(problem, params)), problem, t)
    check_within_bound(problem, t, got, params)


def test_wgmma_defaults_where_the_h100_measured_them_faster():
    """Forward / backward-data of 3x3 and larger filters over wide GEMMs take WGMMA on a device whose wgmma probe
    passed (where 128x128 tiles make 4 waves: 128x128 in 3 stages over 2304 terms or more, else 128x64 in 4; else
    64x128 in 4); backward-weights, 1x1 filters, narrow GEMMs and devices without the probe keep mma.sync."""
    wide = (32, 256, 56, 56, 256, 3, 3, 1, 1, 1, 1)    # VGG-16 conv6: 1568 tiles of 128x128
    small = (128, 256, 13, 13, 384, 3, 3, 1, 1, 1, 1)  # AlexNet conv3 (forward: 507 tiles)
    for dtype in DTYPES:
        for direction in (Direction.FORWARD, Direction.BACKWARD_DATA):
            big = SOLVER.default_params(problem_of(direction, wide, dtype), HOPPER)
            assert big["WGMMA"] and (big["M_BLK"], big["N_BLK"], big["STAGES"]) == (128, 128, 3)
            assert not SOLVER.default_params(problem_of(direction, wide, dtype), H100)["WGMMA"]
        shallow = SOLVER.default_params(problem_of(Direction.FORWARD, (32, 128, 112, 112, 128, 3, 3, 1, 1, 1, 1),
                                                   dtype), HOPPER)   # VGG-16 conv4: 1152 terms
        assert shallow["WGMMA"] and (shallow["M_BLK"], shallow["N_BLK"], shallow["STAGES"]) == (128, 64, 4)
        narrow = SOLVER.default_params(problem_of(Direction.FORWARD, small, dtype), HOPPER)
        assert narrow["WGMMA"] and (narrow["M_BLK"], narrow["N_BLK"], narrow["STAGES"]) == (64, 128, 4)
        for other in (problem_of(Direction.FORWARD, (32, 256, 56, 56, 256, 1, 1, 0, 1, 1, 1), dtype),
                      problem_of(Direction.FORWARD, (2, 64, 8, 8, 64, 3, 3, 1, 1, 1, 1), dtype)):
            assert not SOLVER.default_params(other, HOPPER)["WGMMA"]


def test_wgmma_backward_weights_defaults_where_the_h100_measured_them_faster():
    """fp16 backward-weights with the channel-fastest copy takes WGMMA 128x128 tiles in 3 stages (64x128 for 64
    output channels), dy's padded copy over odd planes of enough terms, and the split the time model finds fastest:
    on the layers timed, the split that measured fastest (AlexNet conv3 4, conv2 16; VGG-16 conv2 128 on 64-row
    tiles). TF32, 1x1 filters, odd planes of few terms (Boda's at N=5) and devices without the probe keep mma.sync."""
    alexnet3 = problem_of(Direction.BACKWARD_WEIGHTS, (128, 256, 13, 13, 384, 3, 3, 1, 1, 1, 1), DataType.FLOAT16)
    got = SOLVER.default_params(alexnet3, HOPPER)
    assert got["WGMMA"] and got["PAD_DY"] and (got["M_BLK"], got["N_BLK"], got["STAGES"], got["SPLIT"]) == \
        (128, 128, 3, 4)
    assert not SOLVER.default_params(alexnet3, H100)["WGMMA"]
    alexnet2 = problem_of(Direction.BACKWARD_WEIGHTS, (128, 96, 27, 27, 256, 5, 5, 2, 1, 1, 1), DataType.FLOAT16)
    assert SOLVER.default_params(alexnet2, HOPPER)["SPLIT"] == 16
    vgg2 = problem_of(Direction.BACKWARD_WEIGHTS, (32, 64, 224, 224, 64, 3, 3, 1, 1, 1, 1), DataType.FLOAT16)
    got = SOLVER.default_params(vgg2, HOPPER)
    assert got["WGMMA"] and not got["PAD_DY"] and (got["M_BLK"], got["N_BLK"], got["SPLIT"]) == (64, 128, 128)
    for other in (problem_of(Direction.BACKWARD_WEIGHTS, (32, 256, 56, 56, 256, 1, 1, 0, 1, 1, 1), DataType.FLOAT16),
                  problem_of(Direction.BACKWARD_WEIGHTS, (5, 384, 13, 13, 256, 3, 3, 1, 1, 1, 1), DataType.FLOAT16),
                  problem_of(Direction.BACKWARD_WEIGHTS, (5, 384, 13, 13, 256, 3, 3, 1, 1, 1, 1)),
                  problem_of(Direction.BACKWARD_WEIGHTS, (32, 3, 224, 224, 64, 7, 7, 3, 2, 1, 1))):
        assert not SOLVER.default_params(other, HOPPER)["WGMMA"]


def test_wgmma_backward_data_of_strided_1x1_filters():
    """Backward-data of 1x1 filters at stride 2 takes WGMMA 64x128 tiles in 4 stages whatever its width (ResNet-50's
    downsampling layers); at stride 1 and without the wgmma probe it keeps mma.sync."""
    for dtype in DTYPES:
        strided = problem_of(Direction.BACKWARD_DATA, (32, 1024, 14, 14, 2048, 1, 1, 0, 2, 1, 1), dtype)
        got = SOLVER.default_params(strided, HOPPER)
        assert got["WGMMA"] and (got["M_BLK"], got["N_BLK"], got["STAGES"]) == (64, 128, 4)
        assert not SOLVER.default_params(strided, H100)["WGMMA"]
        plain = problem_of(Direction.BACKWARD_DATA, (32, 1024, 14, 14, 2048, 1, 1, 0, 1, 1, 1), dtype)
        assert not SOLVER.default_params(plain, HOPPER)["WGMMA"]


def test_wgmma_tf32_backward_weights_gathers_b_in_place_and_truncates():
    """TF32 backward-weights over enough terms and outputs takes WGMMA without the channel-fastest copy (its B would
    be MN-major, which TF32 wgmma cannot read), 16-deep slices, and its error bound is truncation's."""
    alexnet2 = problem_of(Direction.BACKWARD_WEIGHTS, (128, 96, 27, 27, 256, 5, 5, 2, 1, 1, 1))
    got = SOLVER.default_params(alexnet2, HOPPER)
    assert got["WGMMA"] and not got["TRANSFORM_X"] and (got["M_BLK"], got["N_BLK"], got["K_BLK"], got["STAGES"]) == \
        (128, 128, 16, 3)
    assert SOLVER.truncates_tf32(alexnet2, got) and not SOLVER.truncates_tf32(alexnet2, {**got, "WGMMA": False})
    fp16 = problem_of(Direction.BACKWARD_WEIGHTS, (128, 96, 27, 27, 256, 5, 5, 2, 1, 1, 1), DataType.FLOAT16)
    assert not SOLVER.truncates_tf32(fp16, SOLVER.default_params(fp16, HOPPER))
    forward = problem_of(Direction.FORWARD, (32, 256, 56, 56, 256, 3, 3, 1, 1, 1, 1))
    point = SOLVER.default_params(forward, HOPPER)
    assert point["WGMMA"] and not SOLVER.truncates_tf32(forward, point)   # its copies round x and w


def test_wgmma_points_say_why():
    problem = problem_of(Direction.FORWARD, (32, 256, 56, 56, 256, 3, 3, 1, 1, 1, 1))
    point = SOLVER.default_params(problem, HOPPER)
    assert point["WGMMA"] and SOLVER.invalid_reason(problem, point, HOPPER) is None
    assert "WARPS_M" in SOLVER.invalid_reason(problem, {**point, "WARPS_M": 1}, HOPPER)
    assert "no LDMATRIX" in SOLVER.invalid_reason(problem, {**point, "LDMATRIX": True}, HOPPER)
    assert "N_BLK in" in SOLVER.invalid_reason(problem, {**point, "N_BLK": 16}, HOPPER)
    assert "swizzle" in SOLVER.invalid_reason(problem, {**point, "K_BLK": 64, "STAGES": 2}, HOPPER)
    wgrad = problem_of(Direction.BACKWARD_WEIGHTS, (32, 256, 56, 56, 256, 3, 3, 1, 1, 1, 1))
    assert "without TRANSFORM_X" in SOLVER.invalid_reason(wgrad, {**wgmma_w_cfg(128, 128), "SPLIT": 4}, HOPPER)
    assert SOLVER.invalid_reason(wgrad, {**wgmma_w_cfg(128, 128, k_blk=16, tf32=True), "SPLIT": 4}, HOPPER) is None
    wgrad = problem_of(Direction.BACKWARD_WEIGHTS, (32, 256, 56, 56, 256, 3, 3, 1, 1, 1, 1), DataType.FLOAT16)
    assert SOLVER.invalid_reason(wgrad, {**wgmma_w_cfg(128, 128), "SPLIT": 4}, HOPPER) is None
    assert "TRANSFORM_X" in SOLVER.invalid_reason(wgrad, {**wgmma_w_cfg(128, 128), "TRANSFORM_X": False}, HOPPER)
    assert all(not p["WGMMA"] for p in itertools.islice(SOLVER.search_space(problem, H100), 200))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction,params", EMULATED, ids=[f"{d.name}-{i}" for i, (d, _) in enumerate(EMULATED)])
def test_emulated_kernels_match_float64_within_the_format_bound(handle, direction, params, dtype):
    shape = (8, 6, 9, 9, 24, 3, 3, 1, 1, 1, 1) if params["SPLIT"] > 1 else ODD   # N*P*Q = 648: two chunks
    shape = VECTOR_SHAPE if params["VECTOR_A"] else shape
    problem = problem_of(direction, shape, dtype)
    assert SOLVER.invalid_reason(problem, params, H100) is None, SOLVER.invalid_reason(problem, params, H100)
    t = host_tensors(problem, seed=1)
    got = run_solution(handle, emulated(SOLVER.solution(problem, params)), problem, t)
    check_within_bound(problem, t, got)


# Backward-data's weight copy is a per-group transpose in 32 x 32 tiles: K/G = 40 and C/G * R*S = 36 leave ragged
# tiles on both sides, over two groups
TRANSPOSED = (2, 8, 5, 5, 80, 3, 3, 1, 1, 1, 2)
# a filter covering the unpadded image: run as a 1x1 convolution of 1x1 images over C*R*S channels
COVERING = (3, 8, 3, 3, 80, 3, 3, 0, 1, 1, 2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_emulated_backward_data_weight_copy_transposes_per_group(handle, dtype):
    problem = problem_of(Direction.BACKWARD_DATA, TRANSPOSED, dtype)
    params = cfg(16, 16, 1, 1, 2, True, transform=True)
    assert SOLVER.invalid_reason(problem, params, H100) is None
    t = host_tensors(problem, seed=4)
    check_within_bound(problem, t, run_solution(handle, emulated(SOLVER.solution(problem, params)), problem, t))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", list(Direction))
def test_emulated_fully_connected_view_matches_float64(handle, direction, dtype):
    problem = problem_of(direction, COVERING, dtype)
    view = problem.as_fully_connected()
    assert (view.c, view.in_h, view.in_w, view.r, view.s, view.groups) == (72, 1, 1, 1, 1, 2)
    # backward-data: of the R*S taps the original counts, one reaches each pixel
    taps = 9 if direction is Direction.BACKWARD_DATA else 1
    assert view.reduction_length() * taps == problem.reduction_length() and view.y == problem.y
    params = SOLVER.default_params(problem, H100)
    assert SOLVER.invalid_reason(problem, params, H100) is None
    solution = SOLVER.solution(problem, params)
    assert dict(next(launch.spec for launch in solution.launches if launch.spec.name == "conv_mma").defines)["R"] == "1"
    t = host_tensors(problem, seed=5)
    check_within_bound(problem, t, run_solution(handle, emulated(solution), problem, t))


def test_only_filters_covering_the_unpadded_image_are_fully_connected():
    assert problem_of(Direction.FORWARD, COVERING).as_fully_connected() is not None
    assert problem_of(Direction.FORWARD, (3, 8, 3, 3, 80, 3, 3, 0, 2, 1, 2)).as_fully_connected() is not None
    for shape in [(3, 8, 3, 3, 80, 3, 3, 1, 1, 1, 2),      # padded: 3x3 outputs
                  (3, 8, 4, 4, 80, 3, 3, 0, 1, 1, 2),      # 2x2 outputs
                  (3, 8, 1, 1, 80, 1, 1, 0, 1, 1, 2)]:     # already 1x1 of 1x1 images
        assert problem_of(Direction.FORWARD, shape).as_fully_connected() is None, shape
    x, w = TensorDesc("FP32", (3, 8, 3, 3), (160, 20, 3, 1)), TensorDesc("FP32", (80, 4, 3, 3))
    strided = ConvProblem.create(Direction.FORWARD, x, w, ConvDesc(groups=2))
    assert strided.as_fully_connected() is None


SPLIT_SHAPE = (8, 6, 9, 9, 24, 3, 3, 1, 1, 1, 1)   # N*P*Q = 648: two chunks
ONE_STEP = (2, 6, 7, 9, 13, 1, 1, 0, 1, 1, 1)      # a 1x1 over 6 channels: one slice, fewer than STAGES - 1
ONE_STEP_8 = (2, 8, 7, 9, 13, 1, 1, 0, 1, 1, 1)    # the same over 8 channels (fp16 16-byte A copies)
# (direction, dtype, shape, params): the cp.async ring (emulated copies, same buffers and order) with 2, 3 and 4
# stages; fp32 with 4-byte A and B copies (fragments rounded to TF32 when read) and 16-byte A copies, the weight
# copy (rounded by transform_weights), splits, channel blocks; fp16 with 16-byte A copies and B on registers
CP_ASYNC_CASES = [
    (Direction.FORWARD, "FP32", ODD, cfg(16, 32, 1, 2, 2, False, cp_async=True)),
    (Direction.FORWARD, "FP32", ODD, cfg(16, 16, 1, 1, 3, True, transform=True, cp_async=True)),
    (Direction.FORWARD, "FP32", ONE_STEP, cfg(16, 16, 1, 1, 4, False, cp_async=True)),
    (Direction.BACKWARD_DATA, "FP32", ODD, cfg(16, 32, 1, 2, 4, True, cp_async=True)),
    (Direction.BACKWARD_DATA, "FP32", ODD, cfg(16, 16, 1, 1, 3, False, cp_async=True)),
    (Direction.BACKWARD_WEIGHTS, "FP32", SPLIT_SHAPE, cfg(32, 16, 2, 1, 3, False, split=2, cp_async=True)),
    (Direction.BACKWARD_WEIGHTS, "FP32", VECTOR_SHAPE, cfg(16, 16, 1, 1, 4, False, vector=True, k_blk=32,
                                                          cp_async=True)),
    (Direction.FORWARD, "FP16", VECTOR_SHAPE, cfg(16, 32, 1, 1, 3, True, transform=True, vector=True, cp_async=True)),
    (Direction.FORWARD, "FP16", ONE_STEP_8, cfg(16, 16, 1, 1, 4, True, vector=True, cp_async=True)),
    # fp16 A in 4-byte pairs (6 channels; P*Q = 42): the weight copy and dy planes
    (Direction.FORWARD, "FP16", ODD, cfg(16, 16, 1, 1, 2, True, transform=True, cp_async=True)),
    (Direction.BACKWARD_WEIGHTS, "FP16", (2, 6, 7, 6, 12, 3, 3, 1, 1, 1, 1), cfg(16, 16, 1, 1, 3, False,
                                                                                 cp_async=True)),
    (Direction.BACKWARD_DATA, "FP16", VECTOR_SHAPE, cfg(16, 16, 1, 1, 4, True, transform=True, vector=True,
                                                       cp_async=True)),
    (Direction.BACKWARD_WEIGHTS, "FP16", VECTOR_SHAPE, cfg(16, 16, 1, 1, 2, False, vector=True, k_blk=32,
                                                          cp_async=True)),
    # fp16 A pairs over odd dy planes (P*Q = 35, N*P*Q = 105 odd): misaligned, plane-straddling and last pairs
    # element by element; with splits (chunks of 32 terms)
    (Direction.BACKWARD_WEIGHTS, "FP16", (3, 6, 7, 5, 12, 3, 3, 1, 1, 1, 1), cfg(16, 16, 1, 1, 3, False,
                                                                                 cp_async=True)),
    (Direction.BACKWARD_WEIGHTS, "FP16", (16, 6, 7, 5, 12, 3, 3, 1, 1, 1, 1), cfg(16, 16, 1, 1, 2, False, split=2,
                                                                                 k_blk=32, cp_async=True)),
]
# split-K forward / backward-data: partials of slice ranges, the fixed-order sum (the epilogue in
# test_emulated_split_k_applies_the_epilogue_in_the_reduction); with the weight copy before them in the workspace
CP_ASYNC_CASES += [
    (Direction.FORWARD, "FP32", ODD, cfg(16, 32, 1, 2, 2, False, split=2)),
    (Direction.FORWARD, "FP16", ODD, cfg(16, 16, 1, 1, 3, True, transform=True, split=4, cp_async=True)),
    (Direction.BACKWARD_DATA, "FP32", ODD, cfg(16, 16, 1, 1, 3, True, transform=True, split=4, cp_async=True)),
    (Direction.BACKWARD_DATA, "FP16", ODD, cfg(16, 32, 1, 2, 1, False, split=2)),
    (Direction.BACKWARD_WEIGHTS, "FP32", SPLIT_SHAPE, cfg(16, 16, 1, 1, 2, False, split=2, cp_async=True)),
]


# VECTOR_B: W = Q = 8; taps s*dil - pad = -2, 0, 2 (aligned for 2-vectors, one tap in three for 4 and 8:
# the others straddle the padding element by element); stride 2 along h; the second shape pads 1 (odd shifts)
VB_SHAPE = (2, 6, 9, 8, 13, 3, 3, (1, 2), (2, 1), (1, 2), 1)
VB_SHAPE_8 = (2, 8, 9, 8, 16, 3, 3, (1, 2), (2, 1), (1, 2), 1)
VB_ODD = (2, 6, 7, 8, 13, 3, 3, 1, 1, 1, 1)
CP_ASYNC_CASES += [
    (Direction.FORWARD, "FP32", VB_SHAPE, cfg(16, 32, 1, 1, 3, True, cp_async=True, vector_b=2)),
    (Direction.FORWARD, "FP32", VB_ODD, cfg(16, 16, 1, 1, 4, True, transform=True, cp_async=True, vector_b=4)),
    (Direction.BACKWARD_DATA, "FP32", VB_SHAPE, cfg(16, 16, 1, 1, 4, True, cp_async=True, vector_b=4)),
    (Direction.BACKWARD_DATA, "FP32", VB_ODD, cfg(16, 32, 1, 2, 1, True, vector_b=2)),
    (Direction.FORWARD, "FP16", VB_SHAPE, cfg(16, 16, 1, 1, 2, True, vector_b=8)),
    (Direction.FORWARD, "FP16", VB_SHAPE_8, cfg(16, 16, 1, 1, 3, True, transform=True, vector=True, cp_async=True,
                                                vector_b=8)),
    (Direction.BACKWARD_DATA, "FP16", VB_SHAPE, cfg(16, 32, 1, 2, 2, True, transform=True, vector_b=4)),
    # fp16 B mixed: aligned vectors by cp.async (4 bytes here), the others through registers
    (Direction.BACKWARD_DATA, "FP16", VB_SHAPE_8, cfg(16, 32, 1, 1, 4, True, transform=True, vector=True,
                                                     cp_async=True, vector_b=2)),
]


# PHASED backward-data (stride > 1, dilation 1): dx in stride_h x stride_w phases, each over its own taps. Stride
# 2 along h and 3 along w with ragged phases (H=9, W=11); a 1x1 at stride 2 (odd phases get no tap: zeros); an
# 11x11 at stride 4 (AlexNet conv1's shape, small); register path, cp.async, flat and channel-blocked loops,
# the weight copy, splits (some splits of a phase's short loop are empty)
PHASED_S2 = (2, 6, 9, 11, 12, 3, 3, (1, 0), (2, 3), 1, 1)
PHASED_1X1 = (2, 8, 9, 10, 16, 1, 1, 0, 2, 1, 1)
PHASED_S4 = (2, 3, 19, 19, 8, 11, 11, 2, 4, 1, 1)
CP_ASYNC_CASES += [
    (Direction.BACKWARD_DATA, "FP32", PHASED_S2, cfg(16, 32, 1, 2, 2, True, transform=True)),
    (Direction.BACKWARD_DATA, "FP32", PHASED_S2, cfg(16, 16, 1, 1, 3, False, cp_async=True)),
    (Direction.BACKWARD_DATA, "FP16", PHASED_S2, cfg(16, 16, 1, 1, 3, True, transform=True, split=2, cp_async=True)),
    (Direction.BACKWARD_DATA, "FP16", PHASED_1X1, cfg(16, 16, 1, 1, 2, True, transform=True, vector=True)),
    (Direction.BACKWARD_DATA, "FP32", PHASED_1X1, cfg(16, 32, 1, 2, 2, False, split=2, k_blk=8, cp_async=True)),
    (Direction.BACKWARD_DATA, "FP32", PHASED_S4, cfg(16, 32, 1, 2, 2, False, split=2)),
    (Direction.BACKWARD_DATA, "FP16", PHASED_S4, cfg(16, 16, 1, 1, 1, True)),
]


# PAD_DY: fp16 backward-weights over odd planes (P*Q = 35, padded to 40) reading dy's zero-padded copy: registers,
# 16-byte vectors by cp.async, pairs by cp.async, splits whose chunks run over the padded terms, with x's copy
PAD_SHAPE = (3, 6, 7, 5, 12, 3, 3, 1, 1, 1, 1)
PAD_SPLIT_SHAPE = (16, 6, 7, 5, 12, 3, 3, 1, 1, 1, 1)
PAD_TX_SHAPE = (16, 8, 7, 5, 12, 3, 3, 1, 1, 1, 1)    # 8 channels: x's copy in 8-vectors
PAD_DY_CASES = [
    (PAD_SHAPE, cfg(16, 16, 1, 1, 2, False, pad_dy=True)),
    (PAD_SHAPE, cfg(16, 16, 1, 1, 3, False, vector=True, k_blk=32, cp_async=True, pad_dy=True)),
    (PAD_SHAPE, cfg(16, 16, 1, 1, 4, False, cp_async=True, pad_dy=True)),
    (PAD_SPLIT_SHAPE, cfg(16, 16, 1, 1, 2, False, split=2, vector=True, k_blk=32, cp_async=True, pad_dy=True)),
    (PAD_TX_SHAPE, cfg(16, 16, 1, 1, 3, False, split=2, vector=True, k_blk=32, cp_async=True, transform_x=True,
                       pad_dy=True)),
]


@pytest.mark.parametrize("shape,params", PAD_DY_CASES, ids=[str(i) for i in range(len(PAD_DY_CASES))])
def test_emulated_padded_dy_matches_float64(handle, shape, params):
    problem = problem_of(Direction.BACKWARD_WEIGHTS, shape, "FP16")
    assert SOLVER.invalid_reason(problem, params, H100) is None, SOLVER.invalid_reason(problem, params, H100)
    solution = SOLVER.solution(problem, params)
    assert [launch.spec.name for launch in solution.launches][:2] in (["pad_dy", "conv_mma"], ["transform_x", "pad_dy"])
    t = host_tensors(problem, seed=8)
    check_within_bound(problem, t, run_solution(handle, emulated(solution), problem, t))


def test_padded_dy_applies_to_fp16_backward_weights_over_planes_not_a_multiple_of_8():
    params = cfg(16, 16, 1, 1, 2, False, pad_dy=True)
    assert SOLVER.invalid_reason(problem_of(Direction.BACKWARD_WEIGHTS, PAD_SHAPE, "FP16"), params, H100) is None
    for problem in (problem_of(Direction.BACKWARD_WEIGHTS, PAD_SHAPE, "FP32"),
                    problem_of(Direction.FORWARD, PAD_SHAPE, "FP16"),
                    problem_of(Direction.BACKWARD_WEIGHTS, VECTOR_SHAPE, "FP16")):   # 8x8 planes
        assert "PAD_DY" in SOLVER.invalid_reason(problem, params, H100)
    # VECTOR_A needs the padded plane (35 is not a multiple of 8)
    odd = problem_of(Direction.BACKWARD_WEIGHTS, PAD_SHAPE, "FP16")
    assert "VECTOR_A" in SOLVER.invalid_reason(odd, cfg(16, 16, 1, 1, 2, False, vector=True, k_blk=32), H100)
    assert SOLVER.invalid_reason(odd, cfg(16, 16, 1, 1, 2, False, vector=True, k_blk=32, pad_dy=True), H100) is None
    # AlexNet conv2's 27x27 fp16 backward-weights: the padded copy, x's copy and cp.async by default
    alexnet = problem_of(Direction.BACKWARD_WEIGHTS, (128, 96, 27, 27, 256, 5, 5, 2, 1, 1, 1), "FP16")
    defaults = SOLVER.default_params(alexnet, H100)
    assert defaults["PAD_DY"] and defaults["TRANSFORM_X"] and defaults["CP_ASYNC"] and defaults["VECTOR_A"]


# COL2IM: backward-data as the column matrix dcol = W^T dy (the 1x1 forward GEMM over dy, COL_OUT: fp32 in the
# workspace) and col2im's gather. 3 channels under an 11x11 filter at stride 4 (AlexNet conv1's shape, small) and 5
# under a 5x5 at stride 2 with uneven pads: staged stores in runs of 4 floats (N*P*Q = 32, 72) and of 1 (N*P*Q = 25),
# fragment-order stores (fp16 bands beyond one stage's tiles), cp.async, two warps each way, dy's channel-fastest copy
COL2IM_S4 = (2, 3, 19, 19, 8, 11, 11, 2, 4, 1, 1)
COL2IM_S2 = (3, 5, 9, 11, 16, 5, 5, (1, 2), 2, 1, 1)
COL2IM_ODD = (1, 3, 13, 13, 8, 5, 5, 0, 2, 1, 1)
COL2IM_CASES = [
    (COL2IM_S4, cfg(16, 16, 1, 1, 2, True, transform=True, col2im=True)),
    (COL2IM_S2, cfg(32, 32, 2, 2, 3, True, transform=True, cp_async=True, col2im=True)),
    (COL2IM_ODD, cfg(16, 32, 1, 1, 1, True, transform=True, col2im=True)),
    (COL2IM_S4, cfg(16, 16, 1, 1, 2, True, transform=True, transform_x=True, col2im=True)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,params", COL2IM_CASES, ids=[str(i) for i in range(len(COL2IM_CASES))])
def test_emulated_col2im_matches_float64(handle, shape, params, dtype):
    problem = problem_of(Direction.BACKWARD_DATA, shape, dtype)
    assert SOLVER.invalid_reason(problem, params, H100) is None, SOLVER.invalid_reason(problem, params, H100)
    solution = SOLVER.solution(problem, params)
    gemm = next(launch for launch in solution.launches if launch.spec.name == "conv_mma")
    assert dict(gemm.spec.defines)["COL_OUT"] == "1" and dict(gemm.spec.defines)["DIRECTION"] == "1"
    assert gemm.args[:3] == ("y", "w", "x") and solution.launches[-1].spec.name == "col2im"
    assert solution.workspace_bytes >= column_bytes(problem) > 0
    t = host_tensors(problem, seed=7)
    check_within_bound(problem, t, run_solution(handle, emulated(solution), problem, t))


def test_col2im_applies_to_one_group_backward_data_with_a_filter_within_the_cap(monkeypatch):
    params = cfg(16, 16, 1, 1, 2, True, transform=True, col2im=True)
    problem = problem_of(Direction.BACKWARD_DATA, COL2IM_S4)
    assert SOLVER.invalid_reason(problem, params, H100) is None
    assert "does not split" in SOLVER.invalid_reason(problem, {**params, "SPLIT": 2}, H100)
    assert "TRANSFORM_W" in SOLVER.invalid_reason(problem, {**params, "TRANSFORM_W": False}, H100)
    assert "COL2IM's GEMM: K tile" in SOLVER.invalid_reason(problem, {**params, "K_BLK": 64}, H100)
    for direction in (Direction.FORWARD, Direction.BACKWARD_WEIGHTS):
        assert "COL2IM" in SOLVER.invalid_reason(problem_of(direction, COL2IM_S4), params, H100)
    grouped = problem_of(Direction.BACKWARD_DATA, (2, 4, 9, 9, 8, 3, 3, 1, 1, 1, 2))
    one_by_one = problem_of(Direction.BACKWARD_DATA, (2, 4, 9, 9, 8, 1, 1, 0, 2, 1, 1))
    wide = problem_of(Direction.BACKWARD_DATA, (2, 16, 9, 9, 8, 3, 3, 1, 1, 1, 1))   # 16 channels fill the mma's rows
    for other in (grouped, one_by_one, wide):
        assert "one group" in SOLVER.invalid_reason(other, params, H100)
        assert not any(p["COL2IM"] for p in itertools.islice(SOLVER.search_space(other, H100), 2000))
    assert any(p["COL2IM"] for p in SOLVER.search_space(problem, H100))
    monkeypatch.setattr(mma.workspace, "COL2IM_CAP", column_bytes(problem) - 1)
    assert "MiB" in SOLVER.invalid_reason(problem, params, H100)


def test_col2im_is_the_default_for_few_input_channels():
    """AlexNet conv1's and ResNet-50's first layers (3 channels) take COL2IM by default, and their workspace holds
    the column matrix; 16 channels keep the direct GEMM (its rows fill the mma) and its workspace."""
    for shape in [(128, 3, 227, 227, 96, 11, 11, 0, 4, 1, 1), (32, 3, 224, 224, 64, 7, 7, 3, 2, 1, 1)]:
        for dtype in DTYPES:
            problem = problem_of(Direction.BACKWARD_DATA, shape, dtype)
            params = SOLVER.default_params(problem, H100)
            assert params["COL2IM"] and SOLVER.invalid_reason(problem, params, H100) is None
            assert SOLVER.workspace_bytes(problem) >= column_bytes(problem)
    wide = problem_of(Direction.BACKWARD_DATA, (2, 16, 9, 9, 8, 3, 3, 1, 1, 1, 1))
    assert not SOLVER.default_params(wide, H100)["COL2IM"]
    assert not mma.col2im_fits(wide)   # so its workspace holds no column matrix


# TRANSFORM_X: B from the channel-fastest copy of x / dy in 16-byte vectors along the channels ([col][kk] tiles):
# 8 channels (two 4-vectors in fp32, one 8-vector in fp16, K_BLK 16 ragged past them), 24 channels over 16-deep
# slices (the last block half empty); pad, stride, dilation, groups of 8 channels; with the weight copy before it
# in the workspace and split partials after it; register path and the cp.async ring; phased backward-data
TX_ODD = (2, 8, 7, 9, 8, 3, 3, (1, 2), (2, 1), (1, 2), 1)
TX_WIDE = (2, 24, 7, 6, 24, 3, 3, 1, 1, 1, 1)
TX_GROUPS = (2, 16, 7, 7, 16, 3, 3, 1, 1, 1, 2)
TX_PHASED = (2, 8, 9, 11, 16, 3, 3, (1, 0), (2, 3), 1, 1)
TX_SPLIT = (8, 8, 9, 9, 24, 3, 3, 1, 1, 1, 1)        # backward-weights: N*P*Q = 648, two chunks
CP_ASYNC_CASES += [
    (Direction.FORWARD, "FP32", TX_ODD, cfg(16, 32, 1, 2, 2, True, transform_x=True)),
    (Direction.FORWARD, "FP32", TX_WIDE, cfg(16, 16, 1, 1, 3, True, transform=True, vector=True, cp_async=True,
                                             transform_x=True)),
    (Direction.FORWARD, "FP16", TX_ODD, cfg(16, 16, 1, 1, 1, True, transform=True, transform_x=True)),
    (Direction.FORWARD, "FP16", TX_GROUPS, cfg(16, 32, 1, 1, 2, True, transform=True, vector=True, split=2,
                                               cp_async=True, transform_x=True)),
    (Direction.BACKWARD_DATA, "FP32", TX_ODD, cfg(16, 16, 1, 1, 4, True, transform=True, cp_async=True,
                                                  transform_x=True)),
    (Direction.BACKWARD_DATA, "FP32", TX_GROUPS, cfg(16, 32, 1, 2, 2, True, split=2, transform_x=True)),
    (Direction.BACKWARD_DATA, "FP16", TX_WIDE, cfg(16, 16, 1, 1, 2, True, transform=True, vector=True, cp_async=True,
                                                   transform_x=True)),
    (Direction.BACKWARD_DATA, "FP32", TX_PHASED, cfg(16, 32, 1, 2, 3, True, transform=True, cp_async=True,
                                                     transform_x=True)),
    (Direction.BACKWARD_DATA, "FP16", TX_PHASED, cfg(16, 16, 1, 1, 2, True, transform=True, split=2,
                                                     transform_x=True)),
    # backward-weights: columns ordered (tap, c), vectors of channels along them, [kk][col] B tiles
    (Direction.BACKWARD_WEIGHTS, "FP32", TX_ODD, cfg(16, 32, 1, 2, 2, False, transform_x=True)),
    (Direction.BACKWARD_WEIGHTS, "FP16", TX_ODD, cfg(16, 16, 1, 1, 1, False, transform_x=True)),
    (Direction.BACKWARD_WEIGHTS, "FP32", TX_SPLIT, cfg(32, 16, 2, 1, 3, False, split=2, cp_async=True,
                                                       transform_x=True)),
    (Direction.BACKWARD_WEIGHTS, "FP16", TX_GROUPS, cfg(16, 32, 1, 2, 2, False, cp_async=True, transform_x=True)),
    (Direction.BACKWARD_WEIGHTS, "FP16", TX_SPLIT, cfg(16, 16, 1, 1, 3, False, split=2, k_blk=32, cp_async=True,
                                                       transform_x=True)),
]


@pytest.mark.parametrize("direction,dtype,shape,params", CP_ASYNC_CASES,
                         ids=[f"{d.name}-{t}-{p['STAGES']}-{i}" for i, (d, t, _, p) in enumerate(CP_ASYNC_CASES)])
def test_emulated_pipelines_match_float64_within_the_format_bound(handle, direction, dtype, shape, params):
    problem = problem_of(direction, shape, dtype)
    assert SOLVER.invalid_reason(problem, params, H100) is None, SOLVER.invalid_reason(problem, params, H100)
    t = host_tensors(problem, seed=2)
    got = run_solution(handle, emulated(SOLVER.solution(problem, params)), problem, t)
    check_within_bound(problem, t, got)


def test_strided_backward_data_runs_in_phases_over_their_own_taps(monkeypatch):
    """Backward-data at stride > 1 (dilation 1) loops over only the taps that reach each phase of dx: AlexNet
    conv1's 11x11 at stride 4 sums 9 taps per phase instead of 121; with dilation the old loop stays."""
    from miopy.conv.solvers.mma import gemm_shape, phased
    problem = problem_of(Direction.BACKWARD_DATA, (4, 3, 227, 227, 96, 11, 11, 0, 4, 1, 1))
    assert phased(problem) and gemm_shape(problem).k == 96 * 9
    assert gemm_shape(problem).n == 16 * 4 * 57 * 57      # 16 phases of ceil(227 / 4)^2 pixels per image
    # the direct GEMM (3 channels take COL2IM by default)
    monkeypatch.setattr(mma.measured, "CHOICES", dataclasses.replace(mma.measured.CHOICES, col2im_channels=0))
    params = SOLVER.default_params(problem, H100)
    assert dict(SOLVER.solution(problem, params).launches[-1].spec.defines)["PHASED"] == "1"
    dilated = problem_of(Direction.BACKWARD_DATA, ODD)
    assert not phased(dilated) and gemm_shape(dilated).k == 13 * 9
    assert not phased(problem_of(Direction.FORWARD, (4, 3, 227, 227, 96, 11, 11, 0, 4, 1, 1)))


def test_emulated_split_k_applies_the_epilogue_in_the_reduction(handle):
    """Forward split-K with a fused bias + ReLU: the partials are raw sums, the reduction adds the bias once and
    clamps (an epilogue applied per split would add the bias twice and clamp partial sums)."""
    import pyopencl as cl
    problem = problem_of(Direction.FORWARD, ODD)
    params = cfg(16, 16, 1, 1, 2, True, transform=True, split=2)
    assert SOLVER.invalid_reason(problem, params, H100) is None
    bias = np.random.default_rng(6).standard_normal(problem.k).astype(np.float32)
    extra = {"bias": cl.Buffer(handle.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=bias),
             "activ_alpha": np.float32(0), "activ_beta": np.float32(0), "activ_gamma": np.float32(0)}
    solution = SOLVER.solution(problem, params, Epilogue(bias=True, activation=ActivationMode.RELU))
    assert [launch.spec.name for launch in solution.launches][-1] == "reduce_splits"
    t = host_tensors(problem, seed=4)
    got = run_solution(handle, emulated(solution), problem, t, extra).astype(np.float64)
    exact = reference.solve(problem, {r: a.astype(np.float64) for r, a in t.items()})
    exact += bias.astype(np.float64)[None, :, None, None]
    assert not np.isnan(got).any() and (got == 0).any()
    assert max_error(got, np.maximum(exact, 0)) <= SOLVER.tolerance


# (shape, the stored run per dtype and direction): output columns run 64 / 64 / 144 elements (forward P*Q,
# backward-data H*W, backward-weights C*R*S: 16-byte stores); 7 x 5 / 7 x 7 / 54 (single elements, pairs);
# 6 x 6 / 6 x 6 / 54 (4-element runs, pairs)
STAGED = [(VECTOR_SHAPE, {"FP32": (4, 4, 4), "FP16": (8, 8, 8)}),
          ((2, 6, 7, 7, 13, 3, 3, (1, 0), 1, 1, 1), {"FP32": (1, 1, 2), "FP16": (1, 1, 2)}),
          ((2, 6, 6, 6, 13, 3, 3, 1, 1, 1, 1), {"FP32": (4, 4, 2), "FP16": (4, 4, 2)})]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
def test_emulated_staged_stores_match_float64(handle, direction, dtype):
    """STAGED_STORE: the sums pass through local memory a band at a time and each lane stores a run of consecutive
    outputs (16 bytes at most) or single elements where the runs are odd; forward applies the epilogue there."""
    import pyopencl as cl

    from miopy.conv.solvers.mma import staged_store
    for shape, runs in STAGED:
        problem = problem_of(direction, shape, dtype)
        params = cfg(16, 32, 1, 2, 2, direction is not Direction.BACKWARD_WEIGHTS)
        vec = runs[dtype][list(Direction).index(direction)]
        assert staged_store(problem, params) == vec and SOLVER.invalid_reason(problem, params, H100) is None
        assert staged_store(problem, {**params, "SPLIT": 2}) == 0
        t, extra, epilogue = host_tensors(problem, seed=7), None, None
        if direction is Direction.FORWARD:
            bias = np.random.default_rng(8).standard_normal(problem.k).astype(problem.dtype.numpy)
            extra = {"bias": cl.Buffer(handle.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                                       hostbuf=bias),
                     "activ_alpha": np.float32(0), "activ_beta": np.float32(0), "activ_gamma": np.float32(0)}
            epilogue = Epilogue(bias=True, activation=ActivationMode.RELU)
        solution = SOLVER.solution(problem, params, epilogue)
        assert dict(solution.launches[-1].spec.defines)["STAGED_STORE"] == str(vec)
        got = run_solution(handle, emulated(solution), problem, t, extra)
        if epilogue is None:
            check_within_bound(problem, t, got)
            continue
        exact = reference.solve(problem, {r: a.astype(np.float64) for r, a in t.items()})
        exact = np.maximum(exact + bias.astype(np.float64)[None, :, None, None], 0)
        assert not np.isnan(got).any() and (got == 0).any()
        assert max_error(got.astype(np.float64), exact) <= SOLVER.tolerance


def ptx_stubbed_build(handle, spec) -> None:
    """Build spec's real (PTX) source on any OpenCL device with every inline asm statement removed: the code
    around the PTX (cp.async, ldmatrix and mma helpers, TF32 conversions, the ring's loop) must compile as it
    will on NVIDIA's OpenCL, and no #error of the kernel may fire for a valid point."""
    import re

    import pyopencl as cl

    from miopy.kernel_cache import kernel_source
    source = "#define asm(...)\n" + re.sub(r"\basm\s+volatile\s*\(", "asm(", kernel_source(spec.file))
    try:
        program = cl.Program(handle.context, source).build(spec.build_options(), devices=[handle.device])
    except cl.RuntimeError as exc:
        raise AssertionError(f"{spec.name} with {spec.build_options()} does not build:\n{exc}") from None
    cl.Kernel(program, spec.name)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
def test_ptx_sources_of_pipeline_points_build_with_the_asm_stubbed(handle, direction, dtype):
    """The default and cp.async points with 2, 3 and 4 stages (ldmatrix on and off; VECTOR_B 2 and widest where
    it applies) of a real layer, as NVIDIA's compiler would see them less the PTX itself (which
    benchmarks/mma_variants.py builds on the GPU)."""
    problem = problem_of(direction, LAYERS[1], dtype)     # ResNet-50 1x1 64->256: fp16 16-byte A copies apply
    base = SOLVER.default_params(problem, H100)
    tile = {"M_BLK": 64, "N_BLK": 64, "K_BLK": 2 * mma_k(problem.dtype), "WARPS_M": 2, "WARPS_N": 2,
            "CP_ASYNC": True, "VECTOR_A": True}
    points = [base] + [{**base, **tile, "STAGES": stages, "LDMATRIX": stages != 3} for stages in (2, 3, 4)]
    if direction is not Direction.BACKWARD_WEIGHTS:   # 56 columns a row: 2-, 4- and (fp16) 8-vectors of B
        widest = 4 if dtype == "FP32" else 8
        points[0], points[1], points[3] = ({**points[0], "VECTOR_B": widest}, {**points[1], "VECTOR_B": 2},
                                           {**points[3], "VECTOR_B": widest})
    specs = []
    for params in points:
        reason = SOLVER.invalid_reason(problem, params, H100)
        assert reason is None, (params, reason)
        specs += [launch.spec for launch in SOLVER.solution(problem, params).launches]
    for spec in dict.fromkeys(specs):
        ptx_stubbed_build(handle, spec)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", [Direction.FORWARD, Direction.BACKWARD_DATA], ids=lambda d: d.name)
def test_ptx_sources_of_transform_x_points_build_with_the_asm_stubbed(handle, direction, dtype):
    """TRANSFORM_X on ResNet-50's 14x14 3x3 layer: the defaults with the copy, by cp.async (2 and 3 stages, ldmatrix
    on [col][kk] B tiles) and on the register path; the copy kernels' specs do not depend on the tiles."""
    problem = problem_of(direction, LAYERS[0], dtype)
    base = {**SOLVER.default_params(problem, H100), "TRANSFORM_X": True}
    points = [base, {**base, "CP_ASYNC": False}, {**base, "CP_ASYNC": True, "STAGES": 3, "N_BLK": 64,
                                                 "SPLIT": 1}]
    specs = []
    for params in points:
        assert SOLVER.invalid_reason(problem, params, H100) is None, (params, SOLVER.invalid_reason(problem, params,
                                                                                                    H100))
        specs.append([launch.spec for launch in SOLVER.solution(problem, params).launches])
    assert [s.name for s in specs[0][:2]] == ["transform_weights", "transform_x"]
    assert all(s[:2] == specs[0][:2] for s in specs)     # one build of each copy for every point
    for spec in dict.fromkeys(sum(specs, [])):
        ptx_stubbed_build(handle, spec)


def test_transform_x_points_say_why(monkeypatch):
    """TRANSFORM_X needs channel blocks (forward / backward-data), channels per group a multiple of the 16-byte
    vector, whole passes of vectors, no VECTOR_B and a copy within the cap; the workspace holds the copy where it
    applies (after the weight copy, before the partials)."""
    from miopy.conv.solvers import mma
    from miopy.conv.solvers.mma import TRANSFORM_X_CAP, transform_x_bytes
    fp32 = problem_of(Direction.FORWARD, LAYERS[0])
    base = {**SOLVER.default_params(fp32, H100), "TRANSFORM_X": True}
    assert SOLVER.invalid_reason(fp32, base, H100) is None
    assert "CHANNEL_BLOCKS" in SOLVER.invalid_reason(fp32, {**base, "CHANNEL_BLOCKS": False, "TRANSFORM_W": False,
                                                            "VECTOR_A": False}, H100)
    assert "VECTOR_B" in SOLVER.invalid_reason(fp32, {**base, "VECTOR_B": 2}, H100)
    odd = problem_of(Direction.FORWARD, (2, 6, 9, 9, 16, 3, 3, 1, 1, 1, 1), "FP16")
    assert "multiple of the 8-element vector" in SOLVER.invalid_reason(
        odd, {**SOLVER.default_params(odd, H100), "TRANSFORM_X": True, "CHANNEL_BLOCKS": True}, H100)
    wgrad = problem_of(Direction.BACKWARD_WEIGHTS, LAYERS[0])     # vectors along the columns: no channel blocks
    assert SOLVER.invalid_reason(wgrad, {**SOLVER.default_params(wgrad, H100), "TRANSFORM_X": True}, H100) is None
    assert any(p["TRANSFORM_X"] for p in itertools.islice(SOLVER.search_space(wgrad, H100), 5000))
    narrow = problem_of(Direction.BACKWARD_WEIGHTS, (2, 12, 9, 9, 16, 3, 3, 1, 1, 1, 1), "FP16")
    assert "multiple of the 8-element vector" in SOLVER.invalid_reason(
        narrow, {**SOLVER.default_params(narrow, H100), "TRANSFORM_X": True}, H100)
    huge = problem_of(Direction.FORWARD, (64, 512, 128, 128, 64, 3, 3, 1, 1, 1, 1))
    assert transform_x_bytes(huge) > TRANSFORM_X_CAP
    assert "MiB" in SOLVER.invalid_reason(huge, {**SOLVER.default_params(huge, H100), "TRANSFORM_X": True}, H100)
    with_copy = SOLVER.workspace_bytes(fp32)
    monkeypatch.setattr(mma.workspace, "TRANSFORM_X_CAP", 0)
    assert with_copy - SOLVER.workspace_bytes(fp32) == transform_x_bytes(fp32) > 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_ptx_sources_of_phased_backward_data_build_with_the_asm_stubbed(handle, dtype, monkeypatch):
    """PHASED backward-data on ResNet-50's 7x7 stride-2 stem: the default point of the direct GEMM and a cp.async one
    with a split."""
    problem = problem_of(Direction.BACKWARD_DATA, LAYERS[3], dtype)
    # 3 channels take COL2IM by default
    monkeypatch.setattr(mma.measured, "CHOICES", dataclasses.replace(mma.measured.CHOICES, col2im_channels=0))
    base = SOLVER.default_params(problem, H100)
    points = [base, {**base, "CP_ASYNC": True, "STAGES": 3, "SPLIT": 2, "VECTOR_A": dtype == "FP16"
                     and base["TRANSFORM_W"], "CHANNEL_BLOCKS": True, "TRANSFORM_W": True}]
    for params in points:
        assert SOLVER.invalid_reason(problem, params, H100) is None, params
        for launch in SOLVER.solution(problem, params).launches:
            assert dict(launch.spec.defines).get("PHASED", "1") == "1"
            ptx_stubbed_build(handle, launch.spec)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ptx_sources_of_col2im_build_with_the_asm_stubbed(handle, dtype):
    """COL2IM on ResNet-50's stem (its default): the GEMM with COL_OUT's staged fp32 runs, with and without dy's
    channel-fastest copy, and col2im."""
    problem = problem_of(Direction.BACKWARD_DATA, LAYERS[3], dtype)
    base = SOLVER.default_params(problem, H100)
    assert base["COL2IM"]
    for params in (base, {**base, "TRANSFORM_X": True}):
        assert SOLVER.invalid_reason(problem, params, H100) is None, params
        specs = [launch.spec for launch in SOLVER.solution(problem, params).launches]
        assert [spec.name for spec in specs][-2:] == ["conv_mma", "col2im"]
        assert dict(specs[-2].defines)["STAGED_STORE"] == "4"
        for spec in specs:
            ptx_stubbed_build(handle, spec)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ptx_sources_of_split_k_and_pair_tail_points_build_with_the_asm_stubbed(handle, dtype):
    """Split-K forward (with a fused bias + ReLU in the reduction) and backward-data on ResNet-50's 14x14 stage,
    with and without cp.async; backward-weights cp.async over AlexNet conv2's odd 27x27 planes (fp16: A pairs
    with the element-by-element tail; and its default, dy's padded copy with 16-byte A vectors)."""
    specs = []
    for direction in (Direction.FORWARD, Direction.BACKWARD_DATA):
        problem = problem_of(direction, LAYERS[0], dtype)
        base = SOLVER.default_params(problem, H100)
        for extra in ({"SPLIT": 4}, {"SPLIT": 2, "CP_ASYNC": True, "STAGES": 3, "K_BLK": mma_k(problem.dtype)}):
            params = {**base, **extra}
            reason = SOLVER.invalid_reason(problem, params, H100)
            assert reason is None, (params, reason)
            epilogue = Epilogue(bias=True, activation=ActivationMode.RELU) if direction is Direction.FORWARD else None
            specs += [launch.spec for launch in SOLVER.solution(problem, params, epilogue).launches]
    wgrad = problem_of(Direction.BACKWARD_WEIGHTS, LAYERS[2], dtype)
    default = SOLVER.default_params(wgrad, H100)
    assert default["PAD_DY"] == (dtype == "FP16")
    params = {**default, "CP_ASYNC": True, "STAGES": 3, "VECTOR_A": False, "PAD_DY": False,
              "M_BLK": 64, "N_BLK": 64, "WARPS_M": 2, "WARPS_N": 2}
    assert SOLVER.invalid_reason(wgrad, params, H100) is None, SOLVER.invalid_reason(wgrad, params, H100)
    specs += [launch.spec for p in (params, default) for launch in SOLVER.solution(wgrad, p).launches]
    for spec in dict.fromkeys(specs):
        ptx_stubbed_build(handle, spec)


# -- on NVIDIA: the tensor cores themselves ----------------------------------------------------------------
POOL = [ODD, (2, 12, 9, 9, 18, 3, 3, 1, 1, 1, 3), (3, 16, 17, 15, 24, 5, 5, 2, 2, 1, 1),
        (4, 64, 14, 14, 96, 1, 1, 0, 1, 1, 1), (2, 256, 14, 14, 64, 3, 3, 1, 1, 1, 1),
        PHASED_S4, (2, 64, 15, 15, 32, 1, 1, 0, 2, 1, 1)]     # backward-data in phases, one with empty phases


def needs_tensor_cores(handle) -> None:
    if not {"tf32", "f16"} <= set(handle.info.ptx_mma):
        pytest.skip("needs NVIDIA OpenCL with PTX mma")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
def test_tensor_cores_match_float64_within_the_format_bound(handle, direction, dtype):
    needs_tensor_cores(handle)
    for i, shape in enumerate(POOL):
        problem = problem_of(direction, shape, dtype)
        assert SOLVER.not_applicable_reason(problem, handle.info) is None
        points = [SOLVER.default_params(problem, handle.info)] + SOLVER.sample_space(problem, handle.info, 2, seed=i)
        copied = [{**points[0], "TRANSFORM_X": True, "CHANNEL_BLOCKS": True, "VECTOR_B": 0, "CP_ASYNC": c, "STAGES": 2}
                  for c in (False, True)]     # B from the channel-fastest copy, on registers and by cp.async
        points += [p for p in copied if SOLVER.is_valid(problem, p, handle.info)]
        t = host_tensors(problem, seed=i)
        for params in points:
            check_within_bound(problem, t, run_solution(handle, SOLVER.solution(problem, params), problem, t), params)


def test_tf32_find_ranks_tensor_cores_first_and_strict_never_offers_them(handle):
    needs_tensor_cores(handle)
    assert get_solutions(handle, problem_of(Direction.FORWARD, POOL[3]))[0].solver_id == SOLVER.id
    strict = get_solutions(handle, problem_of(Direction.FORWARD, POOL[3], math_mode="strict"))
    assert strict.skipped[SOLVER.id] == "math mode strict forbids TF32"


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_core_epilogue_bias_relu(handle, dtype):
    needs_tensor_cores(handle)
    problem = problem_of(Direction.FORWARD, POOL[2], dtype)
    import pyopencl as cl
    rng = np.random.default_rng(5)
    bias = rng.standard_normal(problem.k).astype(problem.dtype.numpy)   # bias has the data's type
    epilogue = Epilogue(bias=True, activation=ActivationMode.RELU)
    t = host_tensors(problem, seed=3)
    extra = {"bias": cl.Buffer(handle.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=bias),
             "activ_alpha": np.float32(0), "activ_beta": np.float32(0), "activ_gamma": np.float32(0)}
    params = SOLVER.default_params(problem, handle.info)
    got = run_solution(handle, SOLVER.solution(problem, params, epilogue), problem, t, extra).astype(np.float64)
    exact = reference.solve(problem, {r: a.astype(np.float64) for r, a in t.items()})
    exact += bias.astype(np.float64)[None, :, None, None]
    assert OUTPUT_ROLE[problem.direction] == "y" and not np.isnan(got).any()
    assert max_error(got, np.maximum(exact, 0)) <= SOLVER.tolerance


def test_tf32_warm_calls_compile_nothing(handle, monkeypatch):
    """A handle in math mode tf32, each direction run through the tensor-core solver (by record): after the
    first call, calls build no kernel."""
    needs_tensor_cores(handle)
    import miopy
    from miopy.kernel_cache import KernelCache
    own = miopy.Handle(device=handle.device, context=handle.context, math_mode="tf32")
    xd, wd, conv = TensorDesc("FP32", (2, 16, 9, 9)), TensorDesc("FP32", (24, 16, 3, 3)), ConvDesc(1)
    yd = conv.output_desc(xd, wd)
    rng = np.random.default_rng(0)
    x, w, y = (own.to_device(rng.standard_normal(d.dims).astype(np.float32)) for d in (xd, wd, yd))

    def record(direction):
        problem = ConvProblem.create(direction, xd, wd, conv, yd, math_mode="tf32")
        return miopy.ConvAlgoPerf(SOLVER.id, SOLVER.algorithm, 1.0, SOLVER.workspace_bytes(problem),
                                  SOLVER.default_params(problem, own.info))
    fwd, bwd, wrw = (record(d) for d in Direction)
    calls = [lambda: miopy.convolution_forward(own, xd, x, wd, w, conv, yd, y, algo=fwd),
             lambda: miopy.convolution_backward_data(own, yd, y, wd, w, conv, xd, x, algo=bwd),
             lambda: miopy.convolution_backward_weights(own, yd, y, xd, x, conv, wd, w, algo=wrw)]
    for call in calls:
        call()
    own.finish()

    def forbidden(*args, **kwargs):
        raise AssertionError("a warm call built a kernel")
    monkeypatch.setattr(KernelCache, "kernel", forbidden)
    monkeypatch.setattr(KernelCache, "new_kernel", forbidden)
    for call in calls * 2:
        call()
    own.finish()


def test_default_params_copy_x_where_the_h100_measured_it_faster():
    """TRANSFORM_X by default (see _copied): fp16 and TF32 backward-weights on large stride-1 planes (TF32 only where
    the copy is small against the GEMM), TF32 forward / backward-data with many output rows x taps; never for 1x1
    filters, fp16 forward / backward-data, or where it is invalid (channels not a multiple of the vector)."""
    def copied(direction, shape, dtype):
        return SOLVER.default_params(problem_of(direction, shape, dtype), H100)["TRANSFORM_X"]
    vgg_conv8 = (32, 512, 28, 28, 512, 3, 3, 1, 1, 1, 1)
    assert copied(Direction.BACKWARD_WEIGHTS, vgg_conv8, "FP16") and copied(Direction.BACKWARD_WEIGHTS, vgg_conv8,
                                                                             "FP32")
    assert copied(Direction.FORWARD, vgg_conv8, "FP32") and copied(Direction.BACKWARD_DATA, vgg_conv8, "FP32")
    assert not copied(Direction.FORWARD, vgg_conv8, "FP16") and not copied(Direction.BACKWARD_DATA, vgg_conv8, "FP16")
    vgg_conv3 = (32, 64, 112, 112, 128, 3, 3, 1, 1, 1, 1)        # the copy of x is large against the GEMM
    assert copied(Direction.BACKWARD_WEIGHTS, vgg_conv3, "FP16") and not copied(Direction.BACKWARD_WEIGHTS,
                                                                                vgg_conv3, "FP32")
    for direction in Direction:
        for dtype in DTYPES:
            assert not copied(direction, LAYERS[1], dtype)                       # 1x1
            assert not copied(direction, (32, 510, 28, 28, 510, 3, 3, 1, 1, 1, 1), dtype)   # 510 channels


def test_wgmma_header_is_what_ptx_patch_generates():
    """miopy/kernels/wgmma.h is generated: it must match ptx_patch.header() (regenerate it after changing either)."""
    from miopy import ptx_patch
    from miopy.kernel_cache import KERNEL_DIR
    path = KERNEL_DIR / ptx_patch.HEADER_FILE
    assert path.read_text() == ptx_patch.header()
    assert tuple(mma.WGMMA_N) == ptx_patch.SHAPES_N


def test_ptx_patch_makes_marked_lines_live_only_on_an_sm90_target():
    from miopy import ptx_patch
    ptx = ".version 9.0\n.target sm_90, texmode_independent\n\t//@wgmma.fence.sync.aligned;\n\tbar.sync 0;\n"
    out = ptx_patch.patch(ptx)
    assert ".target sm_90a, texmode_independent" in out and "\twgmma.fence.sync.aligned;" in out and "//@" not in out
    assert ptx_patch.patch(ptx.replace("sm_90", "sm_80")) is None      # no wgmma there: leave it to fail
    assert ptx_patch.patch(ptx.replace("//@", "// ")) is None          # nothing to patch


def test_a_binary_without_ptx_is_not_rebuilt(handle):
    """ptx_patch.rebuilt leaves a program whose binary is not sm_90 PTX alone (PoCL's, with the marker in its
    source): kernel_cache keeps the first build."""
    import pyopencl as cl

    from miopy import ptx_patch
    prg = cl.Program(handle.context, "__kernel void k(__global float* x) { x[0] = 3.0f; } /* //@ */").build()
    assert ptx_patch.rebuilt(prg, handle.device) is None
