"""Softmax and log-softmax: every solver, algorithm, mode and direction against float64 on random inputs
with poisoned outputs; no overflow on logits of +-1e4; blending, in-place, strides, fp16; the functional
ops over any dim; bad input refused before anything runs."""
import numpy as np
import pyopencl as cl
import pytest

import miopy
from miopy import BadParam, TensorDesc
from miopy.accuracy import max_error
from miopy.plan import plan_of
from miopy.softmax import (
    SoftmaxAlgorithm,
    SoftmaxDesc,
    SoftmaxMode,
    SoftmaxProblem,
    log_softmax,
    log_softmax_backward_data,
    softmax,
    softmax_backward,
    softmax_backward_data,
    softmax_forward,
)
from miopy.softmax import reference as ref
from miopy.softmax.problem import Direction
from miopy.softmax.registry import REGISTRY
from miopy.tensor import strided_view

TOLERANCE = {"FP32": 2e-5, "FP16": 3e-3}   # hybrid |a-e|/(1+|e|)
SHAPES = [(2, 5, 3, 4), (3, 40, 1, 1), (1, 3, 7, 9)]
ALGORITHMS, MODES = list(SoftmaxAlgorithm), list(SoftmaxMode)


def _random(shape, seed, scale=2.0, dtype=np.float32):
    return (scale * np.random.default_rng(seed).standard_normal(shape)).astype(dtype)


def _forward_ref(x, algorithm, mode):
    return ref.softmax_forward(x, int(SoftmaxAlgorithm.of(algorithm)), int(SoftmaxMode.of(mode)))


def _host_inputs(problem, seed):
    """Random x (forward) or a valid forward output y and random dy (backward)."""
    dims = problem.shape.dims
    if problem.direction is Direction.FORWARD:
        return {"x": _random(dims, seed)}
    y = _forward_ref(_random(dims, seed), problem.desc.algorithm, problem.desc.mode).astype(np.float32)
    return {"y": y, "dy": _random(dims, seed + 1, 1.0)}


def _run(handle, problem, solver, params, host):
    out_role = problem.outputs()[0]
    arrays = dict(host)
    arrays[out_role] = np.full(problem.shape.dims, np.nan, np.float32)
    mf = cl.mem_flags
    bufs = {r: cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a) for r, a in arrays.items()}
    plan_of(handle, problem, solver.solution(problem, params)).enqueue(bufs)
    got = np.empty(problem.shape.dims, np.float32)
    cl.enqueue_copy(handle.queue, got, bufs[out_role])
    return got


def _problem(direction, algorithm, mode, dims):
    desc, t = SoftmaxDesc(algorithm, mode), TensorDesc("FP32", dims)
    if direction is Direction.FORWARD:
        return SoftmaxProblem.create(direction, desc, x=t, y=t)
    return SoftmaxProblem.create(direction, desc, y=t, dy=t, dx=t)


CASES = [(s, d) for s in REGISTRY.ALL for d in Direction]


@pytest.mark.parametrize("solver,direction", CASES, ids=[f"{s.id}-{d.name}" for s, d in CASES])
def test_solver_matches_reference(handle, solver, direction):
    """Every algorithm and mode, each on one of the shapes in turn (odd sizes, rows longer than a work-group)."""
    for i, (algorithm, mode) in enumerate((a, m) for a in ALGORITHMS for m in MODES):
        problem = _problem(direction, algorithm, mode, SHAPES[i % len(SHAPES)])
        assert solver.is_applicable(problem, handle.info)
        host = _host_inputs(problem, i)
        got = _run(handle, problem, solver, solver.default_params(problem, handle.info), host)
        want = REGISTRY.reference(problem, host)[problem.outputs()[0]]
        assert max_error(got, want) <= TOLERANCE["FP32"], problem.key()


@pytest.mark.parametrize("solver", REGISTRY.ALL, ids=lambda s: s.id)
def test_sampled_grid_points_match_reference(handle, solver):
    problem = _problem(Direction.FORWARD, "accurate", "instance", SHAPES[0])
    host = _host_inputs(problem, 5)
    for params in solver.sample_space(problem, handle.info, count=2, seed=1):
        got = _run(handle, problem, solver, params, host)
        assert max_error(got, REGISTRY.reference(problem, host)["y"]) <= TOLERANCE["FP32"], params


def test_ranking_prefers_a_work_item_per_row_for_many_short_rows(handle):
    many = _problem(Direction.FORWARD, "accurate", "channel", (4, 21, 32, 32))
    assert miopy.get_solutions(handle, many)[0].solver_id == "SoftmaxItemPerRow"
    classifier = _problem(Direction.FORWARD, "accurate", "channel", (8, 1000, 1, 1))
    assert [r.solver_id for r in miopy.get_solutions(handle, classifier)] == ["SoftmaxBlockPerRow"]


@pytest.mark.parametrize("algorithm", [SoftmaxAlgorithm.ACCURATE, SoftmaxAlgorithm.LOG], ids=lambda a: a.name)
@pytest.mark.parametrize("solver", REGISTRY.ALL, ids=lambda s: s.id)
def test_large_logits_do_not_overflow(handle, solver, algorithm):
    """Logits of +-1e4 (and one -inf): max subtraction keeps every term finite; the reference agrees."""
    problem = _problem(Direction.FORWARD, algorithm, "channel", (2, 6, 2, 3))
    x = np.where(_random(problem.shape.dims, 7) > 0, 1e4, -1e4).astype(np.float32)
    x += _random(x.shape, 8, 1.0)
    x[0, 2, 0, 0] = -np.inf
    got = _run(handle, problem, solver, solver.default_params(problem, handle.info), {"x": x})
    want = _forward_ref(x, algorithm, "channel")
    finite = np.isfinite(want)
    assert (got[~finite] == want[~finite]).all()   # log-softmax of -inf is -inf
    assert max_error(got[finite], want[finite]) <= TOLERANCE["FP32"]


# -- the descriptor API ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", ALGORITHMS, ids=lambda a: a.name)
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_forward_and_backward_with_blending(handle, algorithm, mode):
    dims = (2, 6, 3, 5)
    desc = TensorDesc("FP32", dims)
    x, y0, dy, dx0 = _random(dims, 1), _random(dims, 2), _random(dims, 3, 1.0), _random(dims, 4)
    ya, dxa = handle.to_device(y0), handle.to_device(dx0)
    softmax_forward(handle, 0.5, desc, handle.to_device(x), -1.5, desc, ya, algorithm, mode)
    y = _forward_ref(x, algorithm, mode)
    assert max_error(ya.get(), 0.5 * y - 1.5 * y0) <= TOLERANCE["FP32"]
    yb = handle.to_device(y.astype(np.float32))
    softmax_backward(handle, 2.0, desc, yb, desc, handle.to_device(dy), 0.25, desc, dxa, algorithm, mode)
    want = ref.softmax_backward(y.astype(np.float32), dy, int(algorithm), int(mode))
    assert max_error(dxa.get(), 2.0 * want + 0.25 * dx0) <= TOLERANCE["FP32"]


def test_in_place_and_strided(handle):
    dims = (2, 4, 3, 3)
    x = _random(dims, 9)
    desc = TensorDesc("FP32", dims)
    buf = handle.to_device(x)
    softmax_forward(handle, 1.0, desc, buf, 0.0, desc, buf, "log", "instance")
    assert max_error(buf.get(), _forward_ref(x, "log", "instance")) <= TOLERANCE["FP32"]
    strided = TensorDesc("FP32", dims, (4 * 3 * 5, 1, 4 * 5, 4))   # channels innermost, rows padded to 5
    host = np.full(strided.element_span, np.nan, np.float32)
    strided_view(host, dims, strided.strides)[...] = x
    out = handle.to_device(np.full(strided.element_span, np.nan, np.float32))
    softmax_forward(handle, 1.0, strided, handle.to_device(host), 0.0, strided, out, "accurate", "channel")
    got = strided_view(out.get(), dims, strided.strides)
    assert max_error(got, _forward_ref(x, "accurate", "channel")) <= TOLERANCE["FP32"]


def test_fp16_storage(handle):
    dims = (2, 10, 2, 3)
    x = _random(dims, 10, dtype=np.float16)
    desc = TensorDesc("FP16", dims)
    for algorithm in ALGORITHMS:
        y = handle.to_device(np.full(dims, np.nan, np.float16))
        softmax_forward(handle, 1.0, desc, handle.to_device(x), 0.0, desc, y, algorithm, "channel")
        assert max_error(y.get(), _forward_ref(x, algorithm, "channel")) <= TOLERANCE["FP16"], algorithm


# -- functional ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,dim", [((3, 7), 1), ((2, 5, 4, 3), 1), ((2, 5, 4, 3), -1), ((2, 3, 6), 0),
                                       ((9,), 0)])
def test_functional_softmax_over_any_dim(handle, shape, dim):
    x = _random(shape, 11)
    xa = handle.to_device(x)
    dy = _random(shape, 12, 1.0)
    for forward, backward, log in ((softmax, softmax_backward_data, False),
                                   (log_softmax, log_softmax_backward_data, True)):
        moved = np.moveaxis(x.astype(np.float64), dim, -1)
        shift = moved - moved.max(axis=-1, keepdims=True)
        lse = np.log(np.exp(shift).sum(axis=-1, keepdims=True))
        want = np.moveaxis(shift - lse if log else np.exp(shift - lse), -1, dim)
        y = forward(xa, dim)
        assert y.shape == x.shape and max_error(y.get(), want) <= TOLERANCE["FP32"]
        dy_m, want_m = np.moveaxis(dy, dim, -1), np.moveaxis(want, dim, -1)
        if log:
            dx = dy_m - np.exp(want_m) * dy_m.sum(axis=-1, keepdims=True)
        else:
            dx = want_m * (dy_m - (dy_m * want_m).sum(axis=-1, keepdims=True))
        got = backward(handle.to_device(dy), y, dim)
        assert max_error(got.get(), np.moveaxis(dx, -1, dim)) <= TOLERANCE["FP32"]


# -- bad input ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("field,call", [
    ("y_desc.dims", lambda h, d, a, o: softmax_forward(h, 1, d, a, 0, TensorDesc("FP32", (2, 3, 4, 6)), o)),
    ("y_desc.dtype", lambda h, d, a, o: softmax_forward(h, 1, d, a, 0, TensorDesc("FP16", (2, 3, 4, 5)), o)),
    ("algorithm", lambda h, d, a, o: softmax_forward(h, 1, d, a, 0, d, o, algorithm=7)),
    ("mode", lambda h, d, a, o: softmax_forward(h, 1, d, a, 0, d, o, mode="spatial")),
    ("y", lambda h, d, a, o: softmax_forward(h, 1, d, a, 0, d, h.empty((3,)))),
    ("alpha", lambda h, d, a, o: softmax_forward(h, float("nan"), d, a, 0, d, o)),
    ("dx_desc.dims", lambda h, d, a, o: softmax_backward(h, 1, d, a, d, a, 0, TensorDesc("FP32", (1, 3, 4, 5)), o)),
    ("dx", lambda h, d, a, o: softmax_backward(h, 1, d, a, d, a, 0, d, h.empty((2, 3, 4, 5), np.float16))),
    ("dim", lambda h, d, a, o: softmax(a, dim=4)),
    ("x", lambda h, d, a, o: softmax(a.get())),
])
def test_bad_input_names_the_field_and_leaves_outputs(handle, field, call):
    desc = TensorDesc("FP32", (2, 3, 4, 5))
    xa, out = handle.to_device(_random(desc.dims, 13)), handle.to_device(np.full(desc.dims, np.nan, np.float32))
    with pytest.raises(BadParam) as info:
        call(handle, desc, xa, out)
    assert info.value.field == field
    handle.finish()
    assert np.isnan(out.get()).all()


def test_public_names():
    assert miopy.softmax.softmax is softmax and miopy.softmax.SoftmaxMode.CHANNEL == 1
