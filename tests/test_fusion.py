"""Fusion plans: every supported combination against reference ops, refusals with reasons, argument
changes that compile nothing, argument checks, the one-call ops, and the epilogue hook of every solver."""
import numpy as np
import pyopencl as cl
import pytest

import miopy
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
)
from miopy.accuracy import max_error
from miopy.conv import reference, registry
from miopy.conv.solvers.naive import ConvDirectNaive
from miopy.errors import CompileError
from miopy.fusion import REGISTRY as FUSED
from miopy.fusion.epilogue import ACTIVATION_ROLES, BATCHNORM_ROLES, Epilogue, apply_reference
from miopy.fusion.solvers.conv_epilogue import ConvEpilogueFused
from tests.helpers import DEFAULT_TOLERANCE, conv_pool, posed_for, random_tensors, run_solution, skip_unless_runs_here

CONV = ConvDesc(pad=1)
X_DESC, W_DESC = TensorDesc("FP32", (2, 4, 6, 6)), TensorDesc("FP32", (5, 4, 3, 3))
BN_DESC = TensorDesc("FP32", (2, 5, 4, 6))


def _operands(rng, channels: int, plane: int, per_element: bool) -> dict[str, np.ndarray]:
    """Random bias and batch-norm operands (positive variances), as host float32 arrays."""
    n = channels * (plane if per_element else 1)
    ops = {r: rng.standard_normal(n).astype(np.float32) for r in ("bn_scale", "bn_shift", "bn_mean")}
    ops["bias"] = rng.standard_normal(channels).astype(np.float32)
    ops["bn_var"] = rng.uniform(0.5, 2.0, n).astype(np.float32)
    return ops


def _build(handle, x_desc, spec):
    """A plan from spec, a list of ("conv",), ("bias",), ("bn", mode), ("activ", mode)."""
    plan = FusionPlan(handle, x_desc)
    adders = {"conv": lambda: plan.add_conv_forward(CONV, W_DESC), "bias": plan.add_bias_forward,
              "bn": plan.add_batchnorm_inference, "activ": plan.add_activation_forward}
    return plan, [adders[kind](*rest) for kind, *rest in spec]


def _args(handle, ops, host: dict) -> OperatorArgs:
    args, dev = OperatorArgs(), {k: handle.to_device(v) for k, v in host.items() if isinstance(v, np.ndarray)}
    for op in ops:
        if isinstance(op, miopy.ConvForwardOp):
            args.set_conv_forward(op, dev["w"])
        elif isinstance(op, miopy.BiasForwardOp):
            args.set_bias_forward(op, dev["bias"].reshape(op.bias_desc.dims))
        elif isinstance(op, miopy.BatchNormInferenceOp):
            args.set_batchnorm_inference(op, *(dev[r].reshape(op.param_desc.dims) for r in BATCHNORM_ROLES[:4]),
                                         epsilon=host["bn_epsilon"])
        else:
            args.set_activation_forward(op, *(host[r] for r in ACTIVATION_ROLES))
    return args


def _run_and_expect(handle, plan, ops, host, x):
    """Execute plan on poisoned y; returns (device result, float64 expectation)."""
    y = handle.to_device(np.full(plan.output_desc.dims, np.nan, np.float32))
    plan.execute(handle.to_device(x), y, _args(handle, ops, host))
    fp = plan.fused_problem()
    pre = reference.conv_forward(x, host["w"], CONV.pad) if fp.conv is not None else x
    return y.get(), apply_reference(fp.epilogue, pre, host)


def _tolerance(solver) -> float:
    """A convolution solver's error bound: its own (Solver.tolerance) or the tests' default."""
    return getattr(solver, "tolerance", None) or DEFAULT_TOLERANCE


def _choice_tolerance(choice) -> float:
    solver = FUSED.get(choice.solver_id)
    return _tolerance(getattr(solver, "conv", solver))


def _host_values(seed: int, x_desc, plan) -> tuple[np.ndarray, dict]:
    rng = np.random.default_rng(seed)
    out = plan.output_desc
    per_element = plan.fused_problem().epilogue.plane > 0
    host = _operands(rng, out.c, out.h * out.w, per_element)
    host.update(w=rng.standard_normal(W_DESC.dims).astype(np.float32), bn_epsilon=1e-3 * (seed + 1),
                activ_alpha=0.3 + 0.1 * seed, activ_beta=1.1, activ_gamma=1.5)
    return rng.standard_normal(x_desc.dims).astype(np.float32), host


SUPPORTED = {
    "conv+bias+relu": (X_DESC, [("conv",), ("bias",), ("activ", ActivationMode.RELU)]),
    "conv+tanh": (X_DESC, [("conv",), ("activ", ActivationMode.TANH)]),
    "conv+bias": (X_DESC, [("conv",), ("bias",)]),
    "conv": (X_DESC, [("conv",)]),
    "conv+bn_spatial+leaky": (X_DESC, [("conv",), ("bn", "spatial"), ("activ", ActivationMode.LEAKY_RELU)]),
    "conv+bn_per_activation+elu": (X_DESC, [("conv",), ("bn", BatchNormMode.PER_ACTIVATION), ("activ", "elu")]),
    "conv+bias+bn_spatial+logistic": (X_DESC, [("conv",), ("bias",), ("bn", 1), ("activ", "logistic")]),
    "bn_spatial+clipped_relu": (BN_DESC, [("bn", "spatial"), ("activ", ActivationMode.CLIPPED_RELU)]),
    "bn_per_activation+power": (BN_DESC, [("bn", "per_activation"), ("activ", ActivationMode.POWER)]),
    "bn_spatial": (BN_DESC, [("bn", "spatial")]),
}


@pytest.mark.parametrize("name", list(SUPPORTED))
def test_supported_combination_matches_reference(handle, name):
    x_desc, spec = SUPPORTED[name]
    plan, ops = _build(handle, x_desc, spec)
    choice = plan.compile(benchmark=False)   # the first fused solver that applies; every solver's hook is tested below
    first = next(s for s in FUSED.solvers() if s.is_applicable(plan.fused_problem(), handle.info))
    assert choice.solver_id == first.id and choice.time_ms == 0.0
    x, host = _host_values(0, x_desc, plan)
    got, expected = _run_and_expect(handle, plan, ops, host, x)
    assert max_error(got, expected) <= _choice_tolerance(choice)


def test_resnet_layer_compiles_once_and_runs_three_argument_sets(handle):
    """Done-when: conv + bias + relu on a (reduced) ResNet-50 3x3 layer, three argument sets, one compile."""
    x_desc, w_desc, conv = TensorDesc("FP32", (1, 64, 14, 14)), TensorDesc("FP32", (64, 64, 3, 3)), ConvDesc(1)
    plan = FusionPlan(handle, x_desc)
    ops = (plan.add_conv_forward(conv, w_desc), plan.add_bias_forward(), plan.add_activation_forward("relu"))
    choice = plan.compile(benchmark=False)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(x_desc.dims).astype(np.float32)
    xa, ya = handle.to_device(x), handle.empty(plan.output_desc.dims)
    compiled = None
    for _ in range(3):
        w = rng.standard_normal(w_desc.dims).astype(np.float32)
        bias = rng.standard_normal((1, 64, 1, 1)).astype(np.float32)
        args = (OperatorArgs().set_conv_forward(ops[0], handle.to_device(w))
                .set_bias_forward(ops[1], handle.to_device(bias)).set_activation_forward(ops[2]))
        ya.fill(np.nan)
        plan.execute(xa, ya, args)
        compiled = compiled if compiled is not None else handle.cache_stats()["compiled"]
        expected = np.maximum(reference.conv_forward(x, w, (1, 1)) + bias, 0.0)
        assert max_error(ya.get(), expected) <= _choice_tolerance(choice)
    assert handle.cache_stats()["compiled"] == compiled


def test_new_scalars_and_operands_compile_nothing(handle):
    plan, ops = _build(handle, X_DESC, [("conv",), ("bn", "per_activation"), ("activ", ActivationMode.TANH)])
    choice = plan.compile(benchmark=False)
    before = None
    for seed in range(3):   # epsilon, alpha and every operand change each time
        x, host = _host_values(seed, X_DESC, plan)
        got, expected = _run_and_expect(handle, plan, ops, host, x)
        before = before if before is not None else handle.cache_stats()["compiled"]
        assert max_error(got, expected) <= _choice_tolerance(choice)
    assert handle.cache_stats()["compiled"] == before


# -- refusals ----------------------------------------------------------------------------------------------
ORDER_REFUSALS = {
    "activation before conv": ([("activ", "relu"), ("conv",)], "first op"),
    "two convolutions": ([("conv",), ("conv",)], "one convolution"),
    "bias without conv": ([("bias",)], "bias without a convolution"),
    "batch norm after activation": ([("conv",), ("activ", "relu"), ("bn", "spatial")], "ops follow"),
    "bias after batch norm": ([("conv",), ("bn", "spatial"), ("bias",)], "bias_forward after batchnorm"),
    "two activations": ([("conv",), ("activ", "relu"), ("activ", "tanh")], "at most once"),
}


@pytest.mark.parametrize("name", list(ORDER_REFUSALS))
def test_unsupported_order_is_refused_with_reason(handle, name):
    spec, reason = ORDER_REFUSALS[name]
    with pytest.raises(NotSupported, match=reason):
        _build(handle, X_DESC, spec)


@pytest.mark.parametrize("spec,reason", [([], "empty plan"), ([("activ", "relu")], "activation alone")],
                         ids=["empty", "activation alone"])
def test_plan_no_solver_runs_is_refused_at_compile(handle, spec, reason):
    plan, _ = _build(handle, X_DESC, spec)
    with pytest.raises(NotSupported, match=reason):
        plan.compile()


def test_transpose_convolution_is_refused(handle):
    plan = FusionPlan(handle, X_DESC)
    with pytest.raises(NotSupported, match="transpose"):
        plan.add_conv_forward(ConvDesc(1, mode="transpose"), TensorDesc("FP32", (4, 5, 3, 3)))


class _NaiveWithoutBatchNorm(ConvDirectNaive):
    id = "TestNaiveWithoutBatchNorm"
    epilogue_ops = frozenset({"bias", "activation"})


def _only_fused(monkeypatch, *convs) -> None:
    """The convolution registry (and so fusion's) down to these solvers, each registered as a fused candidate."""
    fused = tuple(ConvEpilogueFused(conv) for conv in convs)
    monkeypatch.setattr(registry.REGISTRY, "solvers", lambda: convs)
    monkeypatch.setattr(FUSED, "solvers", lambda: (*fused, FUSED.get("BatchNormActivInference")))
    for solver in fused:
        monkeypatch.setitem(FUSED._by_id, solver.id, solver)


def test_conv_batchnorm_refused_when_no_solver_fuses_batchnorm(handle, monkeypatch):
    _only_fused(monkeypatch, _NaiveWithoutBatchNorm())
    plan, _ = _build(handle, X_DESC, [("conv",), ("bn", "spatial"), ("activ", "relu")])
    with pytest.raises(NotSupported, match="TestNaiveWithoutBatchNorm's epilogue does not fuse batchnorm"):
        plan.compile()
    assert set(plan.skipped) == {"TestNaiveWithoutBatchNormFused", "BatchNormActivInference"}


# -- choosing among fused solvers ------------------------------------------------------------------------
class _NaiveTwin(ConvDirectNaive):
    id = "TestNaiveTwin"


class _NaiveBroken(ConvDirectNaive):
    id = "TestNaiveBroken"

    def solution(self, problem, params, epilogue=None):
        raise CompileError("deliberately broken")


def test_compile_times_candidates_and_skips_failures(handle, monkeypatch):
    twin, broken, naive = _NaiveTwin(), _NaiveBroken(), registry.get("ConvDirectNaive")
    _only_fused(monkeypatch, broken, naive, twin)
    for s in (twin, broken):
        monkeypatch.setitem(registry.REGISTRY._by_id, s.id, s)
    timed = []

    def timer(h, prepared, buffers):
        timed.append(prepared.solution.solver_id)
        assert {"bias", "activ_alpha", "w"} <= set(buffers)
        return 1.0 if prepared.solution.solver_id == twin.id else 2.0

    plan, _ = _build(handle, X_DESC, [("conv",), ("bias",), ("activ", "relu")])
    choice = plan.compile(timer=timer)
    assert timed == [naive.id, twin.id] and choice.solver_id == "TestNaiveTwinFused" and choice.time_ms == 1.0
    assert "deliberately broken" in plan.skipped["TestNaiveBrokenFused"]


def test_every_epilogue_solver_is_a_fused_candidate():
    wrapped = [s.conv.id for s in FUSED.solvers() if isinstance(s, ConvEpilogueFused)]
    assert wrapped == [s.id for s in registry.solvers() if s.supports_epilogue] and wrapped


# -- the epilogue hook of every registered solver ----------------------------------------------------------
EPILOGUE_SOLVERS = [s for s in registry.ALL if s.supports_epilogue]


@pytest.mark.parametrize("solver", EPILOGUE_SOLVERS, ids=lambda s: s.id)
def test_solver_epilogue_hook_matches_reference(handle, solver):
    """bias + per-activation batch norm + leaky relu exercises both the channel k and the in-plane index pq."""
    skip_unless_runs_here(solver, handle.info)
    problem = next(q for q in (posed_for(solver, p) for p in conv_pool(Direction.FORWARD))
                   if solver.is_applicable(q, handle.info))
    plane = problem.out_h * problem.out_w
    epilogue = Epilogue(bias=True, batchnorm=BatchNormMode.PER_ACTIVATION, activation=ActivationMode.LEAKY_RELU,
                        plane=plane)
    host = {**_operands(np.random.default_rng(3), problem.k, plane, True), "bn_epsilon": 1e-3,
            "activ_alpha": 0.2, "activ_beta": 1.0, "activ_gamma": 1.0}
    mf = cl.mem_flags
    extra = {r: (cl.Buffer(handle.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=v) if isinstance(v, np.ndarray)
                 else np.float32(v)) for r, v in host.items()}
    t = random_tensors(problem)
    params = solver.default_params(problem, handle.info)
    got = run_solution(handle, solver.solution(problem, params, epilogue), problem, t, extra)
    expected = apply_reference(epilogue, reference.conv_forward(t["x"], t["w"], problem.conv.pad, problem.conv.stride,
                                                                problem.conv.dilation, problem.groups), host)
    assert max_error(got, expected) <= _tolerance(solver)


def test_epilogue_defines_args_and_key_are_structure_only():
    ep = Epilogue(bias=True, batchnorm=BatchNormMode.PER_ACTIVATION, activation=ActivationMode.ELU, plane=36)
    assert ep.defines() == {"MIOPY_FUSED": 1, "FUSE_BIAS": 1, "FUSE_BN": 2, "FUSE_PLANE": 36, "FUSE_ACTIV": 1,
                            "ACTIV_MODE": 9}
    assert ep.args == ("bias", "bn_scale", "bn_shift", "bn_mean", "bn_var", "bn_epsilon", "activ_alpha",
                       "activ_beta", "activ_gamma")
    assert ep.key() == "bias+bn_per_activation@36+activ_elu" and Epilogue().key() == "none"
    assert Epilogue(activation=ActivationMode.RELU).defines() == {"MIOPY_FUSED": 1, "FUSE_BIAS": 0, "FUSE_BN": 0,
                                                                  "FUSE_ACTIV": 1, "ACTIV_MODE": 3}


# -- argument checks ---------------------------------------------------------------------------------------
def _compiled_cba(handle):
    plan, ops = _build(handle, X_DESC, [("conv",), ("bias",), ("activ", "relu")])
    plan.compile(benchmark=False)
    x, host = _host_values(0, X_DESC, plan)
    return plan, ops, x, host


BAD_ARGS = {
    "args.bias": lambda h, ops, host: OperatorArgs().set_bias_forward(ops[1], h.to_device(np.zeros(3, np.float32))),
    "args.w": lambda h, ops, host: OperatorArgs().set_conv_forward(ops[0], h.to_device(host["w"].astype(np.float64))),
    "args.activ_alpha": lambda h, ops, host: OperatorArgs().set_activation_forward(ops[2], alpha="x"),
    "op": lambda h, ops, host: OperatorArgs().set_bias_forward(ops[2], h.to_device(host["bias"])),
}


@pytest.mark.parametrize("field", list(BAD_ARGS))
def test_bad_operator_argument_names_the_field(handle, field):
    plan, ops, x, host = _compiled_cba(handle)
    with pytest.raises(BadParam) as info:
        BAD_ARGS[field](handle, ops, host)
    assert info.value.field == field


def test_bad_execute_raises_before_enqueue_and_leaves_output(handle):
    plan, ops, x, host = _compiled_cba(handle)
    poison = np.full(plan.output_desc.dims, 7.0, np.float32)
    y = handle.to_device(poison)
    full = _args(handle, ops, host)
    partial = OperatorArgs().set_conv_forward(ops[0], handle.to_device(host["w"]))
    cases = {"args.bias_forward": (x, y, partial), "y": (x, handle.empty((4,)), full),
             "x": (np.zeros(3), y, full), "args": (x, y, {"w": 1})}
    for field, (xv, yv, args) in cases.items():
        with pytest.raises(BadParam) as info:
            plan.execute(handle.to_device(xv) if isinstance(xv, np.ndarray) and xv.ndim == 4 else xv, yv, args)
        assert info.value.field == field
    handle.finish()
    assert np.array_equal(y.get(), poison)


def test_plan_descriptor_checks(handle):
    plan = FusionPlan(handle, X_DESC)
    with pytest.raises(BadParam) as info:
        plan.add_conv_forward(CONV, TensorDesc("FP32", (5, 3, 3, 3)))
    assert info.value.field == "w_desc.dims"
    plan.add_conv_forward(CONV, W_DESC)
    with pytest.raises(BadParam) as info:
        plan.add_batchnorm_inference("per_activation", TensorDesc("FP32", (1, 5, 1, 1)))
    assert info.value.field == "bn_desc.dims"
    with pytest.raises(BadParam) as info:
        plan.execute(None, None, OperatorArgs())
    assert info.value.field == "plan"
    with pytest.raises(BadParam) as info:
        OperatorArgs().set_batchnorm_inference(plan.add_batchnorm_inference("spatial"), *[None] * 4, epsilon=1e-3)
    assert info.value.field == "args.bn_scale"


# -- one-call ops ------------------------------------------------------------------------------------------
def test_conv_bias_activation_forward_caches_its_plan(handle):
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal(X_DESC.dims).astype(np.float32), rng.standard_normal(W_DESC.dims).astype(np.float32)
    bias_desc = TensorDesc("FP32", (1, 5, 1, 1))
    y_desc = CONV.output_desc(X_DESC, W_DESC)
    xa, wa, ya = handle.to_device(x), handle.to_device(w), handle.empty(y_desc.dims)
    before = None
    for alpha in (0.1, 0.25):
        bias = rng.standard_normal(bias_desc.dims).astype(np.float32)
        miopy.conv_bias_activation_forward(handle, X_DESC, xa, W_DESC, wa, CONV, bias_desc, handle.to_device(bias),
                                           "leaky_relu", alpha, 0.0, 0.0, y_desc, ya)
        before = before if before is not None else handle.cache_stats()["compiled"]
        pre = reference.conv_forward(x, w, CONV.pad) + bias
        # the plan times the candidates and picks one (math mode strict: no tensor cores)
        loosest = max(_tolerance(s) for s in registry.ALL if not getattr(s, "tensor_cores", False))
        assert max_error(ya.get(), np.where(pre > 0, pre, alpha * pre)) <= loosest
    assert handle.cache_stats()["compiled"] == before


def test_convolution_forward_bias_in_place(handle):
    rng = np.random.default_rng(12)
    y, bias = rng.standard_normal(BN_DESC.dims).astype(np.float32), rng.standard_normal((1, 5, 1, 1)).astype(np.float32)
    ya = handle.to_device(y)
    miopy.convolution_forward_bias(handle, TensorDesc("FP32", bias.shape), handle.to_device(bias), BN_DESC, ya)
    assert max_error(ya.get(), y.astype(np.float64) + bias) <= DEFAULT_TOLERANCE


def test_functional_conv2d_bias_activation_matches_reference(handle):
    from miopy.fusion import conv2d_bias_activation
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal((2, 4, 7, 6)).astype(np.float32), rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    xa, wa, ba = handle.to_device(x), handle.to_device(w), handle.to_device(bias)
    for slope in (0.1, 0.3):   # the second call is warm: new activation numbers build nothing
        got = conv2d_bias_activation(xa, wa, ba, "leaky_relu", stride=2, padding=1, groups=2, alpha=slope,
                                     handle=handle).get()
        conv = reference.conv_forward(x, w, (1, 1), (2, 2), groups=2) + bias.reshape(1, 6, 1, 1)
        assert max_error(got, np.where(conv > 0, conv, slope * conv)) < 1e-4
