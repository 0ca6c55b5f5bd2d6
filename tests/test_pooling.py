"""Pooling: descriptor geometry, every solver / mode / direction against the float64 reference (PyTorch's
formulas) on random inputs with poisoned outputs, the descriptor API's blending and index workspace, the
functional ops, and bad input refused before anything runs."""
import numpy as np
import pyopencl as cl
import pytest

import miopy
from miopy import BadParam, MiopyError, NotSupported, TensorDesc
from miopy.accuracy import max_error
from miopy.plan import plan_of
from miopy.pooling import (
    PoolingDesc,
    PoolingMode,
    PoolingProblem,
    adaptive_avg_pool2d,
    adaptive_avg_pool2d_backward,
    avg_pool2d,
    avg_pool2d_backward,
    max_pool2d,
    max_pool2d_backward,
    pooling_backward,
    pooling_forward,
    pooling_workspace_size,
)
from miopy.pooling import reference as ref
from miopy.pooling.problem import Direction
from miopy.pooling.registry import REGISTRY

TOLERANCE = {"FP32": 1e-5, "FP16": 2e-3}   # hybrid |a-e|/(1+|e|): window sums of a few float terms

# (dims, window, pads (top, bottom, left, right), strides, ceil_mode): odd sizes, asymmetric pads, windows
# that overlap (stride < window) and that skip (stride > window), ceil_mode with a last window over the pad.
GEOMETRIES = [
    ((2, 3, 9, 8), (3, 3), (1, 1, 1, 1), (2, 2), False),
    ((1, 4, 7, 10), (3, 2), (1, 0, 0, 1), (2, 3), True),
    ((2, 2, 6, 6), (2, 2), (0, 0, 0, 0), (2, 2), True),
    ((1, 3, 8, 5), (2, 3), (1, 1, 2, 0), (3, 1), False),
]
MODES = list(PoolingMode)


def _random(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _poisoned(handle, shape, dtype=np.float32):
    return handle.to_device(np.full(shape, np.nan, dtype))


def _expected_forward(x, desc):
    return ref.pool_forward(x, int(desc.mode), desc.window, desc.pads, desc.strides, desc.ceil_mode)


def _expected_backward(dy, x_shape, desc, indices):
    return ref.pool_backward(dy, x_shape, int(desc.mode), desc.window, desc.pads, desc.strides, desc.ceil_mode,
                             indices)


# -- geometry ---------------------------------------------------------------------------------------------
def test_output_size_matches_pytorch_rules():
    x = TensorDesc("FP32", (1, 1, 6, 5))
    assert PoolingDesc("max", 3, 1, 2).output_dims(x) == (1, 1, 3, 3)
    assert PoolingDesc("max", 3, 1, 2, ceil_mode=True).output_dims(x) == (1, 1, 4, 3)
    # ceil: 5 rows, window 2, stride 2, pad 1 round up to 4 windows, but the 4th would start at 6 - 1 = 5,
    # in the bottom pad only, so PyTorch drops it: 3 (the width, 4 + 2 pads, gives 3 either way)
    assert PoolingDesc("max", 2, 1, 2, ceil_mode=True).output_dims(TensorDesc("FP32", (1, 1, 5, 4))) == (1, 1, 3, 3)
    assert PoolingDesc("avg", (3, 3), (0, 1, 1, 0), (2, 2)).output_dims(x) == (1, 1, 3, 2)


def test_same_padding_is_asymmetric_for_odd_totals():
    """MIOpen's --pmode same (ONNX SAME_UPPER): 14x14, 3x3 window, stride 2 -> 7x7 with pads 0 before, 1 after."""
    desc = PoolingDesc.same("max", 3, 2, TensorDesc("FP32", (1, 1, 14, 14)))
    assert desc.pads == (0, 1, 0, 1)
    assert desc.output_dims(TensorDesc("FP32", (1, 1, 14, 14))) == (1, 1, 7, 7)
    assert PoolingDesc.same("max", 3, 2, TensorDesc("FP32", (1, 1, 14, 14)), upper=False).pads == (1, 0, 1, 0)


def test_hand_computed_pytorch_average_edges():
    """avg_pool2d(ones(1,1,4,4), 3, stride 2, padding 1, ceil_mode=True): PyTorch's divisor is the window
    clipped to the far pad (count_include_pad) or the count of input elements (not)."""
    x = np.ones((1, 1, 4, 4))
    inclusive = [[4 / 9, 6 / 9, 2 / 6], [6 / 9, 1, 3 / 6], [2 / 6, 3 / 6, 1 / 4]]
    y, _ = ref.pool_forward(x, int(PoolingMode.AVERAGE_INCLUSIVE), (3, 3), (1, 1, 1, 1), (2, 2), True)
    assert np.allclose(y[0, 0], inclusive)
    y, _ = ref.pool_forward(x, int(PoolingMode.AVERAGE), (3, 3), (1, 1, 1, 1), (2, 2), True)
    assert np.allclose(y, 1.0)


@pytest.mark.parametrize("field,make", [
    ("window", lambda: PoolingDesc("max", 0)),
    ("pads", lambda: PoolingDesc("max", 3, (1, 3, 0, 0), 1)),
    ("pads", lambda: PoolingDesc("max", 3, (1, 1, 1), 1)),
    ("strides", lambda: PoolingDesc("max", 3, 0, (1, -1))),
    ("mode", lambda: PoolingDesc("median", 3)),
    ("ceil_mode", lambda: PoolingDesc("max", 3, ceil_mode=1)),
    ("x_desc.h", lambda: PoolingDesc("max", 5).output_dims(TensorDesc("FP32", (1, 1, 3, 8)))),
])
def test_bad_descriptors_name_the_field(field, make):
    with pytest.raises(BadParam) as info:
        make()
    assert info.value.field == field


# -- every solver of the registry, on its own -------------------------------------------------------------------
def _problems(direction):
    out = []
    for mode in MODES:
        for dims, window, pads, strides, ceil in GEOMETRIES:
            desc = PoolingDesc(mode, window, pads, strides, ceil)
            out.append(PoolingProblem.create(direction, desc, TensorDesc("FP32", dims), save_indices=True))
        x = TensorDesc("FP32", (2, 5, 7, 6))
        out.append(PoolingProblem.create(direction, PoolingDesc(mode, (7, 6)), x, save_indices=True))
    return out


def _run_problem(handle, problem, solver, params, seed=0):
    """Run a solution through plan_of with every output poisoned; returns {role: host array}."""
    tensors = problem.tensors()
    host = {role: _random(d.dims, seed + i) for i, (role, d) in enumerate(tensors.items())}
    if problem.direction is Direction.BACKWARD and "indices" in host:   # the argmax of some random input
        _, indices = _expected_forward(_random(problem.x.dims, seed + 99), problem.desc)
        host["indices"] = indices.astype(np.int32).view(np.float32)
    for role in problem.outputs():
        host[role] = np.full(tensors[role].dims, np.nan, np.float32)
    mf = cl.mem_flags
    bufs = {r: cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a) for r, a in host.items()}
    plan_of(handle, problem, solver.solution(problem, params)).enqueue(bufs)
    out = {}
    for role in problem.outputs():
        out[role] = np.empty_like(host[role])
        cl.enqueue_copy(handle.queue, out[role], bufs[role])
    handle.finish()
    return host, out


CASES = [(s, d) for s in REGISTRY.ALL for d in Direction]
ONE_DIRECTION = {"PoolingGlobalAverageStaged": Direction.FORWARD, "PoolingGlobalAverage": Direction.FORWARD,
                 "PoolingGlobalAverageBackward": Direction.BACKWARD}


@pytest.mark.parametrize("solver,direction", CASES, ids=[f"{s.id}-{d.name}" for s, d in CASES])
def test_solver_matches_reference(handle, solver, direction):
    problems = [p for p in _problems(direction) if solver.is_applicable(p, handle.info)]
    if solver.id in ONE_DIRECTION and ONE_DIRECTION[solver.id] is not direction:
        assert not problems
        return
    assert problems
    for i, problem in enumerate(problems):
        params = solver.default_params(problem, handle.info)
        assert solver.is_valid(problem, params, handle.info)
        host, out = _run_problem(handle, problem, solver, params, seed=i)
        expected = REGISTRY.reference(problem, host)
        for role, want in expected.items():
            assert max_error(out[role], want) <= TOLERANCE["FP32"], (problem.key(), role)
        if problem.save_indices:
            _, want_indices = _expected_forward(host["x"], problem.desc)
            assert (out["indices"].view(np.int32) == want_indices).all(), problem.key()


@pytest.mark.parametrize("solver", REGISTRY.ALL, ids=lambda s: s.id)
def test_sampled_grid_points_match_reference(handle, solver):
    direction = ONE_DIRECTION.get(solver.id, Direction.FORWARD)
    problem = next(p for p in _problems(direction) if solver.is_applicable(p, handle.info))
    for params in solver.sample_space(problem, handle.info, count=2, seed=3):
        host, out = _run_problem(handle, problem, solver, params)
        for role, want in REGISTRY.reference(problem, host).items():
            assert max_error(out[role], want) <= TOLERANCE["FP32"], params
    assert not solver.is_valid(problem, {"WG": 100}, handle.info)


def test_global_average_is_chosen_for_a_whole_plane_window(handle):
    x_desc = TensorDesc("FP32", (2, 3, 5, 4))
    problem = PoolingProblem.create(Direction.FORWARD, PoolingDesc("avg", (5, 4)), x_desc)
    assert miopy.get_solutions(handle, problem)[0].solver_id == "PoolingGlobalAverageStaged"
    backward = PoolingProblem.create(Direction.BACKWARD, PoolingDesc("avg", (5, 4)), x_desc)
    assert miopy.get_solutions(handle, backward)[0].solver_id == "PoolingGlobalAverageBackward"
    padded = PoolingProblem.create(Direction.FORWARD, PoolingDesc("avg", (5, 4), (1, 0, 0, 0), 1), x_desc)
    assert miopy.get_solutions(handle, padded)[0].solver_id == "PoolingWindowed"


STAGED_CASES = [  # (dims, x strides): several work-groups with a part-filled last one, odd and even planes
    ((3, 37, 7, 7), None),
    ((2, 5, 4, 4), None),
    ((1, 3, 1, 1), None),
    ((2, 20, 5, 6), (5 * 6 * 20, 1, 6 * 20, 20)),          # NHWC
    ((2, 9, 3, 5), (9 * 3 * 8, 3 * 8, 8, 1)),              # padded rows
]


@pytest.mark.parametrize("dims,x_strides", STAGED_CASES)
def test_global_average_staged_every_grid_point(handle, dims, x_strides):
    from miopy.pooling.solvers.global_average_staged import PoolingGlobalAverageStaged
    solver = PoolingGlobalAverageStaged()
    x_desc = TensorDesc("FP32", dims, x_strides)
    problem = PoolingProblem.create(Direction.FORWARD, PoolingDesc("avg", dims[2:]), x_desc)
    assert solver.is_applicable(problem, handle.info)
    x = _random(x_desc.element_span, 11)
    want = ref.pool_forward(miopy.tensor.strided_view(x, dims, x_desc.strides), 1, dims[2:], (0, 0, 0, 0),
                            dims[2:], False)[0]
    points = list(solver.search_space(problem, handle.info))
    assert solver.default_params(problem, handle.info) in points and len(points) >= 10
    mf = cl.mem_flags
    for params in points:
        bufs = {"x": cl.Buffer(handle.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x),
                "y": cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR,
                               hostbuf=np.full(want.shape, np.nan, np.float32))}
        plan_of(handle, problem, solver.solution(problem, params)).enqueue(bufs)
        got = np.empty(want.shape, np.float32)
        cl.enqueue_copy(handle.queue, got, bufs["y"])
        assert max_error(got, want) <= TOLERANCE["FP32"], params


@pytest.mark.parametrize("dtype", ["FP32", "FP16"])
@pytest.mark.parametrize("dims,x_strides", STAGED_CASES)
def test_global_average_backward_spreads_dy(handle, dims, x_strides, dtype):
    from miopy.pooling.solvers.global_average_backward import PoolingGlobalAverageBackward
    solver = PoolingGlobalAverageBackward()
    dx_desc = TensorDesc(dtype, dims, x_strides)
    problem = PoolingProblem.create(Direction.BACKWARD, PoolingDesc("avg_in", dims[2:]), dx_desc)
    assert solver.is_applicable(problem, handle.info)
    np_dtype = dx_desc.dtype.numpy
    dy = _random(problem.y.element_span, 13, np_dtype)
    dx = handle.to_device(np.full(dx_desc.element_span + 3, np.nan, np_dtype))
    plan_of(handle, problem, solver.solution(problem, {"WG": 64})).enqueue(
        {"dx": dx.base_data, "dy": handle.to_device(dy).base_data})
    got = dx.get()
    want = np.broadcast_to(dy.astype(np.float64).reshape(dims[0], dims[1], 1, 1) / (dims[2] * dims[3]), dims)
    view = lambda a: miopy.tensor.strided_view(a, dims, dx_desc.strides)
    assert max_error(view(got), want) <= TOLERANCE[dtype]
    mask = np.ones(got.size, bool)
    view(mask)[...] = False
    assert np.all(np.isnan(got[mask]))                     # padding and past the tensor: untouched


def test_global_average_staged_fp16(handle):
    from miopy.pooling.solvers.global_average_staged import PoolingGlobalAverageStaged
    solver, dims = PoolingGlobalAverageStaged(), (3, 37, 7, 7)
    problem = PoolingProblem.create(Direction.FORWARD, PoolingDesc("avg", (7, 7)), TensorDesc("FP16", dims))
    x = _random(dims, 12, np.float16)
    bufs = {"x": handle.to_device(x), "y": handle.to_device(np.full((3, 37, 1, 1), np.nan, np.float16))}
    plan_of(handle, problem, solver.solution(problem, solver.default_params(problem, handle.info))).enqueue(
        {role: buf.base_data for role, buf in bufs.items()})
    want = x.astype(np.float64).mean(axis=(2, 3), keepdims=True)
    assert max_error(bufs["y"].get(), want) <= TOLERANCE["FP16"]


# -- the descriptor API ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
@pytest.mark.parametrize("geometry", GEOMETRIES[:2], ids=["sym", "asym-ceil"])
def test_forward_and_backward_with_blending(handle, mode, geometry):
    dims, window, pads, strides, ceil = geometry
    desc = PoolingDesc(mode, window, pads, strides, ceil)
    x_desc = TensorDesc("FP32", dims)
    y_desc = desc.output_desc(x_desc)
    x, y0, dy, dx0 = _random(dims, 1), _random(y_desc.dims, 2), _random(y_desc.dims, 3), _random(dims, 4)
    xa, ya, dxa = handle.to_device(x), handle.to_device(y0), handle.to_device(dx0)
    size = pooling_workspace_size(desc, y_desc)
    assert size == (y_desc.element_count * 4 if mode is PoolingMode.MAX else 0)
    ws = handle.empty((max(size // 4, 1),), np.int32)
    pooling_forward(handle, desc, 0.5, x_desc, xa, 2.0, y_desc, ya, do_backward=True, workspace=ws)
    y, indices = _expected_forward(x, desc)
    assert max_error(ya.get(), 0.5 * y + 2.0 * y0) <= TOLERANCE["FP32"]
    pooling_backward(handle, desc, 1.5, y_desc, ya, y_desc, handle.to_device(dy), x_desc, xa, -1.0, x_desc, dxa,
                     workspace=ws)
    dx = _expected_backward(dy, dims, desc, indices)
    assert max_error(dxa.get(), 1.5 * dx - dx0) <= TOLERANCE["FP32"]


def test_strided_descriptors(handle):
    """x with padded rows, y with a channel-major stride order: the kernels index through the strides."""
    dims = (2, 3, 6, 5)
    x_desc = TensorDesc("FP32", dims, (3 * 6 * 8, 6 * 8, 8, 1))
    desc = PoolingDesc("max", 2, (1, 0, 1, 0), 2)
    out = desc.output_dims(x_desc)
    y_desc = TensorDesc("FP32", out, (out[2] * out[3], out[0] * out[2] * out[3], out[3], 1))   # C N H W order
    x = _random(dims, 5)
    host = np.full(x_desc.element_span, np.nan, np.float32)
    miopy.tensor.strided_view(host, dims, x_desc.strides)[...] = x
    ya = _poisoned(handle, (y_desc.element_span,))
    pooling_forward(handle, desc, 1.0, x_desc, handle.to_device(host), 0.0, y_desc, ya)
    got = miopy.tensor.strided_view(ya.get(), out, y_desc.strides)
    assert max_error(got, _expected_forward(x, desc)[0]) <= TOLERANCE["FP32"]


def test_fp16_storage(handle):
    dims = (2, 3, 7, 7)
    x = _random(dims, 6, np.float16)
    x_desc = TensorDesc("FP16", dims)
    for mode in MODES:
        desc = PoolingDesc(mode, 3, 1, 2)
        y_desc = desc.output_desc(x_desc)
        ya = _poisoned(handle, y_desc.dims, np.float16)
        pooling_forward(handle, desc, 1.0, x_desc, handle.to_device(x), 0.0, y_desc, ya)
        assert max_error(ya.get(), _expected_forward(x, desc)[0]) <= TOLERANCE["FP16"]
    y = adaptive_avg_pool2d(handle.to_device(x), 1, handle=handle)
    assert max_error(y.get(), x.astype(np.float64).mean(axis=(2, 3), keepdims=True)) <= TOLERANCE["FP16"]


def test_warm_call_compiles_and_allocates_nothing(handle):
    desc, x_desc = PoolingDesc("max", 3, 1, 2), TensorDesc("FP32", (1, 2, 8, 8))
    y_desc = desc.output_desc(x_desc)
    xa, ya = handle.to_device(_random(x_desc.dims, 7)), handle.empty(y_desc.dims)
    ws = handle.empty((y_desc.element_count,), np.int32)
    pooling_forward(handle, desc, 1.0, x_desc, xa, 0.0, y_desc, ya, True, ws)
    before, plans = handle.cache_stats(), len(handle.plans)
    pooling_forward(handle, desc, 1.0, x_desc, xa, 0.0, y_desc, ya, True, ws)
    assert handle.cache_stats() == before and len(handle.plans) == plans


# -- functional ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_max_pool2d_and_backward(handle, ceil_mode):
    x = _random((2, 3, 9, 7), 8)
    xa = handle.to_device(x)
    y, indices = max_pool2d(xa, 3, 2, 1, ceil_mode=ceil_mode, return_indices=True)
    desc = PoolingDesc("max", 3, 1, 2, ceil_mode)
    want, want_indices = _expected_forward(x, desc)
    assert y.shape == want.shape and max_error(y.get(), want) <= TOLERANCE["FP32"]
    assert indices.dtype == np.int32 and (indices.get() == want_indices).all()
    dy = _random(want.shape, 9)
    dx = max_pool2d_backward(handle.to_device(dy), xa, indices, 3, 2, 1, ceil_mode=ceil_mode)
    assert max_error(dx.get(), _expected_backward(dy, x.shape, desc, want_indices)) <= TOLERANCE["FP32"]
    assert max_error(max_pool2d(xa, 3, 2, 1, ceil_mode=ceil_mode).get(), want) <= TOLERANCE["FP32"]


@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d_and_backward(handle, count_include_pad):
    x = _random((1, 2, 8, 9), 10)
    xa = handle.to_device(x)
    y = avg_pool2d(xa, (3, 2), (2, 2), (1, 1), ceil_mode=True, count_include_pad=count_include_pad)
    mode = PoolingMode.AVERAGE_INCLUSIVE if count_include_pad else PoolingMode.AVERAGE
    desc = PoolingDesc(mode, (3, 2), (1, 1), (2, 2), True)
    want, _ = _expected_forward(x, desc)
    assert max_error(y.get(), want) <= TOLERANCE["FP32"]
    dy = _random(want.shape, 11)
    dx = avg_pool2d_backward(handle.to_device(dy), xa, (3, 2), (2, 2), (1, 1), True, count_include_pad)
    assert max_error(dx.get(), _expected_backward(dy, x.shape, desc, None)) <= TOLERANCE["FP32"]


def test_adaptive_avg_pool2d_and_backward(handle):
    x = _random((3, 4, 6, 5), 12)
    xa = handle.to_device(x)
    y = adaptive_avg_pool2d(xa, (1, 1))
    assert y.shape == (3, 4, 1, 1)
    assert max_error(y.get(), x.astype(np.float64).mean(axis=(2, 3), keepdims=True)) <= TOLERANCE["FP32"]
    dy = _random((3, 4, 1, 1), 13)
    dx = adaptive_avg_pool2d_backward(handle.to_device(dy), xa)
    assert max_error(dx.get(), np.broadcast_to(dy / 30.0, x.shape)) <= TOLERANCE["FP32"]
    with pytest.raises(NotSupported, match="output_size"):
        adaptive_avg_pool2d(xa, 2)


# -- bad input: refused before anything runs, outputs untouched ----------------------------------------------------
class _Setup:
    def __init__(self, handle, mode="max"):
        self.desc = PoolingDesc(mode, 2, 0, 2)
        self.x_desc = TensorDesc("FP32", (1, 2, 6, 6))
        self.y_desc = self.desc.output_desc(self.x_desc)
        self.x = handle.to_device(_random(self.x_desc.dims, 14))
        self.y = _poisoned(handle, self.y_desc.dims)
        self.dy = handle.to_device(_random(self.y_desc.dims, 15))
        self.dx = _poisoned(handle, self.x_desc.dims)
        self.ws = handle.empty((self.y_desc.element_count,), np.int32)


def _forward(h, s, **kw):
    args = dict(do_backward=True, workspace=s.ws) | kw
    return pooling_forward(h, s.desc, 1.0, args.pop("x_desc", s.x_desc), s.x, 0.0, args.pop("y_desc", s.y_desc),
                           s.y, **args)


def _backward(h, s, **kw):
    return pooling_backward(h, kw.pop("desc", s.desc), 1.0, s.y_desc, s.y, kw.pop("dy_desc", s.y_desc), s.dy,
                            s.x_desc, s.x, 0.0, s.x_desc, s.dx, **kw)


@pytest.mark.parametrize("field,call", [
    ("y_desc.dims", lambda h, s: _forward(h, s, y_desc=TensorDesc("FP32", (1, 2, 4, 3)))),
    ("y_desc.dtype", lambda h, s: _forward(h, s, y_desc=TensorDesc("FP16", (1, 2, 3, 3)))),
    ("workspace", lambda h, s: _forward(h, s, workspace=None)),
    ("workspace", lambda h, s: _forward(h, s, workspace=h.empty((4,), np.int32))),
    ("workspace", lambda h, s: _forward(h, s, workspace=s.y)),
    ("pool_desc", lambda h, s: pooling_forward(h, "max", 1.0, s.x_desc, s.x, 0.0, s.y_desc, s.y)),
    ("handle", lambda h, s: pooling_forward(None, s.desc, 1.0, s.x_desc, s.x, 0.0, s.y_desc, s.y)),
    ("beta", lambda h, s: pooling_forward(h, s.desc, 1.0, s.x_desc, s.x, float("inf"), s.y_desc, s.y)),
    ("x", lambda h, s: pooling_forward(h, s.desc, 1.0, s.x_desc, s.x.get(), 0.0, s.y_desc, s.y)),
    ("dy_desc.dims", lambda h, s: _backward(h, s, dy_desc=TensorDesc("FP32", (1, 2, 3, 4)), workspace=s.ws)),
    ("workspace", lambda h, s: _backward(h, s)),
    ("workspace", lambda h, s: _backward(h, s, workspace=h.empty((s.y_desc.element_count,), np.int32))),
])
def test_bad_input_names_the_field_and_leaves_outputs(handle, field, call):
    s = _Setup(handle)
    with pytest.raises(BadParam) as info:
        call(handle, s)
    assert info.value.field == field
    handle.finish()
    assert np.isnan(s.y.get()).all() and np.isnan(s.dx.get()).all()


def test_backward_refuses_indices_of_another_forward(handle):
    """A workspace a forward filled for other descriptors is refused; the matching one is accepted."""
    s = _Setup(handle)
    other = PoolingDesc("max", 3, 0, 3)
    pooling_forward(handle, other, 1.0, s.x_desc, s.x, 0.0, other.output_desc(s.x_desc),
                    handle.empty(other.output_dims(s.x_desc)), True, s.ws)
    with pytest.raises(BadParam, match="no indices saved"):
        _backward(handle, s, workspace=s.ws)
    assert np.isnan(s.dx.get()).all()
    _forward(handle, s)
    _backward(handle, s, workspace=s.ws)
    assert not np.isnan(s.dx.get()).any()


def test_average_backward_needs_no_workspace(handle):
    s = _Setup(handle, "avg")
    assert pooling_workspace_size(s.desc, s.y_desc) == 0
    _backward(handle, s)
    assert not np.isnan(s.dx.get()).any()


def test_functional_bad_input(handle):
    xa = handle.to_device(_random((1, 1, 4, 4), 16))
    with pytest.raises(BadParam) as info:
        max_pool2d(xa.get(), 2)
    assert info.value.field == "x"
    with pytest.raises(BadParam) as info:
        max_pool2d_backward(handle.empty((1, 1, 2, 2)), xa, handle.empty((4,), np.int32), 2)
    assert info.value.field == "workspace"
    with pytest.raises(MiopyError):
        avg_pool2d(xa, 2, count_include_pad="yes")


def test_public_names():
    assert miopy.pooling.max_pool2d is max_pool2d
