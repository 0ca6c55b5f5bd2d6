"""LRN: the reference's gradient against finite differences; the solver in both modes and directions against
float64 on random inputs with poisoned outputs; the descriptor API's blending and saved scale; PyTorch's
local_response_norm; bad input refused before anything runs."""
import numpy as np
import pyopencl as cl
import pytest

import miopy
from miopy import BadParam, TensorDesc
from miopy.accuracy import max_error
from miopy.lrn import (
    LRNDesc,
    LRNMode,
    LRNProblem,
    local_response_norm,
    local_response_norm_backward,
    lrn_backward,
    lrn_forward,
    lrn_workspace_size,
)
from miopy.lrn import reference as ref
from miopy.lrn.problem import Direction
from miopy.lrn.registry import REGISTRY
from miopy.plan import plan_of
from miopy.tensor import strided_view

TOLERANCE = {"FP32": 1e-5, "FP16": 3e-3}   # hybrid |a-e|/(1+|e|)
ALPHA, BETA, K = 0.9, 0.75, 1.5            # a large alpha, so the window sum matters
DIMS = (2, 7, 5, 6)
# (mode, n, pre): odd and even windows, MIOpen's offset and PyTorch's / custom ones
GEOMETRIES = [(LRNMode.CROSS_CHANNEL, 5, None), (LRNMode.CROSS_CHANNEL, 4, 2), (LRNMode.WITHIN_CHANNEL, 3, None),
              (LRNMode.WITHIN_CHANNEL, 4, 0)]


def _random(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _desc(mode, n, pre):
    return LRNDesc(mode, n, ALPHA, BETA, K, pre)


def _geometry(desc):
    return (int(desc.mode), desc.n, desc.alpha, desc.beta, desc.k, desc.pre)


@pytest.mark.parametrize("mode,n,pre", GEOMETRIES)
def test_reference_gradient_matches_finite_differences(mode, n, pre):
    x, dy = _random((1, 5, 3, 4), 1).astype(np.float64), _random((1, 5, 3, 4), 2).astype(np.float64)
    grad = ref.lrn_backward(dy, x, int(mode), n, ALPHA, BETA, K, pre)
    step, numeric = 1e-6, np.empty_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += step
        down[idx] -= step
        diff = ref.lrn_forward(up, int(mode), n, ALPHA, BETA, K, pre)[0] - ref.lrn_forward(down, int(mode), n, ALPHA,
                                                                                            BETA, K, pre)[0]
        numeric[idx] = (diff * dy).sum() / (2 * step)
    assert np.allclose(grad, numeric, atol=1e-7)


def test_pytorch_window_differs_from_miopen_for_even_n():
    """PyTorch pads n // 2 channels before, MIOpen and ONNX (n - 1) // 2: the scale of channel 0 with n = 2
    sums channel 0 only (PyTorch) or channels 0 and 1 (MIOpen)."""
    x = np.ones((1, 3, 1, 1))
    assert ref.lrn_scale(x, ref.CROSS, 2, 2.0, 1.0, pre=1)[0, 0, 0, 0] == 1.0 + 2.0 / 2 * 1
    assert ref.lrn_scale(x, ref.CROSS, 2, 2.0, 1.0)[0, 0, 0, 0] == 1.0 + 2.0 / 2 * 2
    assert LRNDesc("cross", 2).pre == 0 and LRNDesc("cross", 5).pre == 2


def _run(handle, problem, solver, params, host):
    arrays = dict(host)
    for role in problem.outputs():
        arrays[role] = np.full(problem.shape.dims, np.nan, np.float32)
    mf = cl.mem_flags
    bufs = {r: cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a) for r, a in arrays.items()}
    plan_of(handle, problem, solver.solution(problem, params)).enqueue(bufs)
    out = {role: np.empty(problem.shape.dims, np.float32) for role in problem.outputs()}
    for role, a in out.items():
        cl.enqueue_copy(handle.queue, a, bufs[role])
    handle.finish()
    return out


@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
@pytest.mark.parametrize("solver", REGISTRY.ALL, ids=lambda s: s.id)
def test_solver_matches_reference(handle, solver, direction):
    t = TensorDesc("FP32", DIMS)
    applicable = [g for g in GEOMETRIES if solver.is_applicable(
        LRNProblem.create(direction, _desc(*g), x=t, dy=t, dx=t), handle.info)]
    assert len(applicable) >= 2
    cases = [(g, DIMS) for g in applicable] + [(applicable[0], (1, 2, 3, 4))]   # fewer channels than the window
    for i, (geometry, dims) in enumerate(cases):
        desc, t = _desc(*geometry), TensorDesc("FP32", dims)
        x = _random(dims, i)
        if direction is Direction.FORWARD:
            problem = LRNProblem.create(direction, desc, True, x=t, y=t)
            host = {"x": x}
        else:
            problem = LRNProblem.create(direction, desc, x=t, dy=t, dx=t)
            scale = ref.lrn_scale(x, *_geometry(desc)[:3], K, desc.pre).astype(np.float32)
            host = {"dy": _random(dims, 10 + i), "x": x, "scale": scale}
        params = solver.default_params(problem, handle.info)
        assert solver.is_valid(problem, params, handle.info)
        out = _run(handle, problem, solver, params, host)
        for role, want in REGISTRY.reference(problem, host).items():
            assert max_error(out[role], want) <= TOLERANCE["FP32"], (problem.key(), role)
    assert not solver.is_valid(problem, {"WG": 7}, handle.info)


TILED_CASES = [  # (dims, strides, window n, pre): partial tiles in both axes, windows wider than tall planes
    ((2, 3, 19, 37), None, 3, None),
    ((1, 2, 9, 33), None, 4, 0),
    ((1, 2, 2, 5), None, 5, 3),
    ((2, 3, 11, 34), (3 * 11 * 34, 1, 34 * 3, 3), 3, None),   # NHWC
]


def _staged_case(handle, direction, desc, dims, strides, params, dtype, seed):
    solver = REGISTRY.get("LRNWithinChannelTiled")
    t = TensorDesc(dtype, dims, strides)
    tensors = {"x": t, "y": t} if direction is Direction.FORWARD else {"x": t, "dy": t, "dx": t}
    problem = LRNProblem.create(direction, desc, direction is Direction.FORWARD, **tensors)
    assert solver.is_applicable(problem, handle.info) and solver.is_valid(problem, params, handle.info)
    x = _random(dims, seed)
    host = {"x": x} if direction is Direction.FORWARD else {
        "x": x, "dy": _random(dims, seed + 1), "scale": ref.lrn_scale(x, *_geometry(desc)[:3], K, desc.pre)}
    descs = problem.tensors()
    view = lambda role, a: strided_view(a, dims, descs[role].strides)
    arrays = {role: np.full(d.element_span, np.nan, d.dtype.numpy) for role, d in descs.items()}
    for role, values in host.items():
        view(role, arrays[role])[...] = values
    bufs = {r: handle.to_device(a) for r, a in arrays.items()}
    plan_of(handle, problem, solver.solution(problem, params)).enqueue({r: b.base_data for r, b in bufs.items()})
    expected = REGISTRY.reference(problem, {r: view(r, a).astype(np.float64) for r, a in arrays.items() if r in host})
    for role, want in expected.items():
        got = view(role, bufs[role].get())
        assert max_error(got, want) <= TOLERANCE[dtype], (problem.key(), role, params)


@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
@pytest.mark.parametrize("dims,strides,n,pre", TILED_CASES)
def test_within_tiled_every_tile_height(handle, direction, dims, strides, n, pre):
    for i, th in enumerate(REGISTRY.get("LRNWithinChannelTiled").grid["TH"]):
        _staged_case(handle, direction, _desc(LRNMode.WITHIN_CHANNEL, n, pre), dims, strides, {"TH": th}, "FP32", i)


@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
def test_within_tiled_fp16(handle, direction):
    _staged_case(handle, direction, _desc(LRNMode.WITHIN_CHANNEL, 3, None), (2, 3, 19, 37), None, {"TH": 8}, "FP16", 3)


@pytest.mark.parametrize("mode", [LRNMode.WITHIN_CHANNEL, LRNMode.CROSS_CHANNEL], ids=lambda m: m.name)
def test_find_verifies_the_backward_on_a_positive_scale(handle, mode):
    """find's random inputs keep the saved scale positive, so every backward solver passes its accuracy check."""
    from miopy.find import find_problem
    t = TensorDesc("FP32", (2, 4, 9, 33))
    problem = LRNProblem.create(Direction.BACKWARD, _desc(mode, 3, None), x=t, dy=t, dx=t)
    result = find_problem(handle, problem, mode="normal", store=False, timer=lambda *_: 1.0)
    applicable = {s.id for s in REGISTRY.ALL if s.is_applicable(problem, handle.info)}
    assert {r.solver_id for r in result} == applicable and not result.rejected


def test_ranking_walks_columns_only_where_there_are_many(handle):
    cross = _desc(LRNMode.CROSS_CHANNEL, 5, None)
    big = LRNProblem.create(Direction.FORWARD, cross, x=TensorDesc("FP32", (16, 8, 55, 55)),
                            y=TensorDesc("FP32", (16, 8, 55, 55)))
    assert [r.solver_id for r in miopy.get_solutions(handle, big)] == ["LRNCrossChannelColumn", "LRNDirect"]
    small = LRNProblem.create(Direction.FORWARD, cross, x=TensorDesc("FP32", DIMS), y=TensorDesc("FP32", DIMS))
    assert miopy.get_solutions(handle, small)[0].solver_id == "LRNDirect"
    within = LRNProblem.create(Direction.FORWARD, _desc(LRNMode.WITHIN_CHANNEL, 3, None),
                               x=TensorDesc("FP32", (16, 8, 55, 55)), y=TensorDesc("FP32", (16, 8, 55, 55)))
    assert [r.solver_id for r in miopy.get_solutions(handle, within)] == ["LRNWithinChannelTiled", "LRNDirect"]


# -- the descriptor API -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode,n,pre", GEOMETRIES[::2])
def test_forward_and_backward_with_blending(handle, mode, n, pre):
    desc, t = _desc(mode, n, pre), TensorDesc("FP32", DIMS)
    x, y0, dy, dx0 = _random(DIMS, 1), _random(DIMS, 2), _random(DIMS, 3), _random(DIMS, 4)
    xa, ya, dxa = handle.to_device(x), handle.to_device(y0), handle.to_device(dx0)
    assert lrn_workspace_size(t) == x.nbytes == desc.workspace_bytes(t)
    ws = handle.to_device(np.full(DIMS, np.nan, np.float32))
    lrn_forward(handle, desc, 1.5, t, xa, -0.5, t, ya, do_backward=True, workspace=ws)
    y, scale = ref.lrn_forward(x, *_geometry(desc))
    assert max_error(ya.get(), 1.5 * y - 0.5 * y0) <= TOLERANCE["FP32"]
    assert max_error(ws.get(), scale) <= TOLERANCE["FP32"]
    lrn_backward(handle, desc, 0.5, t, ya, t, handle.to_device(dy), t, xa, 2.0, t, dxa, workspace=ws)
    want = ref.lrn_backward(dy, x, *_geometry(desc))
    assert max_error(dxa.get(), 0.5 * want + 2.0 * dx0) <= TOLERANCE["FP32"]


def test_a_byte_workspace_of_lrn_workspace_size_holds_the_scale(handle):
    """lrn_workspace_size counts bytes (MIOpen's miopenLRNGetWorkSpaceSize): a uint8 array of that size serves."""
    desc, t = _desc(LRNMode.CROSS_CHANNEL, 5, None), TensorDesc("FP32", DIMS)
    x, dy = _random(DIMS, 11), _random(DIMS, 12)
    xa, ya, dxa = handle.to_device(x), handle.empty(DIMS), handle.to_device(np.full(DIMS, np.nan, np.float32))
    ws = handle.to_device(np.full(lrn_workspace_size(t), 255, np.uint8))
    lrn_forward(handle, desc, 1.0, t, xa, 0.0, t, ya, do_backward=True, workspace=ws)
    assert max_error(ya.get(), ref.lrn_forward(x, *_geometry(desc))[0]) <= TOLERANCE["FP32"]
    lrn_backward(handle, desc, 1.0, t, ya, t, handle.to_device(dy), t, xa, 0.0, t, dxa, workspace=ws)
    assert max_error(dxa.get(), ref.lrn_backward(dy, x, *_geometry(desc))) <= TOLERANCE["FP32"]
    tiny = handle.to_device(np.zeros(1, np.uint8))
    with pytest.raises(BadParam, match="holds 1 bytes"):
        lrn_forward(handle, desc, 1.0, t, xa, 0.0, t, ya, do_backward=True, workspace=tiny)


def test_strided_and_fp16(handle):
    desc = _desc(LRNMode.CROSS_CHANNEL, 5, None)
    strided = TensorDesc("FP32", DIMS, (7 * 5 * 8, 1, 7 * 8, 7))   # channels innermost, padded rows
    x = _random(DIMS, 5)
    host = np.full(strided.element_span, np.nan, np.float32)
    strided_view(host, DIMS, strided.strides)[...] = x
    out = handle.to_device(np.full(strided.element_span, np.nan, np.float32))
    lrn_forward(handle, desc, 1.0, strided, handle.to_device(host), 0.0, strided, out)
    got = strided_view(out.get(), DIMS, strided.strides)
    assert max_error(got, ref.lrn_forward(x, *_geometry(desc))[0]) <= TOLERANCE["FP32"]
    half, x16 = TensorDesc("FP16", DIMS), x.astype(np.float16)
    y16 = handle.to_device(np.full(DIMS, np.nan, np.float16))
    lrn_forward(handle, desc, 1.0, half, handle.to_device(x16), 0.0, half, y16)
    assert max_error(y16.get(), ref.lrn_forward(x16, *_geometry(desc))[0]) <= TOLERANCE["FP16"]


def test_new_alpha_beta_k_compile_nothing(handle):
    t = TensorDesc("FP32", DIMS)
    xa, ya = handle.to_device(_random(DIMS, 6)), handle.empty(DIMS)
    lrn_forward(handle, LRNDesc("cross", 5, 1e-3, 0.75, 1.0), 1.0, t, xa, 0.0, t, ya)
    before = handle.cache_stats()["compiled"]
    other = LRNDesc("cross", 5, 0.5, 0.6, 2.0)
    lrn_forward(handle, other, 1.0, t, xa, 0.0, t, ya)
    assert handle.cache_stats()["compiled"] == before
    assert max_error(ya.get(), ref.lrn_forward(xa.get(), 1, 5, 0.5, 0.6, 2.0)[0]) <= TOLERANCE["FP32"]


# -- functional --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [5, 4])
def test_local_response_norm_is_pytorchs(handle, size):
    """PyTorch: div = avg over size channels (size // 2 before, zero padded) of x^2; x / (k + alpha div)^beta."""
    x, dy = _random(DIMS, 7), _random(DIMS, 8)
    xa = handle.to_device(x)
    padded = np.pad(x.astype(np.float64) ** 2, [(0, 0), (size // 2, (size - 1) // 2), (0, 0), (0, 0)])
    div = sum(padded[:, d:d + DIMS[1]] for d in range(size)) / size
    want = x / (K + ALPHA * div) ** BETA
    y, scale = local_response_norm(xa, size, ALPHA, BETA, K, return_scale=True)
    assert max_error(y.get(), want) <= TOLERANCE["FP32"]
    assert max_error(local_response_norm(xa, size, ALPHA, BETA, K).get(), want) <= TOLERANCE["FP32"]
    dx = local_response_norm_backward(handle.to_device(dy), xa, scale, size, ALPHA, BETA, K)
    expected = ref.lrn_backward(dy, x, ref.CROSS, size, ALPHA, BETA, K, pre=size // 2)
    assert max_error(dx.get(), expected) <= TOLERANCE["FP32"]


# -- bad input -----------------------------------------------------------------------------------------------------
class _Setup:
    def __init__(self, handle):
        self.desc, self.t = _desc(LRNMode.CROSS_CHANNEL, 5, None), TensorDesc("FP32", DIMS)
        self.x, self.dy = handle.to_device(_random(DIMS, 9)), handle.to_device(_random(DIMS, 10))
        self.y, self.dx = (handle.to_device(np.full(DIMS, np.nan, np.float32)) for _ in range(2))
        self.ws = handle.empty(DIMS)


def _fwd(h, s, **kw):
    args = dict(do_backward=True, workspace=s.ws) | kw
    return lrn_forward(h, s.desc, 1.0, s.t, s.x, 0.0, args.pop("y_desc", s.t), s.y, **args)


def _bwd(h, s, **kw):
    return lrn_backward(h, s.desc, 1.0, s.t, s.y, kw.pop("dy_desc", s.t), s.dy, s.t, s.x, 0.0, s.t, s.dx, **kw)


@pytest.mark.parametrize("field,call", [
    ("y_desc.dims", lambda h, s: _fwd(h, s, y_desc=TensorDesc("FP32", (2, 7, 5, 5)))),
    ("workspace", lambda h, s: _fwd(h, s, workspace=None)),
    ("workspace", lambda h, s: _fwd(h, s, workspace=h.empty((3,)))),
    ("y", lambda h, s: _fwd(h, s, workspace=s.y)),   # "y and workspace are the same buffer"
    ("lrn_desc", lambda h, s: lrn_forward(h, "cross", 1.0, s.t, s.x, 0.0, s.t, s.y)),
    ("dy_desc.dtype", lambda h, s: _bwd(h, s, dy_desc=TensorDesc("FP16", DIMS), workspace=s.ws)),
    ("workspace", lambda h, s: _bwd(h, s)),
    ("workspace", lambda h, s: _bwd(h, s, workspace=h.empty(DIMS))),
    ("workspace", lambda h, s: _bwd(h, s, workspace=7)),
    ("x", lambda h, s: local_response_norm(s.x.get(), 5)),
])
def test_bad_input_names_the_field_and_leaves_outputs(handle, field, call):
    s = _Setup(handle)
    with pytest.raises(BadParam) as info:
        call(handle, s)
    assert info.value.field == field
    handle.finish()
    assert np.isnan(s.y.get()).all() and np.isnan(s.dx.get()).all()


@pytest.mark.parametrize("field,kwargs", [("n", {"n": 0}), ("k", {"k": 0.0}), ("alpha", {"alpha": -1.0}),
                                          ("beta", {"beta": float("nan")}), ("pre", {"pre": 5}),
                                          ("mode", {"mode": "spatial"})])
def test_bad_descriptors_name_the_field(field, kwargs):
    args = {"mode": "cross", "n": 5, "alpha": 1e-4, "beta": 0.75, "k": 1.0} | kwargs
    with pytest.raises(BadParam) as info:
        LRNDesc(**args)
    assert info.value.field == field


def test_backward_after_its_forward_runs(handle):
    s = _Setup(handle)
    _fwd(handle, s)
    _bwd(handle, s, workspace=s.ws)
    assert not np.isnan(s.dx.get()).any()


def test_public_names():
    assert miopy.lrn.local_response_norm is local_response_norm
