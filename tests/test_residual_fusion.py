"""Residual fusion: conv (+ bias) (+ batch norm) + z + activation in one kernel. Every convolution solver's
epilogue hook adds z at the right element; a ResNet block tail compiles once and runs with new arguments,
in place on z too; batch norm + add + activation without a convolution; the one-call form; refusals."""
import numpy as np
import pyopencl as cl
import pytest

from miopy import (
    ActivationMode,
    BadParam,
    BatchNormMode,
    ConvDesc,
    Direction,
    FusionPlan,
    NotSupported,
    OperatorArgs,
    TensorDesc,
    conv_bias_activation_forward,
)
from miopy.accuracy import max_error
from miopy.conv import reference
from miopy.conv.solvers.naive import ConvDirectNaive
from miopy.fusion.epilogue import Epilogue, apply_reference
from tests.helpers import conv_pool, posed_for, random_tensors, run_solution, skip_unless_runs_here
from tests.test_fusion import EPILOGUE_SOLVERS, _choice_tolerance, _only_fused, _tolerance


@pytest.mark.parametrize("solver", EPILOGUE_SOLVERS, ids=lambda s: s.id)
def test_every_epilogue_hook_adds_z(handle, solver):
    """bias + spatial batch norm + alpha * z + leaky relu: z is read at each output's own offset."""
    skip_unless_runs_here(solver, handle.info)
    problem = next(q for q in (posed_for(solver, p) for p in conv_pool(Direction.FORWARD))
                   if solver.is_applicable(q, handle.info))
    assert "add" in solver.epilogue_ops
    epilogue = Epilogue(bias=True, batchnorm=BatchNormMode.SPATIAL, activation=ActivationMode.LEAKY_RELU, add=True)
    rng = np.random.default_rng(4)
    k = problem.k
    host = {"bias": rng.standard_normal(k), "bn_scale": rng.standard_normal(k), "bn_shift": rng.standard_normal(k),
            "bn_mean": rng.standard_normal(k), "bn_var": rng.uniform(0.5, 2, k),
            "z": rng.standard_normal(problem.y.dims)}
    host = {r: v.astype(np.float32) for r, v in host.items()}
    scalars = {"bn_epsilon": 1e-3, "z_alpha": -0.7, "activ_alpha": 0.2, "activ_beta": 1.0, "activ_gamma": 1.0}
    mf = cl.mem_flags
    extra = {r: cl.Buffer(handle.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=v) for r, v in host.items()}
    extra.update({r: np.float32(v) for r, v in scalars.items()})
    t = random_tensors(problem)
    got = run_solution(handle, solver.solution(problem, solver.default_params(problem, handle.info), epilogue),
                       problem, t, extra)
    conv = reference.conv_forward(t["x"], t["w"], problem.conv.pad, problem.conv.stride, problem.conv.dilation,
                                  problem.groups)
    assert max_error(got, apply_reference(epilogue, conv, {**host, **scalars})) <= _tolerance(solver)


def _resnet_tail(handle, x_desc, w_desc, conv):
    plan = FusionPlan(handle, x_desc)
    ops = (plan.add_conv_forward(conv, w_desc), plan.add_batchnorm_inference("spatial"), plan.add_tensor_add(),
           plan.add_activation_forward("relu"))
    return plan, ops


def test_resnet_block_tail_compiles_once_and_runs_new_arguments(handle):
    """relu(bn(conv(x)) + identity) on a reduced ResNet-50 3x3 layer: three argument sets, the last in place
    on z; nothing compiles after the first execution."""
    x_desc, w_desc, conv = TensorDesc("FP32", (1, 16, 14, 14)), TensorDesc("FP32", (16, 16, 3, 3)), ConvDesc(1)
    plan, ops = _resnet_tail(handle, x_desc, w_desc, conv)
    choice = plan.compile(benchmark=False)
    assert plan.fused_problem().describe() == "conv -> batchnorm(SPATIAL) -> add(z) -> activation(RELU)"
    rng = np.random.default_rng(6)
    x = rng.standard_normal(x_desc.dims).astype(np.float32)
    xa, compiled = handle.to_device(x), None
    for i in range(3):
        w = rng.standard_normal(w_desc.dims).astype(np.float32)
        scale, shift, mean = (rng.standard_normal((1, 16, 1, 1)).astype(np.float32) for _ in range(3))
        var = rng.uniform(0.5, 2, (1, 16, 1, 1)).astype(np.float32)
        z = rng.standard_normal(plan.output_desc.dims).astype(np.float32)
        za = handle.to_device(z)
        ya = za if i == 2 else handle.to_device(np.full(z.shape, np.nan, np.float32))
        args = (OperatorArgs().set_conv_forward(ops[0], handle.to_device(w))
                .set_batchnorm_inference(ops[1], *(handle.to_device(a) for a in (scale, shift, mean, var)), 1e-5)
                .set_tensor_add(ops[2], za, alpha=1.0 + i).set_activation_forward(ops[3]))
        plan.execute(xa, ya, args)
        compiled = compiled if compiled is not None else handle.cache_stats()["compiled"]
        bn = scale * (reference.conv_forward(x, w, (1, 1)) - mean) / np.sqrt(var + 1e-5) + shift
        assert max_error(ya.get(), np.maximum(bn + (1.0 + i) * z, 0)) <= _choice_tolerance(choice)
    assert handle.cache_stats()["compiled"] == compiled


def test_batchnorm_add_activation_without_convolution(handle):
    x_desc = TensorDesc("FP32", (2, 3, 4, 5))
    plan = FusionPlan(handle, x_desc)
    ops = (plan.add_batchnorm_inference("per_activation"), plan.add_tensor_add(), plan.add_activation_forward("tanh"))
    assert plan.compile(benchmark=False).solver_id == "BatchNormActivInference"
    rng = np.random.default_rng(7)
    x, z = rng.standard_normal(x_desc.dims).astype(np.float32), rng.standard_normal(x_desc.dims).astype(np.float32)
    p = [rng.standard_normal((1, 3, 4, 5)).astype(np.float32) for _ in range(3)] + \
        [rng.uniform(0.5, 2, (1, 3, 4, 5)).astype(np.float32)]
    y = handle.empty(x_desc.dims)
    args = (OperatorArgs().set_batchnorm_inference(ops[0], *(handle.to_device(a) for a in p), 1e-3)
            .set_tensor_add(ops[1], handle.to_device(z), 0.5).set_activation_forward(ops[2], 1.0, 1.0))
    plan.execute(handle.to_device(x), y, args)
    expected = np.tanh(p[0] * (x - p[2]) / np.sqrt(p[3] + 1e-3) + p[1] + 0.5 * z)
    assert max_error(y.get(), expected) <= 1e-5


def test_one_call_form_with_z(handle):
    x_desc, w_desc, conv = TensorDesc("FP32", (2, 4, 7, 7)), TensorDesc("FP32", (6, 4, 3, 3)), ConvDesc(1, 2)
    y_desc = conv.output_desc(x_desc, w_desc)
    b_desc = TensorDesc("FP32", (1, 6, 1, 1))
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal(x_desc.dims).astype(np.float32), rng.standard_normal(w_desc.dims).astype(np.float32)
    b, z = rng.standard_normal(b_desc.dims).astype(np.float32), rng.standard_normal(y_desc.dims).astype(np.float32)
    dev = {k: handle.to_device(v) for k, v in {"x": x, "w": w, "b": b, "z": z}.items()}
    y = handle.empty(y_desc.dims)
    call = lambda alpha2: conv_bias_activation_forward(handle, x_desc, dev["x"], w_desc, dev["w"], conv, b_desc,
                                                       dev["b"], "relu", 1, 1, 1, y_desc, y, z=dev["z"], alpha2=alpha2)
    call(2.0)
    before = handle.cache_stats()["compiled"]
    call(-1.0)
    assert handle.cache_stats()["compiled"] == before
    expected = np.maximum(reference.conv_forward(x, w, conv.pad, conv.stride) + b - z, 0)
    assert max_error(y.get(), expected) <= 1e-4


def test_refusals(handle):
    x_desc, w_desc, conv = TensorDesc("FP32", (1, 4, 6, 6)), TensorDesc("FP32", (4, 4, 3, 3)), ConvDesc(1)
    plan = FusionPlan(handle, x_desc)
    plan.add_conv_forward(conv, w_desc)
    with pytest.raises(BadParam) as info:
        plan.add_tensor_add(TensorDesc("FP32", (1, 4, 5, 5)))
    assert info.value.field == "z_desc"
    plan.add_tensor_add()
    with pytest.raises(NotSupported, match="tensor_add"):
        plan.add_batchnorm_inference("spatial")               # batch norm goes before the add
    plan.add_activation_forward("relu")
    plan.compile(benchmark=False)
    args = OperatorArgs().set_conv_forward(plan.ops[0], handle.empty(w_desc.dims)).set_activation_forward(plan.ops[2])
    y = handle.to_device(np.full(plan.output_desc.dims, 7.0, np.float32))
    with pytest.raises(BadParam) as info:
        plan.execute(handle.empty(x_desc.dims), y, args)       # z never set
    assert info.value.field == "args.tensor_add"
    with pytest.raises(BadParam) as info:
        args.set_tensor_add(plan.ops[1], handle.empty((3,)))
    assert info.value.field == "args.z"
    assert np.all(y.get() == 7.0)


class _NaiveWithoutAdd(ConvDirectNaive):
    id = "TestNaiveWithoutAdd"
    epilogue_ops = frozenset({"bias", "batchnorm", "activation"})


def test_a_solver_whose_hook_lacks_add_says_so(handle, monkeypatch):
    _only_fused(monkeypatch, _NaiveWithoutAdd())
    plan = FusionPlan(handle, TensorDesc("FP32", (1, 4, 6, 6)))
    plan.add_conv_forward(ConvDesc(1), TensorDesc("FP32", (4, 4, 3, 3)))
    plan.add_tensor_add()
    with pytest.raises(NotSupported, match="TestNaiveWithoutAdd's epilogue does not fuse add"):
        plan.compile()
