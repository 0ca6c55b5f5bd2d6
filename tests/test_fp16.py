"""FP16 beyond the conformance test: the descriptor API (alpha / beta, transpose), find and perf records keyed
by dtype, kernel cache keys, the functional layer, fusion (bias, batch norm, residual add, activation),
standalone activation, the split and chunked backward-weights paths, and workspace sizes.

Every result is checked against float64 computed from the FP16-rounded inputs, outputs poisoned, at the
bound of tests.helpers.tolerance (the FP16 output's rounding plus the fp32 sum's bound; docs/guide/fp16.md).
"""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import miopy
from miopy import ActivationMode, BadParam, ConvDesc, Direction, FusionPlan, OperatorArgs, TensorDesc, db
from miopy.accuracy import max_error
from miopy.accuracy import tolerance as format_tolerance
from miopy.activation import activation_backward, activation_forward
from miopy.activation.reference import backward_reference, forward_reference
from miopy.conv import reference, registry
from miopy.conv.functional import conv2d, conv_transpose2d
from miopy.conv.problem import OUTPUT_ROLE, map_problem
from miopy.conv.solvers import im2col_gemm
from miopy.find import find_problem, get_solutions, params_for
from miopy.fusion.epilogue import Epilogue, apply_reference
from tests.helpers import (
    DEFAULT_TOLERANCE,
    check_solution,
    make_problem,
    posed_for,
    random_tensors,
    run_solution,
    skip_unless_runs_here,
    tolerance,
)
from tests.test_fusion import EPILOGUE_SOLVERS

HALF = np.float16
U16 = miopy.DataType.FLOAT16.unit_roundoff


def _rand(rng, shape, scale=1.0) -> np.ndarray:
    return (scale * rng.standard_normal(shape)).astype(HALF)


def _poisoned(handle, shape) -> cl_array.Array:
    return handle.to_device(np.full(shape, np.nan, HALF))


def _bound(base: float = DEFAULT_TOLERANCE, roundings: int = 1) -> float:
    return roundings * U16 + base


def test_format_facts():
    assert U16 == 2.0 ** -11 and miopy.DataType.FLOAT32.unit_roundoff == 2.0 ** -24
    assert format_tolerance(miopy.DataType.FLOAT16, 4096, "strict", 1e-3) == pytest.approx(2.0 ** -11 + 2e-3)


@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
def test_descriptor_api_blends_in_fp16(handle, direction):
    """y = alpha * conv + beta * y in each direction, through the solver immediate mode ranks first."""
    x_desc, w_desc, conv = TensorDesc("FP16", (2, 6, 9, 9)), TensorDesc("FP16", (8, 3, 3, 3)), ConvDesc(1, groups=2)
    y_desc = conv.output_desc(x_desc, w_desc)
    rng = np.random.default_rng(int(direction))
    host = {"x": _rand(rng, x_desc.dims), "w": _rand(rng, w_desc.dims), "y": _rand(rng, y_desc.dims)}
    problem = map_problem(direction, x_desc, w_desc, conv).problem
    algo = get_solutions(handle, problem)[0]
    out = OUTPUT_ROLE[direction]
    dev = {r: handle.to_device(a) for r, a in host.items()}
    alpha, beta = 0.75, -0.5
    if direction is Direction.FORWARD:
        miopy.convolution_forward(handle, x_desc, dev["x"], w_desc, dev["w"], conv, y_desc, dev["y"], algo=algo,
                                  alpha=alpha, beta=beta)
    elif direction is Direction.BACKWARD_DATA:
        miopy.convolution_backward_data(handle, y_desc, dev["y"], w_desc, dev["w"], conv, x_desc, dev["x"],
                                        algo=algo, alpha=alpha, beta=beta)
    else:
        miopy.convolution_backward_weights(handle, y_desc, dev["y"], x_desc, dev["x"], conv, w_desc, dev["w"],
                                           algo=algo, alpha=alpha, beta=beta)
    want = alpha * reference.solve(problem, host) + beta * host[out].astype(np.float64)
    tol = _bound(registry.get(algo.solver_id).tolerance or DEFAULT_TOLERANCE, roundings=2)  # result, then blend
    assert max_error(dev[out].get(), want) <= tol


def test_transpose_forward_in_fp16(handle):
    x_desc, w_desc = TensorDesc("FP16", (2, 4, 5, 5)), TensorDesc("FP16", (4, 3, 3, 3))
    conv = ConvDesc(1, stride=2, mode="transpose", output_padding=1)
    y_desc = conv.output_desc(x_desc, w_desc)
    rng = np.random.default_rng(3)
    x, w = _rand(rng, x_desc.dims), _rand(rng, w_desc.dims)
    y = _poisoned(handle, y_desc.dims)
    miopy.convolution_forward(handle, x_desc, handle.to_device(x), w_desc, handle.to_device(w), conv, y_desc, y)
    want = reference.transpose_forward(x, w, (1, 1), (2, 2), output_padding=(1, 1))
    assert y.dtype == HALF and max_error(y.get(), want) <= _bound(1e-3)


def test_functional_layer_takes_float16_arrays(handle):
    rng = np.random.default_rng(5)
    x, w, wt = _rand(rng, (2, 3, 8, 8)), _rand(rng, (4, 3, 3, 3)), _rand(rng, (3, 2, 3, 3))
    y = conv2d(handle.to_device(x), handle.to_device(w), stride=2, padding=1, handle=handle)
    assert y.dtype == HALF and y.shape == (2, 4, 4, 4)
    assert max_error(y.get(), reference.conv_forward(x, w, (1, 1), (2, 2))) <= _bound(1e-3)
    yt = conv_transpose2d(handle.to_device(x), handle.to_device(wt), padding=1, handle=handle)
    assert yt.dtype == HALF
    assert max_error(yt.get(), reference.transpose_forward(x, wt, (1, 1))) <= _bound(1e-3)


def test_fp32_records_never_serve_fp16(fresh_dbs, handle, monkeypatch):
    naive = registry.get("ConvDirectNaive")
    monkeypatch.setattr(registry.REGISTRY, "ALL", (naive,))
    single, half = (make_problem(Direction.FORWARD, 1, 4, 6, 6, 4, 3, 3, 1, dtype=d) for d in ("FP32", "FP16"))
    assert single.key().replace("-FP32-", "-FP16-") == half.key() != single.key()
    db.user_perf_db().put(handle.info.device_id, single.key(), naive.id, {"WG": 256}, 1.0)
    find_problem(handle, single, timer=lambda h, p, b: 1.0, mode="normal", store=True)
    assert get_solutions(handle, single).from_db and params_for(naive, single, handle)[1] == "user perf DB"
    served = get_solutions(handle, half)
    assert not served.from_db and served[0].problem_key == half.key()
    assert params_for(naive, half, handle) == ({"WG": 64}, "default")


def _device_gated(solver) -> bool:
    """Solvers made for one kind of device (tensor cores on NVIDIA, CPU-shaped tiles)."""
    return bool(getattr(solver, "tensor_cores", False) or getattr(solver, "device_class", None))


def test_kernel_cache_keys_name_the_dtype(handle):
    """Every launch that touches a tensor is built with MIOPY_HALF set to the problem's dtype (the cache key
    hashes the defines), in every solver and direction; only workspace-only kernels (Winograd's GEMM) are
    shared between dtypes."""
    for solver, direction in [(s, d) for s in registry.ALL for d in sorted(s.directions)]:
        # solution() is pure: a tensor-core solver is asked as on a device with PTX mma, fp32 under tf32
        info = dataclasses.replace(handle.info, ptx_mma=("tf32", "f16")) if solver.tensor_cores else handle.info
        for dtype, flag in (("FP32", "0"), ("FP16", "1")):
            problem = next((p for p in (posed_for(solver, make_problem(direction, *s[:-1], groups=s[-1],
                                                                       dtype=dtype)) for s in _SHAPES)
                            if solver.is_applicable(p, info)), None)
            if problem is None:             # only a solver made for other devices applies to none of them
                assert _device_gated(solver), (solver.id, direction, dtype)
                continue
            for launch in solver.solution(problem, solver.default_params(problem, info)).launches:
                if set(launch.args) & {"x", "w", "y"}:
                    assert ("MIOPY_HALF", flag) in launch.spec.defines, (solver.id, launch.spec.name)


_SHAPES = [(2, 8, 10, 10, 8, 3, 3, 1, 1, 1, 1), (2, 8, 9, 9, 16, 1, 1, 0, 1, 1, 1), (3, 40, 1, 1, 9, 1, 1, 0, 1, 1, 1),
           (2, 8, 10, 10, 8, 3, 3, 1, 1, 1, 8),   # depthwise (groups = C = K)
           (2, 8, 9, 9, 8, 5, 5, 2, 1, 1, 1)]     # 5x5 (Winograd F(2x2,5x5) / F(3x3,5x5))


@pytest.mark.parametrize("solver", EPILOGUE_SOLVERS, ids=lambda s: s.id)
def test_every_epilogue_hook_in_fp16(handle, solver):
    """bias (FP16) + spatial batch norm (FP32 operands) + alpha * z (FP16) + leaky relu, stored in FP16."""
    skip_unless_runs_here(solver, handle.info)
    problem = next((p for p in (make_problem(Direction.FORWARD, *s[:-1], groups=s[-1], dtype="FP16")
                                for s in _SHAPES) if solver.is_applicable(p, handle.info)), None)
    if problem is None:
        assert _device_gated(solver), solver.id
        pytest.skip(f"{solver.id} does not apply to this device")
    epilogue = Epilogue(bias=True, batchnorm=miopy.BatchNormMode.SPATIAL, activation=ActivationMode.LEAKY_RELU,
                        add=True)
    rng = np.random.default_rng(4)
    k = problem.k
    host = {"bias": _rand(rng, k), "z": _rand(rng, problem.y.dims),
            **{r: rng.standard_normal(k).astype(np.float32) for r in ("bn_scale", "bn_shift", "bn_mean")},
            "bn_var": rng.uniform(0.5, 2, k).astype(np.float32)}
    scalars = {"bn_epsilon": 1e-3, "z_alpha": -0.7, "activ_alpha": 0.2, "activ_beta": 1.0, "activ_gamma": 1.0}
    mf = cl.mem_flags
    extra = {r: cl.Buffer(handle.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=v) for r, v in host.items()}
    extra.update({r: np.float32(v) for r, v in scalars.items()})
    t = random_tensors(problem)
    got = run_solution(handle, solver.solution(problem, solver.default_params(problem, handle.info), epilogue),
                       problem, t, extra)
    assert got.dtype == HALF
    conv = reference.conv_forward(t["x"], t["w"], problem.conv.pad, problem.conv.stride, problem.conv.dilation,
                                  problem.groups)
    want = apply_reference(epilogue, conv, {**host, **scalars})
    assert max_error(got, want) <= tolerance(solver, problem) * 4   # batch norm scales the sum's error


def test_fusion_plan_resnet_tail_in_fp16(handle):
    """relu(bn(conv(x)) + z) through a FusionPlan on FP16 data; batch-norm operands are FP32, a bias FP16."""
    x_desc, w_desc, conv = TensorDesc("FP16", (2, 8, 7, 7)), TensorDesc("FP16", (8, 8, 3, 3)), ConvDesc(1)
    plan = FusionPlan(handle, x_desc)
    ops = (plan.add_conv_forward(conv, w_desc), plan.add_bias_forward(), plan.add_batchnorm_inference("spatial"),
           plan.add_tensor_add(), plan.add_activation_forward("relu"))
    assert ops[1].bias_desc.dtype.value == "FP16" and ops[2].param_desc.dtype.value == "FP32"
    plan.compile(benchmark=False)
    rng = np.random.default_rng(9)
    x, w, z, bias = _rand(rng, x_desc.dims), _rand(rng, w_desc.dims), _rand(rng, (2, 8, 7, 7)), _rand(rng, (1, 8, 1, 1))
    bn = {r: rng.standard_normal((1, 8, 1, 1)).astype(np.float32) for r in ("bn_scale", "bn_shift", "bn_mean")}
    bn["bn_var"] = rng.uniform(0.5, 2, (1, 8, 1, 1)).astype(np.float32)
    dev = {k: handle.to_device(v) for k, v in {"w": w, "z": z, "bias": bias, **bn}.items()}
    args = (OperatorArgs().set_conv_forward(ops[0], dev["w"]).set_bias_forward(ops[1], dev["bias"])
            .set_batchnorm_inference(ops[2], dev["bn_scale"], dev["bn_shift"], dev["bn_mean"], dev["bn_var"], 1e-5)
            .set_tensor_add(ops[3], dev["z"], 1.0).set_activation_forward(ops[4]))
    y = _poisoned(handle, (2, 8, 7, 7))
    plan.execute(handle.to_device(x), y, args)
    epilogue = Epilogue(bias=True, batchnorm=miopy.BatchNormMode.SPATIAL, activation=ActivationMode.RELU, add=True)
    want = apply_reference(epilogue, reference.conv_forward(x, w, (1, 1)),
                           {"bias": bias, **bn, "bn_epsilon": 1e-5, "z": z, "z_alpha": 1.0, "activ_alpha": 1.0,
                            "activ_beta": 1.0, "activ_gamma": 1.0})
    assert max_error(y.get(), want) <= _bound(1e-3)


def test_fusion_parameter_dtypes_are_checked(handle):
    plan = FusionPlan(handle, TensorDesc("FP16", (1, 4, 5, 5)))
    plan.add_conv_forward(ConvDesc(1), TensorDesc("FP16", (4, 4, 3, 3)))
    with pytest.raises(BadParam) as info:
        plan.add_bias_forward(TensorDesc("FP32", (1, 4, 1, 1)))
    assert info.value.field == "bias_desc.dtype"
    with pytest.raises(BadParam) as info:
        plan.add_batchnorm_inference("spatial", TensorDesc("FP16", (1, 4, 1, 1)))
    assert info.value.field == "bn_desc.dtype"


@pytest.mark.parametrize("mode", list(ActivationMode), ids=lambda m: m.name)
def test_activation_forward_and_backward_in_fp16(handle, mode):
    dims, alpha, beta, gamma = (2, 3, 5, 7), 1.3, 0.8, 1.7
    rng = np.random.default_rng(int(mode))
    desc = TensorDesc("FP16", dims)
    x, dy = _rand(rng, dims, 3.0), _rand(rng, dims)
    xa, ya, dxa = handle.to_device(x), _poisoned(handle, dims), _poisoned(handle, dims)
    activation_forward(handle, mode, alpha, beta, gamma, desc, xa, desc, ya)
    y = ya.get()
    assert max_error(y, forward_reference(mode, x, alpha, beta, gamma)) <= _bound(1e-5)
    activation_backward(handle, mode, alpha, beta, gamma, desc, ya, desc, handle.to_device(dy), desc, xa, desc, dxa)
    # y is an input of the backward: where MIOpen's formula reads it, the reference reads the same FP16 y
    by_y = _BACKWARD_FROM_Y.get(mode)
    want = (backward_reference(mode, dy, x, alpha, beta, gamma) if by_y is None
            else by_y(*(a.astype(np.float64) for a in (dy, x, y)), alpha, beta, gamma))
    assert max_error(dxa.get(), want) <= _bound(1e-5)


_BACKWARD_FROM_Y = {   # MIOpen's backward formulas of the modes that use y = f(x) (kernels/activation.h)
    ActivationMode.LOGISTIC: lambda dy, x, y, a, b, g: dy * y * (1 - y),
    ActivationMode.TANH: lambda dy, x, y, a, b, g: dy * a * (b - y * y / b),
    ActivationMode.POWER: lambda dy, x, y, a, b, g: np.where(a + b * x <= 1e-6, 0.0, dy * g * b * y / (a + b * x)),
    ActivationMode.ELU: lambda dy, x, y, a, b, g: np.where(x > 0, dy, dy * (y + a)),
}


SPLITS = [  # (solver id, params overriding the defaults): the float-partial paths of backward-weights
    ("ConvGemm1x1", {"SPLIT_K": 4}),
    ("ConvIm2colGemm", {"SPLIT_K": 4}),
    ("ConvDirectLocal", {"SPLIT": 2}),
]


@pytest.mark.parametrize("solver_id,override", SPLITS, ids=[s for s, _ in SPLITS])
def test_split_backward_weights_in_fp16(handle, solver_id, override):
    solver = registry.get(solver_id)
    r = 1 if solver_id == "ConvGemm1x1" else 3
    problem = make_problem(Direction.BACKWARD_WEIGHTS, 4, 6, 16, 16, 8, r, r, r // 2, dtype="FP16")
    params = {**solver.default_params(problem, handle.info), **override}
    assert solver.is_valid(problem, params, handle.info), solver.invalid_reason(problem, params, handle.info)
    check_solution(handle, solver, problem, params)


def test_image_chunks_sum_in_float_partials(handle, monkeypatch):
    """Backward-weights over several image chunks adds the chunks in float, then rounds dw once."""
    monkeypatch.setattr(im2col_gemm, "COLUMN_CAP_BYTES", 2 * 4 * 9 * 8 * 8 * 2)   # two images of FP16 columns
    solver = registry.get("ConvIm2colGemm")
    problem = make_problem(Direction.BACKWARD_WEIGHTS, 6, 4, 8, 8, 5, 3, 3, 1, dtype="FP16")
    assert im2col_gemm.images_per_chunk(problem) == 2
    params = solver.default_params(problem, handle.info)
    assert params["SPLIT_K"] == 1
    names = [launch.spec.name for launch in solver.solution(problem, params).launches]
    assert names.count("im2col") == 3 and names[-1] == "split_reduce"
    check_solution(handle, solver, problem, params)


def test_workspace_sizes_follow_the_itemsize():
    solver = registry.get("ConvIm2colGemm")
    for direction, ratio in ((Direction.FORWARD, 2), (Direction.BACKWARD_DATA, 1)):   # backward-data's column is float
        single, half = (make_problem(direction, 2, 8, 10, 10, 8, 3, 3, 1, dtype=d) for d in ("FP32", "FP16"))
        assert solver.workspace_bytes(single) == ratio * solver.workspace_bytes(half)


def test_driver_command_names_the_dtype_and_math_mode():
    half = make_problem(Direction.FORWARD, 1, 4, 6, 6, 4, 3, 3, 1, dtype="FP16")
    assert half.driver_command().startswith("convfp16 -n 1 -c 4 ")
    single = map_problem(Direction.FORWARD, TensorDesc("FP32", (1, 4, 6, 6)), TensorDesc("FP32", (4, 4, 3, 3)),
                         ConvDesc(1, math_mode="tf32")).problem
    assert single.driver_command().startswith("conv -n 1") and single.driver_command().endswith("--math_mode tf32")


def test_network_layers_in_fp16_and_tf32():
    from miopy.conv.networks import VGG16
    layer = VGG16[1]
    assert layer.problem(2, dtype="FP16").key().endswith("-NCHW-FP16-F")
    assert layer.problem(2, Direction.BACKWARD_DATA, math_mode="tf32").key().endswith("-FP32-B-tf32")
