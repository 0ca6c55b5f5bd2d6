"""Plans: the same answers as the float64 reference for every solver and direction through the user-facing
plan, bad input refused before anything is enqueued, warm calls that compile, query, allocate and format
nothing, and captured sequences that replay a pass."""
import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import miopy
from miopy import BadParam, ConvDesc, Direction, TensorDesc, db
from miopy.accuracy import max_error
from miopy.conv import reference, registry
from miopy.conv.problem import ConvProblem, map_problem
from miopy.find import AlgoPerf
from miopy.kernel_cache import KernelCache
from tests.helpers import skip_unless_runs_here

DIRECTIONS = list(Direction)


def _geometry(solver, direction, handle):
    """A small convolution (x, w descriptors, conv) that solver applies to in direction, or None."""
    shapes = [(2, 8, 9, 9, 8, 3, 3, 1, 1, 1), (2, 8, 9, 9, 16, 1, 1, 0, 1, 1), (2, 8, 11, 11, 8, 5, 5, 2, 1, 1),
              (1, 6, 10, 10, 6, 3, 3, 1, 2, 2), (3, 40, 1, 1, 9, 1, 1, 0, 1, 1),
              (2, 8, 9, 9, 8, 3, 3, 1, 1, 8)]
    for n, c, h, w, k, r, s, pad, stride, groups in shapes:
        xd, wd = TensorDesc("FP32", (n, c, h, w)), TensorDesc("FP32", (k, c // groups, r, s))
        conv = ConvDesc(pad, stride, 1, groups, math_mode="tf32" if getattr(solver, "tensor_cores", False) else None)
        if solver.is_applicable(ConvProblem.create(direction, xd, wd, conv), handle.info):
            return xd, wd, conv
    return None


def _host(descs, seed=0):
    rng = np.random.default_rng(seed)
    return {role: rng.standard_normal(d.dims).astype(np.float32) for role, d in descs.items()}


def _expected(direction, conv, host, xd, wd):
    geo = dict(pad=conv.pad, stride=conv.stride, dilation=conv.dilation, groups=conv.groups)
    if direction is Direction.FORWARD:
        return reference.conv_forward(host["x"], host["w"], **geo)
    if direction is Direction.BACKWARD_DATA:
        return reference.conv_backward_data(host["y"], host["w"], xd.dims, **geo)
    return reference.conv_backward_weights(host["x"], host["y"], wd.dims, **geo)


CASES = [(s, d) for s in registry.ALL for d in sorted(s.directions)]


@pytest.mark.parametrize("solver,direction", CASES, ids=[f"{s.id}-{d.name}" for s, d in CASES])
def test_plan_of_each_solver_matches_reference(handle, solver, direction):
    """convolution_plan with a record naming the solver, run by the direction's user names (tensor-core
    solvers under math mode "tf32", held to their own TF32 bound rather than a tenth of it)."""
    skip_unless_runs_here(solver, handle.info)
    geometry = _geometry(solver, direction, handle)
    assert geometry is not None, f"{solver.id} applies to no test shape in {direction.name}"
    xd, wd, conv = geometry
    yd = conv.output_desc(xd, wd)
    problem = ConvProblem.create(direction, xd, wd, conv)
    record = AlgoPerf(solver.id, solver.algorithm, 0.0, solver.workspace_bytes(problem),
                      solver.default_params(problem, handle.info), problem.key())
    plan = miopy.convolution_plan(handle, direction, xd, wd, conv, yd, algo=record)
    host = _host({"x": xd, "w": wd, "y": yd})
    out_role = {Direction.FORWARD: "y", Direction.BACKWARD_DATA: "x", Direction.BACKWARD_WEIGHTS: "w"}[direction]
    host[out_role][...] = np.nan
    dev = {role: handle.to_device(a) for role, a in host.items()}
    names = {Direction.FORWARD: ("x", "w", "y"), Direction.BACKWARD_DATA: ("dx", "w", "dy"),
             Direction.BACKWARD_WEIGHTS: ("x", "dw", "dy")}[direction]
    assert plan.fields == names
    plan.run(**dict(zip(names, (dev["x"], dev["w"], dev["y"]))))
    got = dev[out_role].get()
    err = max_error(got, _expected(direction, conv, host, xd, wd))
    tol = reference.tolerance(solver, problem) / (1 if getattr(solver, "tensor_cores", False) else 10)
    assert err <= tol, f"{solver.id} {direction.name}: error {err:.2e}"


@pytest.mark.parametrize("direction", DIRECTIONS, ids=lambda d: d.name)
def test_transpose_plans_match_reference(handle, direction):
    xd, wd = TensorDesc("FP32", (2, 6, 5, 5)), TensorDesc("FP32", (6, 4, 3, 3))
    conv = ConvDesc(1, 2, 1, 1, "transpose", 1)
    yd = conv.output_desc(xd, wd)
    plan = miopy.convolution_plan(handle, direction, xd, wd, conv, yd)
    host = _host({"x": xd, "w": wd, "y": yd}, seed=3)
    geo = dict(pad=conv.pad, stride=conv.stride, dilation=conv.dilation, groups=conv.groups)
    if direction is Direction.FORWARD:   # y = conv_transpose(x, w): the backward-data of a convolution
        out, want = "y", reference.transpose_forward(host["x"], host["w"], output_padding=(1, 1), **geo)
    elif direction is Direction.BACKWARD_DATA:   # dx from dy: a forward convolution of dy
        out, want = "x", reference.conv_forward(host["y"], host["w"], **geo)
    else:
        out, want = "w", reference.conv_backward_weights(host["y"], host["x"], wd.dims, **geo)
    host[out][...] = np.nan
    dev = {role: handle.to_device(a) for role, a in host.items()}
    plan.run_values((dev["x"], dev["w"], dev["y"]))
    assert max_error(dev[out].get(), want) < 1e-4


# -- bad input ---------------------------------------------------------------------------------------------
@pytest.fixture
def forward_plan(handle):
    xd, wd, conv = TensorDesc("FP32", (1, 4, 6, 6)), TensorDesc("FP32", (4, 4, 3, 3)), ConvDesc(1)
    yd = conv.output_desc(xd, wd)
    host = _host({"x": xd, "w": wd})
    x, w = handle.to_device(host["x"]), handle.to_device(host["w"])
    y = handle.to_device(np.full(yd.dims, np.nan, np.float32))
    return miopy.convolution_plan(handle, Direction.FORWARD, xd, wd, conv, yd), x, w, y


@pytest.fixture
def count_launches(monkeypatch):
    launched = []
    real = cl.enqueue_nd_range_kernel

    def counting(*args, **kwargs):
        launched.append(args[1].function_name)
        return real(*args, **kwargs)

    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", counting)
    return launched


def _spoiled(handle, x, w, y):
    """(description, field the error must name, run kwargs) for each kind of bad buffer."""
    other = cl.Context([handle.device])
    return [
        ("float64 input", "x", dict(x=cl_array.to_device(handle.queue, x.get().astype(np.float64)), w=w, y=y)),
        ("too small an output", "y", dict(x=x, w=w, y=handle.empty((1, 4, 6, 5)))),
        ("non-contiguous view", "x", dict(x=handle.to_device(np.zeros((1, 4, 6, 12), np.float32))[:, :, :, ::2],
                                          w=w, y=y)),
        ("array of another context", "w", dict(x=x, w=cl_array.to_device(cl.CommandQueue(other), w.get()), y=y)),
        ("a Buffer too small", "w", dict(x=x, w=cl.Buffer(handle.context, cl.mem_flags.READ_WRITE, 16), y=y)),
        ("a numpy array", "x", dict(x=x.get(), w=w, y=y)),
        ("the input passed as the output", "y", dict(x=x, w=w, y=x)),
        ("a missing operand", "y", dict(x=x, w=w)),
        ("an unknown operand", "z", dict(x=x, w=w, y=y, z=y)),
    ]


def test_bad_buffers_raise_naming_the_field_before_any_enqueue(handle, forward_plan, count_launches):
    plan, x, w, y = forward_plan
    for what, field, kwargs in _spoiled(handle, x, w, y):
        with pytest.raises(BadParam) as info:
            plan.run(**kwargs)
        assert info.value.field == field, f"{what}: {info.value}"
    assert count_launches == [], "a refused call enqueued a kernel"
    assert np.isnan(y.get()).all(), "a refused call wrote its output"


def test_released_plan_and_bad_blend_factors_raise(handle, forward_plan, count_launches):
    plan, x, w, y = forward_plan
    for alpha, beta in (("a", 0.0), (1.0, float("nan")), (1.0, float("inf"))):
        with pytest.raises(BadParam, match="alpha|beta"):
            plan.run(x=x, w=w, y=y, alpha=alpha, beta=beta)
    plan.release()
    with pytest.raises(BadParam, match="released"):
        plan.run(x=x, w=w, y=y)
    assert count_launches == [] and np.isnan(y.get()).all()


def test_alpha_beta_blend_through_the_plan(handle, forward_plan):
    plan, x, w, _ = forward_plan
    prior = np.random.default_rng(9).standard_normal((1, 4, 6, 6)).astype(np.float32)
    y = handle.to_device(prior)
    plan.run(x=x, w=w, y=y, alpha=0.5, beta=2.0)
    want = 0.5 * reference.conv_forward(x.get(), w.get(), (1, 1)) + 2.0 * prior
    assert max_error(y.get(), want) < 1e-4


# -- warm calls --------------------------------------------------------------------------------------------
def _forbid(monkeypatch, target, name):
    def forbidden(*args, **kwargs):
        raise AssertionError(f"a warm call reached {name}")
    monkeypatch.setattr(target, name, forbidden)


@pytest.mark.parametrize("dtype", ["FP32", "FP16"])
def test_warm_calls_compile_query_allocate_and_format_nothing(handle, monkeypatch, dtype):
    """After one call of each kind, repeated calls never reach the kernel cache, a DB, an allocation, the
    problem mapping or the problem key's string building."""
    xd, wd, conv = TensorDesc(dtype, (1, 4, 6, 6)), TensorDesc(dtype, (4, 4, 3, 3)), ConvDesc(1)
    yd = conv.output_desc(xd, wd)
    host = {r: a.astype(xd.dtype.numpy) for r, a in _host({"x": xd, "w": wd, "y": yd}).items()}
    x, w, y = (handle.to_device(host[r]) for r in "xwy")
    bias = handle.to_device(np.ones((1, 4, 1, 1), xd.dtype.numpy))
    bd = TensorDesc(dtype, (1, 4, 1, 1))
    record = miopy.find_convolution(handle, xd, wd, conv)[0]
    calls = [
        lambda: miopy.convolution_forward(handle, xd, x, wd, w, conv, yd, y, algo=record),
        lambda: miopy.convolution_forward(handle, xd, x, wd, w, conv, yd, y),
        lambda: miopy.convolution_backward_data(handle, yd, y, wd, w, conv, xd, x),
        lambda: miopy.convolution_backward_weights(handle, yd, y, xd, x, conv, wd, w),
        lambda: miopy.conv2d(x, w, padding=1, handle=handle),
        lambda: miopy.activation_forward(handle, "relu", 1.0, 1.0, 1.0, yd, y, yd, y),
        lambda: miopy.conv_bias_activation_forward(handle, xd, x, wd, w, conv, bd, bias, "relu", 1.0, 1.0, 1.0,
                                                   yd, y),
    ]
    for call in calls:
        call()
    handle.finish()
    pooled = handle.pool.managed_bytes
    for target, name in ((KernelCache, "kernel"), (KernelCache, "new_kernel"), (db.Store, "query"),
                         (db.Store, "write"), (cl, "Buffer"), (ConvProblem, "_make_key"), (ConvProblem, "create"),
                         (miopy.conv.api, "map_problem"), (miopy.conv.functional, "ConvDesc")):
        _forbid(monkeypatch, target, name)
    monkeypatch.setattr("json.dumps", lambda *a, **k: (_ for _ in ()).throw(AssertionError("json on a warm call")))
    for _ in range(3):
        for call in calls:
            call()
    handle.finish()
    assert handle.pool.managed_bytes == pooled, "the functional layer allocated device memory on a warm call"


def test_find_changes_the_plan_of_calls_without_algo(handle):
    """A later find_convolution's winner is what calls without an algo run from then on."""
    xd, wd, conv = TensorDesc("FP32", (1, 3, 7, 7)), TensorDesc("FP32", (5, 3, 3, 3)), ConvDesc(1)
    yd = conv.output_desc(xd, wd)
    x, w, y = handle.to_device(_host({"x": xd})["x"]), handle.to_device(_host({"w": wd})["w"]), handle.empty(yd.dims)
    miopy.convolution_forward(handle, xd, x, wd, w, conv, yd, y)
    problem = map_problem(Direction.FORWARD, xd, wd, conv).problem
    fastest = "ConvIm2colGemm" if handle.chosen[problem.key()].solver_id != "ConvIm2colGemm" else "ConvDirectNaive"
    found = miopy.find_convolution(handle, xd, wd, conv, mode="normal",
                                   timer=lambda h, plan, b: 0.5 if plan.solver_id == fastest
                                   else 2.0)
    assert found[0].solver_id == fastest
    miopy.convolution_forward(handle, xd, x, wd, w, conv, yd, y)
    calls = handle.plans.get(("conv.call", Direction.FORWARD, xd, wd, conv, yd, handle.math_mode)).calls
    assert [c.plan.solver_id for c in calls if c.algo is None] == [fastest]


# -- captured sequences ------------------------------------------------------------------------------------
def test_captured_pass_replays_with_new_input(handle):
    """Capture conv -> relu -> conv (functional and descriptor calls); write new values into the captured
    input and replay: the captured output holds the new pass's answer."""
    rng = np.random.default_rng(5)
    w1 = handle.to_device(rng.standard_normal((6, 3, 3, 3)).astype(np.float32))
    w2 = handle.to_device(rng.standard_normal((4, 6, 1, 1)).astype(np.float32))
    x = handle.to_device(rng.standard_normal((2, 3, 8, 8)).astype(np.float32))

    def expected(xh):
        h = np.maximum(reference.conv_forward(xh, w1.get(), (1, 1)), 0.0)
        return reference.conv_forward(h, w2.get())

    miopy.conv2d(x, w1, padding=1, handle=handle)   # warm: find runs outside the capture
    miopy.conv2d(miopy.conv2d(x, w1, padding=1, handle=handle), w2, handle=handle)
    hd = TensorDesc("FP32", (2, 6, 8, 8))
    with handle.capture() as seq:
        h = miopy.conv2d(x, w1, padding=1, handle=handle)
        miopy.activation_forward(handle, "relu", 1.0, 1.0, 1.0, hd, h, hd, h)
        out = miopy.conv2d(h, w2, handle=handle)
    assert len(seq) == 3
    assert max_error(out.get(), expected(x.get())) < 1e-4
    fresh = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    x.set(fresh)
    out.fill(np.nan)
    seq.replay()
    assert max_error(out.get(), expected(fresh)) < 1e-4
    with pytest.raises(miopy.LaunchError), handle.capture(), handle.capture():
        pass


# -- the plan cache ----------------------------------------------------------------------------------------
def test_plan_cache_is_bounded_least_recently_used_first():
    from miopy.plan import PlanCache
    cache = PlanCache(limit=3)
    for i in range(3):
        cache.put(("softmax.forward", i), f"plan {i}")
    assert cache.get(("softmax.forward", 0)) == "plan 0"       # now the most recently used
    cache.put(("conv.call", 9), "plan 9")
    assert len(cache) == 3 and cache.get(("softmax.forward", 1)) is None   # the least recently used went
    assert [k for k, _ in cache.entries("softmax")] == [("softmax.forward", 2), ("softmax.forward", 0)]
    assert [v for _, v in cache.entries("conv.call")] == ["plan 9"]


def test_plan_cache_keys_name_a_key_space():
    from miopy.plan import PlanCache
    with pytest.raises(BadParam, match="key space"):
        PlanCache().put(("softmax_forward", 1), "plan")   # no family, no shared layer of that name
    with pytest.raises(BadParam, match="key space"):
        PlanCache().put((1, 2), "plan")


def test_state_saved_by_forward_outlives_the_plan_cache(handle):
    """Pooling's saved-indices record is the handle's state, not a cache entry: clearing plans keeps it."""
    from miopy.plan import saved_by_forward
    own = miopy.Handle(device=handle.device, context=handle.context)
    saved_by_forward(own, "pooling")[123] = "signature"
    own.plans.clear()
    assert saved_by_forward(own, "pooling")[123] == "signature"
