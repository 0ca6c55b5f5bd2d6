"""Batch normalisation: every solver, computation and mode against float64; the descriptor API (alpha /
beta, optional pairs, in place); the functional form with PyTorch's conventions; numerics at a large mean;
determinism; bad input that leaves outputs and running statistics untouched."""
import numpy as np
import pytest

import miopy
from miopy import BadParam, MiopyError, TensorDesc
from miopy.accuracy import max_error
from miopy.batchnorm import (
    REGISTRY,
    BatchNormMode,
    BatchNormProblem,
    BnDirection,
    batch_norm,
    batch_norm_backward,
    batch_normalization_backward,
    batch_normalization_forward_inference,
    batch_normalization_forward_training,
    derive_bn_tensor_descriptor,
    native_batch_norm,
)
from miopy.batchnorm import reference as ref
from miopy.batchnorm.reference import reference_outputs
from tests.bn_helpers import EPSILON, FACTOR, random_host, run, views

SPATIAL, PER_ACTIVATION = BatchNormMode.SPATIAL, BatchNormMode.PER_ACTIVATION
TOLERANCE = {"FP32": 2e-5, "FP16": 2e-3}   # hybrid |a-e|/(1+|e|); FP16 stores its outputs in half


def problem(direction, mode, dims=(3, 4, 5, 7), running=False, saved=False, dtype="FP32", strides=None):
    x = TensorDesc(dtype, dims, strides)
    dy = x if direction is BnDirection.BACKWARD else None
    return BatchNormProblem.create(direction, mode, x, x, derive_bn_tensor_descriptor(x, mode), dy, running, saved)


def check(handle, solver, prob, params=None, seed=0, mean=0.0, tolerance=None):
    params = params if params is not None else solver.default_params(prob, handle.info)
    assert solver.is_valid(prob, params, handle.info), solver.invalid_reason(prob, params, handle.info)
    host = random_host(prob, seed, mean)
    got = run(handle, prob, solver.solution(prob, params), host)
    expected = reference_outputs(prob, views(prob, host), EPSILON, FACTOR)
    tol = tolerance or TOLERANCE[prob.dtype.value]
    for role, want in expected.items():
        err = max_error(got[role], want)
        assert err <= tol, f"{solver.id} {params} {prob.key()} {role}: error {err:.3g} > {tol}"


NHWC = (3 * 5 * 7 * 4, 1, 7 * 4, 4)   # (3, 4, 5, 7) stored channels-last
CASES = [  # (direction, mode, running, saved, dtype, strides)
    (BnDirection.FORWARD_TRAINING, SPATIAL, True, True, "FP32", None),
    (BnDirection.FORWARD_TRAINING, SPATIAL, False, False, "FP32", NHWC),
    (BnDirection.FORWARD_TRAINING, SPATIAL, True, False, "FP16", None),
    (BnDirection.FORWARD_TRAINING, PER_ACTIVATION, True, True, "FP32", None),
    (BnDirection.FORWARD_TRAINING, PER_ACTIVATION, False, True, "FP16", NHWC),
    (BnDirection.FORWARD_INFERENCE, SPATIAL, False, False, "FP32", NHWC),
    (BnDirection.FORWARD_INFERENCE, PER_ACTIVATION, False, False, "FP16", None),
    (BnDirection.BACKWARD, SPATIAL, False, True, "FP32", None),
    (BnDirection.BACKWARD, SPATIAL, False, False, "FP32", NHWC),
    (BnDirection.BACKWARD, SPATIAL, False, False, "FP16", None),
    (BnDirection.BACKWARD, PER_ACTIVATION, False, False, "FP32", NHWC),
    (BnDirection.BACKWARD, PER_ACTIVATION, False, True, "FP16", None),
]


def _case_id(case):
    direction, mode, running, saved, dtype, strides = case
    return f"{direction.value}-{mode.name}-r{int(running)}s{int(saved)}-{dtype}{'-nhwc' if strides else ''}"


PAIRS = [(s, case) for s in REGISTRY.ALL for case in CASES if case[0] in s.directions and case[1] in s.modes]


@pytest.mark.parametrize("solver,case", PAIRS, ids=[f"{s.id}-{_case_id(c)}" for s, c in PAIRS])
def test_solver_matches_float64(handle, solver, case):
    direction, mode, running, saved, dtype, strides = case
    prob = problem(direction, mode, running=running, saved=saved, dtype=dtype, strides=strides)
    assert solver.is_applicable(prob, handle.info), solver.not_applicable_reason(prob, handle.info)
    check(handle, solver, prob, seed=CASES.index(case))


def test_every_solver_is_tested():
    assert {s.id for s, _ in PAIRS} == {s.id for s in REGISTRY.ALL}


@pytest.mark.parametrize("solver", [s for s in REGISTRY.ALL if s.grid], ids=lambda s: s.id)
def test_sampled_grid_points_match_float64(handle, solver):
    """Random grid points (alternately forward and backward: each point compiles anew) on channels longer than
    the smallest chunk, so the split merges several chunks."""
    directions = (BnDirection.BACKWARD, BnDirection.FORWARD_TRAINING)
    prob = problem(BnDirection.BACKWARD, SPATIAL, dims=(3, 2, 37, 41))
    for i, params in enumerate(solver.sample_space(prob, handle.info, count=2, seed=3)):
        forward = directions[i] is BnDirection.FORWARD_TRAINING
        check(handle, solver, problem(directions[i], SPATIAL, dims=(3, 2, 37, 41), running=forward, saved=forward),
              params, seed=5)


@pytest.mark.parametrize("solver_id,direction", [("BatchNormSpatialSplit", BnDirection.FORWARD_TRAINING),
                                                 ("BatchNormSpatialSplit", BnDirection.BACKWARD),
                                                 ("BatchNormSpatialSingle", BnDirection.FORWARD_TRAINING)])
def test_large_mean_over_a_resnet_sized_channel(handle, solver_id, direction):
    """N*H*W of 32x64x112x112 (two channels of it) at mean 1e3, variance 1: no cancellation, errors at the
    level of the data's own float32 rounding."""
    forward = direction is BnDirection.FORWARD_TRAINING
    prob = problem(direction, SPATIAL, dims=(32, 2, 112, 112), running=forward, saved=forward)
    check(handle, REGISTRY.get(solver_id), prob, mean=1e3, tolerance=2e-5)


@pytest.mark.parametrize("direction,saved", [(BnDirection.FORWARD_TRAINING, True), (BnDirection.BACKWARD, True),
                                            (BnDirection.BACKWARD, False)])
def test_split_in_channel_groups(handle, direction, saved):
    """Stages run group by group (GROUP channels a launch): every group's channels, statistics and running
    averages right; a GROUP that does not divide C (or covers it) is refused."""
    solver = REGISTRY.get("BatchNormSpatialSplit")
    forward = direction is BnDirection.FORWARD_TRAINING
    prob = problem(direction, SPATIAL, dims=(3, 4, 37, 41), running=forward, saved=saved)
    for group in (1, 2):
        check(handle, solver, prob, {"WG": 64, "CHUNK": 1024, "GROUP": group}, seed=group, mean=5.0)
    for group in (3, 4, 8):
        assert not solver.is_valid(prob, {"WG": 64, "CHUNK": 1024, "GROUP": group}, handle.info)


def test_split_is_deterministic(handle):
    solver = REGISTRY.get("BatchNormSpatialSplit")
    prob = problem(BnDirection.BACKWARD, SPATIAL, dims=(3, 2, 37, 41))
    host = random_host(prob, 9, mean=3.0)
    params = solver.default_params(prob, handle.info)
    first = run(handle, prob, solver.solution(prob, params), host)
    second = run(handle, prob, solver.solution(prob, params), host)
    for role in ("dx", "dscale", "dbias"):
        assert np.array_equal(first[role], second[role])


def test_heuristic_prefers_split_for_long_channels(handle):
    """Channels held in registers where they fit (32K values forward, 16K backward), one work-group a channel
    up to 32K values otherwise, the split reduction beyond."""
    short = problem(BnDirection.FORWARD_TRAINING, SPATIAL, dims=(2, 64, 8, 8))
    middle = problem(BnDirection.FORWARD_TRAINING, SPATIAL, dims=(32, 2, 28, 28))
    middle_bwd = problem(BnDirection.BACKWARD, SPATIAL, dims=(32, 2, 28, 28))
    long = problem(BnDirection.FORWARD_TRAINING, SPATIAL, dims=(32, 2, 112, 112))
    pick = lambda p: REGISTRY.rank(p, [s for s in REGISTRY.ALL if s.is_applicable(p, handle.info)])[0].id
    assert [pick(p) for p in (short, middle, middle_bwd, long)] == [
        "BatchNormSpatialResident", "BatchNormSpatialResident", "BatchNormSpatialSingle", "BatchNormSpatialSplit"]


@pytest.mark.parametrize("direction,dims", [(BnDirection.FORWARD_TRAINING, (32, 2, 28, 28)),
                                            (BnDirection.BACKWARD, (16, 2, 32, 32)),
                                            (BnDirection.BACKWARD, (5, 3, 13, 11))])
def test_resident_at_its_limits_and_a_large_mean(handle, direction, dims):
    """Every work-group size that holds the channel (the largest item counts included; 715 values leave a
    part-filled last item), at mean 1e3: the two-pass over held values loses nothing to cancellation."""
    solver = REGISTRY.get("BatchNormSpatialResident")
    forward = direction is BnDirection.FORWARD_TRAINING
    prob = problem(direction, SPATIAL, dims=dims, running=forward, saved=forward)
    points = list(solver.search_space(prob, handle.info))
    assert points and solver.default_params(prob, handle.info) in points
    for params in points:
        check(handle, solver, prob, params, seed=7, mean=1e3, tolerance=2e-5)


# -- the descriptor API ---------------------------------------------------------------------------------------
def _device(handle, **arrays):
    return {k: handle.to_device(np.asarray(v, np.float32)) for k, v in arrays.items()}


@pytest.mark.parametrize("mode", [SPATIAL, PER_ACTIVATION], ids=lambda m: m.name)
def test_api_forward_training_alpha_beta_and_running(handle, mode):
    rng = np.random.default_rng(1)
    xd = TensorDesc("FP32", (4, 3, 6, 5))
    bd = derive_bn_tensor_descriptor(xd, mode)
    x, y0 = rng.standard_normal(xd.dims) * 2 + 1, rng.standard_normal(xd.dims)
    sc, bi, rm, rv = rng.standard_normal(bd.dims), rng.standard_normal(bd.dims), rng.standard_normal(bd.dims), \
        rng.random(bd.dims) + 0.5
    d = _device(handle, x=x, y=y0, sc=sc, bi=bi, rm=rm, rv=rv, sm=np.full(bd.dims, np.nan), si=np.full(bd.dims, np.nan))
    batch_normalization_forward_training(handle, mode, 0.5, 2.0, xd, d["x"], xd, d["y"], bd, d["sc"], d["bi"], FACTOR,
                                         d["rm"], d["rv"], EPSILON, d["sm"], d["si"])
    e = ref.forward_training(x.astype(np.float32), sc.astype(np.float32), bi.astype(np.float32), EPSILON,
                             mode is SPATIAL, FACTOR, rm.astype(np.float32), rv.astype(np.float32))
    e["y"] = 0.5 * e["y"] + 2.0 * y0.astype(np.float32)
    for role, key in (("y", "y"), ("rm", "running_mean"), ("rv", "running_var"), ("sm", "saved_mean"),
                      ("si", "saved_inv_variance")):
        assert max_error(d[role].get(), e[key]) <= 2e-5, role


def test_api_backward_blends_data_and_params_separately(handle):
    rng = np.random.default_rng(2)
    xd = TensorDesc("FP32", (3, 4, 5, 5))
    bd = derive_bn_tensor_descriptor(xd, SPATIAL)
    x, dy, sc = rng.standard_normal(xd.dims), rng.standard_normal(xd.dims), rng.standard_normal(bd.dims)
    dx0, ds0, db0 = rng.standard_normal(xd.dims), rng.standard_normal(bd.dims), rng.standard_normal(bd.dims)
    d = _device(handle, x=x, dy=dy, sc=sc, dx=dx0, ds=ds0, db=db0)
    batch_normalization_backward(handle, SPATIAL, 2.0, 0.5, -1.0, 3.0, xd, d["x"], xd, d["dy"], xd, d["dx"], bd,
                                 d["sc"], d["ds"], d["db"], EPSILON)
    f32 = lambda a: np.asarray(a, np.float32)
    e = ref.backward(f32(x), f32(dy), f32(sc), EPSILON, True)
    assert max_error(d["dx"].get(), 2.0 * e["dx"] + 0.5 * f32(dx0)) <= 2e-5
    assert max_error(d["ds"].get(), -e["dscale"] + 3.0 * f32(ds0)) <= 2e-5
    assert max_error(d["db"].get(), -e["dbias"] + 3.0 * f32(db0)) <= 2e-5


def test_api_inference_in_place_and_without_estimates(handle):
    rng = np.random.default_rng(3)
    xd = TensorDesc("FP32", (2, 3, 4, 4))
    bd = derive_bn_tensor_descriptor(xd, SPATIAL)
    x, sc, bi, m, v = (rng.standard_normal(xd.dims), rng.standard_normal(bd.dims), rng.standard_normal(bd.dims),
                       rng.standard_normal(bd.dims), rng.random(bd.dims) + 0.5)
    d = _device(handle, x=x, sc=sc, bi=bi, m=m, v=v)
    batch_normalization_forward_inference(handle, "spatial", 1, 0, xd, d["x"], xd, d["x"], bd, d["sc"], d["bi"],
                                          d["m"], d["v"], EPSILON)   # in place
    f32 = lambda a: np.asarray(a, np.float32)
    assert max_error(d["x"].get(), ref.forward_inference(f32(x), f32(sc), f32(bi), f32(m), f32(v), EPSILON)) <= 2e-5
    y = handle.empty(xd.dims)
    d["x"].set(f32(x))
    batch_normalization_forward_inference(handle, 1, 1, 0, xd, d["x"], xd, y, bd, d["sc"], d["bi"], None, None, EPSILON)
    assert max_error(y.get(), ref.forward_training(f32(x), f32(sc), f32(bi), EPSILON, True)["y"]) <= 2e-5


def test_warm_call_compiles_nothing_with_new_numbers(handle):
    rng = np.random.default_rng(4)
    xd = TensorDesc("FP32", (2, 5, 3, 3))
    bd = derive_bn_tensor_descriptor(xd, SPATIAL)
    d = _device(handle, x=rng.standard_normal(xd.dims), y=np.zeros(xd.dims), sc=np.ones(bd.dims), bi=np.zeros(bd.dims))
    call = lambda eps, alpha: batch_normalization_forward_training(handle, SPATIAL, alpha, 0, xd, d["x"], xd, d["y"],
                                                                   bd, d["sc"], d["bi"], 0.1, None, None, eps)
    call(1e-5, 1.0)
    before, plans = handle.cache_stats()["compiled"], len(handle.plans)
    call(1e-2, 0.5)
    assert handle.cache_stats()["compiled"] == before and len(handle.plans) == plans


# -- the functional form ----------------------------------------------------------------------------------------
def test_functional_training_follows_pytorch(handle):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 3, 4, 5)).astype(np.float32) * 3 + 2
    w, b = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    rm, rv = np.zeros(3, np.float32), np.ones(3, np.float32)
    d = _device(handle, x=x, w=w, b=b, rm=rm, rv=rv)
    y, mean, invstd = native_batch_norm(d["x"], d["w"], d["b"], d["rm"], d["rv"], True, 0.1, 1e-5)
    xs = x.transpose(1, 0, 2, 3).reshape(3, -1).astype(np.float64)
    batch_mean, biased, unbiased = xs.mean(1), xs.var(1), xs.var(1, ddof=1)
    assert max_error(mean.get(), batch_mean) <= 1e-6 and max_error(invstd.get(), 1 / np.sqrt(biased + 1e-5)) <= 1e-5
    assert max_error(d["rm"].get(), 0.1 * batch_mean) <= 1e-6
    assert max_error(d["rv"].get(), 0.9 + 0.1 * unbiased) <= 1e-6          # PyTorch: the unbiased variance
    norm = (x - batch_mean[None, :, None, None]) / np.sqrt(biased[None, :, None, None] + 1e-5)
    assert max_error(y.get(), norm * w[None, :, None, None] + b[None, :, None, None]) <= 2e-5
    ev = batch_norm(d["x"], d["rm"], d["rv"], d["w"], d["b"], training=False)
    expect = ref.forward_inference(x, w.reshape(1, 3, 1, 1), b.reshape(1, 3, 1, 1), d["rm"].get().reshape(1, 3, 1, 1),
                                   d["rv"].get().reshape(1, 3, 1, 1), 1e-5)
    assert max_error(ev.get(), expect) <= 2e-5


@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 9)])
def test_functional_backward_with_and_without_saved(handle, shape):
    rng = np.random.default_rng(6)
    x, dy = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(3).astype(np.float32)
    d = _device(handle, x=x, dy=dy, w=w)
    y, mean, invstd = native_batch_norm(d["x"], d["w"], None, None, None, True)
    assert y.shape == shape
    x4, dy4 = x.reshape(shape + (1,) * (4 - len(shape))), dy.reshape(shape + (1,) * (4 - len(shape)))
    e = ref.backward(x4, dy4, w.reshape(1, 3, 1, 1), 1e-5, True)
    for saved in ((mean, invstd), (None, None)):
        dx, dw, db = batch_norm_backward(d["dy"], d["x"], d["w"], *saved)
        assert dx.shape == shape
        assert max_error(dx.get().reshape(x4.shape), e["dx"]) <= 2e-5
        assert max_error(dw.get(), e["dscale"].ravel()) <= 2e-5 and max_error(db.get(), e["dbias"].ravel()) <= 2e-5


# -- bad input ------------------------------------------------------------------------------------------------
def _bad_setup(handle):
    xd = TensorDesc("FP32", (2, 3, 4, 4))
    bd = derive_bn_tensor_descriptor(xd, SPATIAL)
    rng = np.random.default_rng(7)
    host = {"x": rng.standard_normal(xd.dims), "y": np.full(xd.dims, 7.0), "sc": np.ones(bd.dims),
            "bi": np.zeros(bd.dims), "rm": np.full(bd.dims, 3.0), "rv": np.full(bd.dims, 5.0),
            "sm": np.full(bd.dims, 9.0), "si": np.full(bd.dims, 9.0)}
    return xd, bd, host, _device(handle, **host)


BAD = {
    "y_desc.dims": lambda h, xd, bd, d: dict(y_desc=TensorDesc("FP32", (2, 3, 4, 5))),
    "bn_desc.dims": lambda h, xd, bd, d: dict(bn_desc=TensorDesc("FP32", (1, 4, 1, 1))),
    "bn_desc.dtype": lambda h, xd, bd, d: dict(bn_desc=TensorDesc("FP16", (1, 3, 1, 1))),
    "running_var": lambda h, xd, bd, d: dict(running_var=None),
    "saved_mean": lambda h, xd, bd, d: dict(saved_mean=None),
    "running_mean": lambda h, xd, bd, d: dict(running_mean=h.empty((2,))),          # too small a buffer
    "exp_avg_factor": lambda h, xd, bd, d: dict(exp_avg_factor=1.5),
    "epsilon": lambda h, xd, bd, d: dict(epsilon=float("nan")),
    "bn_mode": lambda h, xd, bd, d: dict(mode="sideways"),
    "y": lambda h, xd, bd, d: dict(y=d["x"]) if False else dict(y=d["rm"]),           # y aliases running_mean
}


@pytest.mark.parametrize("field", BAD)
def test_bad_training_input_names_field_and_touches_nothing(handle, field):
    xd, bd, host, d = _bad_setup(handle)
    args = dict(mode=SPATIAL, alpha=1, beta=0, x_desc=xd, x=d["x"], y_desc=xd, y=d["y"], bn_desc=bd, scale=d["sc"],
                bias=d["bi"], exp_avg_factor=0.1, running_mean=d["rm"], running_var=d["rv"], epsilon=1e-5,
                saved_mean=d["sm"], saved_inv_variance=d["si"])
    args.update(BAD[field](handle, xd, bd, d))
    with pytest.raises(BadParam) as info:
        batch_normalization_forward_training(handle, **args)
    assert info.value.field == field or (field == "y" and info.value.field in ("y", "running_mean"))
    handle.finish()
    for name in ("y", "rm", "rv", "sm", "si"):
        assert np.array_equal(d[name].get(), host[name].astype(np.float32)), name


def test_bad_backward_input(handle):
    xd, bd, host, d = _bad_setup(handle)
    dx, ds, db = handle.to_device(np.full(xd.dims, 7.0, np.float32)), d["sm"], d["si"]
    with pytest.raises(BadParam) as info:
        batch_normalization_backward(handle, SPATIAL, 1, 0, 1, 0, xd, d["x"], TensorDesc("FP32", (2, 3, 4, 3)), d["y"],
                                     xd, dx, bd, d["sc"], ds, db, 1e-5)
    assert info.value.field == "dy_desc.dims"
    with pytest.raises(BadParam) as info:
        batch_normalization_backward(handle, SPATIAL, 1, 0, 1, 0, xd, d["x"], xd, d["y"], xd, dx, bd, d["sc"], ds, db,
                                     1e-5, d["rm"], None)
    assert info.value.field == "saved_inv_variance"
    assert np.array_equal(dx.get(), np.full(xd.dims, 7.0, np.float32))
    assert np.array_equal(ds.get(), host["sm"].astype(np.float32))


def test_training_needs_two_values_per_statistic(handle):
    xd = TensorDesc("FP32", (1, 3, 4, 4))
    with pytest.raises(BadParam) as info:
        problem(BnDirection.FORWARD_TRAINING, PER_ACTIVATION, dims=xd.dims)
    assert info.value.field == "x_desc.dims"


def test_functional_bad_input(handle):
    x = handle.to_device(np.ones((2, 3, 4, 4), np.float32))
    with pytest.raises(MiopyError):
        batch_norm(x, None, None, training=False)
    with pytest.raises(BadParam) as info:
        batch_norm_backward(handle.to_device(np.ones((2, 3, 4, 5), np.float32)), x)
    assert info.value.field == "grad_output"


def test_public_names():
    assert miopy.BatchNormMode is BatchNormMode and miopy.batch_norm is batch_norm
    assert miopy.fusion.BatchNormMode is BatchNormMode


# -- miopy-driver bnorm ---------------------------------------------------------------------------------------
DRIVER = ["bnorm", "-n", "3", "-c", "4", "-H", "5", "-W", "6"]


@pytest.mark.parametrize("flags", [["-F", "1", "-m", "1", "-s", "1", "-r", "1", "-A", "0.5", "-B", "2"],
                                   ["-F", "2", "-m", "0", "-r", "1", "-L", "NHWC"],
                                   ["-F", "0", "-b", "1", "-m", "1", "-s", "1", "-t", "1", "-i", "2"]],
                         ids=["train", "inference-nhwc", "backward"])
def test_driver_bnorm_verifies(capsys, flags):
    from miopy.cli import driver
    assert driver.main(DRIVER + flags) == 0
    assert "Batch Norm Verifies OK" in capsys.readouterr().out


def test_driver_bnorm_reports_bad_flags(capsys):
    from miopy.cli import driver
    assert driver.main(DRIVER + ["-F", "0", "-b", "0"]) == 1
    assert "forw" in capsys.readouterr().err
