"""Tensor operations: both OpTensor solvers on every op and dtype against float64 (alpha1, alpha2, beta;
MIOpen's broadcasting of B), SetTensor / ScaleTensor / TransformTensor on strided layouts, the functional
form, and refused input that leaves the output untouched."""
import numpy as np
import pyopencl as cl
import pytest

import miopy
from miopy import BadParam, TensorDesc
from miopy.accuracy import max_error
from miopy.plan import Plan, operands
from miopy.tensor import strided_view
from miopy.tensor_ops import (
    REGISTRY,
    TensorOp,
    TensorOpProblem,
    add,
    div,
    fill,
    maximum,
    minimum,
    mul,
    op_tensor,
    scale,
    scale_tensor,
    set_tensor,
    transform_tensor,
    transform_tensor_plan,
    unary_plan,
)
from miopy.tensor_ops import reference as ref

TOLERANCE = {"FP32": 1e-6, "FP16": 1e-3}
NHWC = lambda n, c, h, w: (h * w * c, 1, w * c, c)
SHAPES = [  # (a dims, b dims, a strides)
    ((2, 3, 4, 5), (2, 3, 4, 5), None),
    ((2, 3, 5, 3), (2, 3, 5, 3), None),            # 90 elements: not a multiple of 4
    ((2, 3, 4, 5), (1, 3, 1, 1), None),            # a per-channel bias
    ((2, 3, 4, 5), (2, 1, 4, 5), NHWC(2, 3, 4, 5)),
    ((2, 3, 4, 5), (1, 1, 1, 1), None),
]


def _host(desc: TensorDesc, rng) -> np.ndarray:
    return rng.standard_normal(desc.element_span).astype(desc.dtype.numpy)


def _run_solver(handle, solver, problem, params, host, scalars):
    mf = cl.mem_flags
    bufs = {r: cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a) for r, a in host.items()}
    plan = Plan(handle, solver.solution(problem, params), operands(problem.tensors(), problem.outputs()))
    plan.run_values(tuple(bufs[r] for r in ("a", "b", "c")), scalars={k: np.float32(v) for k, v in scalars.items()})
    out = np.empty_like(host["c"])
    cl.enqueue_copy(handle.queue, out, bufs["c"])
    handle.finish()
    return strided_view(out, problem.c.dims, problem.c.strides)


@pytest.mark.parametrize("solver", REGISTRY.ALL, ids=lambda s: s.id)
@pytest.mark.parametrize("dtype", ["FP32", "FP16"])
def test_op_tensor_solvers_match_float64(handle, solver, dtype):
    """Every op (division on its own solver), every grid point, every shape the solver applies to; beta 0 with
    c poisoned (never read, every element written) and beta != 0. The op is a run-time argument of the
    OpTensor kernels: one program per shape serves add, mul, min and max."""
    rng = np.random.default_rng(10 * (dtype == "FP16"))
    tested = 0
    for index, (a_dims, b_dims, strides) in enumerate(SHAPES):
        a = TensorDesc(dtype, a_dims, strides)
        for op, beta in zip(TensorOp, (0.0, -0.5, 0.0, 2.0, -1.5 * (index % 2)), strict=True):
            problem = TensorOpProblem.create(op, a, TensorDesc(dtype, b_dims), a)
            if not solver.is_applicable(problem, handle.info):
                continue
            for params in solver.search_space(problem, handle.info):
                host = {role: _host(desc, rng) for role, desc in problem.tensors().items()}
                if op is TensorOp.DIV:                                 # divisors away from 0: finite in FP16
                    host["b"] = np.copysign(0.5 + np.abs(host["b"]), host["b"]).astype(host["b"].dtype)
                if beta == 0.0:
                    host["c"][...] = np.nan
                got = _run_solver(handle, solver, problem, params, host, {"alpha1": 1.5, "alpha2": -0.75, "beta": beta})
                view = {r: strided_view(host[r], d.dims, d.strides) for r, d in problem.tensors().items()}
                want = ref.op_tensor(int(op), view["a"], view["b"], view["c"], 1.5, -0.75, beta)
                assert max_error(got, want) <= TOLERANCE[dtype], (solver.id, params, problem.key())
                tested += 1
    assert tested >= (len(SHAPES) if solver.id == "OpTensorDivide" else 8), f"{solver.id} applies to too few shapes"


def test_packed_solver_is_chosen_where_it_applies(handle):
    a = TensorDesc("FP32", (2, 3, 4, 5))
    same = TensorOpProblem.create("add", a, a, a)
    bias = TensorOpProblem.create("add", a, TensorDesc("FP32", (1, 3, 1, 1)), a)
    divide = TensorOpProblem.create("div", a, a, a)
    pick = lambda p: [s.id for s in REGISTRY.ALL if s.is_applicable(p, handle.info)]
    assert (pick(same)[0], pick(bias)[0], pick(divide)) == ("OpTensorPacked", "OpTensorGeneric", ["OpTensorDivide"])


def test_division_by_zero_is_ieee(handle):
    """a / 0 is +-inf and 0 / 0 NaN, as NumPy and ONNX give (the plan through op_tensor, in place on a)."""
    d = TensorDesc("FP32", (1, 4, 1, 1))
    a = handle.to_device(np.array([1.0, -2.0, 0.0, 3.0], np.float32).reshape(d.dims))
    b = handle.to_device(np.array([0.0, 0.0, 0.0, -4.0], np.float32).reshape(d.dims))
    op_tensor(handle, TensorOp.DIV, 1.0, d, a, 2.0, d, b, 0.0, d, a)
    got = a.get().ravel()
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2]) and got[3] == -0.375


def test_api_in_place_bias_add(handle):
    rng = np.random.default_rng(1)
    xd, bd = TensorDesc("FP32", (2, 4, 3, 3)), TensorDesc("FP32", (1, 4, 1, 1))
    x, b = rng.standard_normal(xd.dims).astype(np.float32), rng.standard_normal(bd.dims).astype(np.float32)
    xa = handle.to_device(x)
    op_tensor(handle, TensorOp.ADD, 1.0, xd, xa, 2.0, bd, handle.to_device(b), 0.0, xd, xa)
    assert max_error(xa.get(), x + 2.0 * b) <= 1e-6


BAD = {  # field: (a dims, b dims, c dims, b dtype)
    "b_desc.dims": ((2, 3, 4, 5), (2, 3, 2, 5), (2, 3, 4, 5), "FP32"),
    "c_desc.dims": ((2, 3, 4, 5), (1, 3, 1, 1), (2, 3, 4, 4), "FP32"),
    "b_desc.dtype": ((2, 3, 4, 5), (1, 3, 1, 1), (2, 3, 4, 5), "FP16"),
}


@pytest.mark.parametrize("field", BAD)
def test_refused_descriptors_name_the_field(handle, field):
    a_dims, b_dims, c_dims, b_dtype = BAD[field]
    a, b, c = TensorDesc("FP32", a_dims), TensorDesc(b_dtype, b_dims), TensorDesc("FP32", c_dims)
    ca = handle.to_device(np.full(c_dims, 7.0, np.float32))
    with pytest.raises(BadParam) as info:
        op_tensor(handle, "max", 1, a, handle.empty(a_dims), 1, b, handle.empty(b_dims, b.dtype.numpy), 0, c, ca)
    assert info.value.field == field
    assert np.all(ca.get() == 7.0)


def test_refused_buffers_and_aliases_touch_nothing(handle):
    a, b = TensorDesc("FP32", (2, 3, 4, 5)), TensorDesc("FP32", (1, 3, 1, 1))
    ca, ba = handle.to_device(np.full(a.dims, 7.0, np.float32)), handle.to_device(np.ones(b.dims, np.float32))
    with pytest.raises(BadParam) as info:
        op_tensor(handle, "add", 1, a, handle.empty((5,)), 1, b, ba, 0, a, ca)
    assert info.value.field == "a"
    with pytest.raises(BadParam) as info:
        op_tensor(handle, "add", 1, a, ca, 1, b, ba, 0, a, ba)         # c is b, whose descriptor differs
    assert info.value.field == "c"
    with pytest.raises(BadParam) as info:
        op_tensor(handle, "add", float("inf"), a, ca, 1, b, ba, 0, a, ca)
    assert info.value.field == "alpha1"
    with pytest.raises(BadParam) as info:
        op_tensor(handle, "pow", 1, a, ca, 1, b, ba, 0, a, ca)
    assert info.value.field == "tensor_op"
    assert np.all(ca.get() == 7.0)


@pytest.mark.parametrize("dtype", ["FP32", "FP16"])
def test_set_and_scale_touch_only_addressed_elements(handle, dtype):
    dims, strides = (2, 3, 4, 5), (3 * 4 * 8, 4 * 8, 8, 1)            # rows padded from 5 to 8
    desc = TensorDesc(dtype, dims, strides)
    rng = np.random.default_rng(2)
    host = rng.standard_normal(desc.element_span + 3).astype(desc.dtype.numpy)
    buf = handle.to_device(host)
    scale_tensor(handle, desc, buf, -2.5)
    got = buf.get()
    view = lambda a: strided_view(a, dims, strides)
    assert max_error(view(got), -2.5 * view(host).astype(np.float64)) <= TOLERANCE[dtype]
    mask = np.ones(host.size, bool)
    view(mask)[...] = False
    assert np.array_equal(got[mask], host[mask])                      # the padding is untouched
    set_tensor(handle, desc, buf, 0.25)
    got = buf.get()
    assert np.all(view(got) == 0.25) and np.array_equal(got[mask], host[mask])


def test_transform_between_layouts(handle):
    dims = (2, 3, 4, 5)
    x_desc, y_desc = TensorDesc("FP32", dims), TensorDesc("FP32", dims, NHWC(*dims))
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(dims).astype(np.float32), rng.standard_normal(y_desc.element_span).astype(np.float32)
    ya = handle.to_device(y)
    transform_tensor(handle, 2.0, x_desc, handle.to_device(x), 0.5, y_desc, ya)
    want = ref.transform_tensor(x, strided_view(y, dims, y_desc.strides), 2.0, 0.5)
    assert max_error(strided_view(ya.get(), dims, y_desc.strides), want) <= 1e-6
    with pytest.raises(BadParam) as info:
        transform_tensor(handle, 1, x_desc, ya, 0, TensorDesc("FP32", (2, 3, 4, 4)), ya)
    assert info.value.field == "y_desc.dims"


# -- functional -----------------------------------------------------------------------------------------------
def test_functional_broadcasts_like_numpy_where_opentensor_can(handle):
    rng = np.random.default_rng(4)
    x, b = rng.standard_normal((2, 3, 4, 5)).astype(np.float32), rng.standard_normal((3, 1, 1)).astype(np.float32)
    xa, ba = handle.to_device(x), handle.to_device(b)
    for got, want in ((add(xa, ba, alpha=0.5), x + 0.5 * b), (add(ba, xa, alpha=0.5), b + 0.5 * x),
                      (mul(ba, xa), b * x), (minimum(xa, ba), np.minimum(x, b)), (maximum(ba, xa), np.maximum(x, b)),
                      (div(xa, ba), x.astype(np.float64) / b)):
        assert got.shape == want.shape and max_error(got.get(), want) <= 1e-6
    with pytest.raises(BadParam) as info:
        add(handle.to_device(np.ones((3, 1), np.float32)), handle.to_device(np.ones((1, 4), np.float32)))
    assert info.value.field == "other"
    with pytest.raises(BadParam, match="div broadcasts other over input") as info:
        div(ba, xa)                                                    # b / x would need b expanded
    assert info.value.field == "other"


def test_functional_fill_and_scale_in_place(handle):
    xa = handle.to_device(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert scale(xa, 0.5) is xa and np.array_equal(xa.get(), np.arange(24).reshape(2, 3, 4) * 0.5)
    assert fill(xa, 3.0) is xa and np.all(xa.get() == 3.0)


def test_warm_call_compiles_nothing(handle):
    xa = handle.to_device(np.ones((4, 6), np.float32))
    add(xa, xa, alpha=2.0)
    before = handle.cache_stats()["compiled"]
    assert np.all(add(xa, xa, alpha=-1.0).get() == 0.0)
    assert handle.cache_stats()["compiled"] == before


def test_public_names():
    assert miopy.op_tensor is op_tensor and miopy.TensorOp is TensorOp


@pytest.mark.parametrize("flags", [["-o", "0", "-v", "3"], ["-o", "1", "-v", "-2"],
                                   ["-o", "2", "-A", "2", "-B", "0.5", "-G", "1", "-t", "1", "-i", "2"],
                                   ["-o", "5", "-b", "1,3,1,1", "-d", "FP16"]],
                         ids=["set", "scale", "add", "max-broadcast-fp16"])
def test_driver_tensorop_verifies(capsys, flags):
    from miopy.cli import driver
    assert driver.main(["tensorop", "-n", "2", "-c", "3", "-H", "4", "-W", "5", *flags]) == 0
    assert "Verifies OK" in capsys.readouterr().out


def test_driver_tensorop_refuses_a_broadcast_miopen_rejects(capsys):
    from miopy.cli import driver
    assert driver.main(["tensorop", "-n", "2", "-c", "3", "-H", "4", "-W", "5", "-o", "2", "-b", "2,3,2,5"]) == 1
    assert "b_desc.dims" in capsys.readouterr().err


# -- the layout-chosen kernels: flat (dense), tiled transpose, strided ----------------------------------------
NCWH = lambda n, c, h, w: (c * w * h, w * h, 1, h)
DENSE_CASES = [  # (dims, strides): element counts around the vector width and past one grid-stride step
    ((1, 1, 1, 3), None),                  # fewer elements than a vector: the tail alone
    ((2, 3, 5, 3), None),                  # 90: not a multiple of 4 (or 8)
    ((3, 5, 17, 19), None),                # 4845: several grid-stride steps and a tail
    ((2, 16, 9, 7), NHWC(2, 16, 9, 7)),    # dense but not packed: NHWC
]


@pytest.mark.parametrize("dtype", ["FP32", "FP16"])
@pytest.mark.parametrize("dims,strides", DENSE_CASES)
def test_set_and_scale_flat_on_dense_layouts(handle, dtype, dims, strides):
    desc = TensorDesc(dtype, dims, strides)
    assert unary_plan(handle, "set_tensor", desc).solver_id == "set_tensor_flat"
    assert unary_plan(handle, "scale_tensor", desc).solver_id == "scale_tensor_flat"
    rng = np.random.default_rng(5)
    host = np.concatenate([rng.standard_normal(desc.element_span), np.full(5, 7.0)]).astype(desc.dtype.numpy)
    buf = handle.to_device(host)
    scale_tensor(handle, desc, buf, -2.5)
    got = buf.get()
    assert max_error(got[:-5], -2.5 * host[:-5].astype(np.float64)) <= TOLERANCE[dtype]
    assert np.all(got[-5:] == 7.0)                                     # past the tensor: untouched
    buf = handle.to_device(np.full_like(host, np.nan))
    set_tensor(handle, desc, buf, 0.25)
    got = buf.get()
    assert np.all(got[:-5] == 0.25) and np.all(np.isnan(got[-5:]))


def _transform_case(handle, dtype, dims, x_strides, y_strides, alpha, beta, rng):
    x_desc, y_desc = TensorDesc(dtype, dims, x_strides), TensorDesc(dtype, dims, y_strides)
    x = rng.standard_normal(x_desc.element_span).astype(x_desc.dtype.numpy)
    y = rng.standard_normal(y_desc.element_span + 4).astype(y_desc.dtype.numpy)
    if beta == 0:
        y[:] = np.nan                                                  # never read, every addressed element written
    ya = handle.to_device(y)
    transform_tensor(handle, alpha, x_desc, handle.to_device(x), beta, y_desc, ya)
    got = ya.get()
    view = lambda a: strided_view(a, dims, y_desc.strides)
    want = ref.transform_tensor(strided_view(x, dims, x_desc.strides), view(y), alpha, beta)
    assert max_error(view(got), want) <= TOLERANCE[dtype]
    mask = np.ones(y.size, bool)
    view(mask)[...] = False
    assert np.array_equal(got[mask], y[mask], equal_nan=True)          # elements y_desc does not address
    return transform_tensor_plan(handle, x_desc, y_desc).solver_id


TRANSFORMS = [  # (dims, x strides, y strides, the kernel chosen)
    ((2, 32, 7, 9), None, NHWC(2, 32, 7, 9), "TransformTensorTiled"),         # NCHW -> NHWC, partial tiles
    ((3, 20, 5, 7), NHWC(3, 20, 5, 7), None, "TransformTensorTiled"),         # NHWC -> NCHW
    ((2, 17, 3, 20), (17 * 3 * 22, 3 * 22, 22, 1), NHWC(2, 17, 3, 20), "TransformTensorTiled"),  # padded rows
    ((2, 3, 17, 18), None, NCWH(2, 3, 17, 18), "TransformTensorTiled"),       # N and C merged into one batch
    ((2, 3, 4, 5), None, NHWC(2, 3, 4, 5), "TransformTensor"),                # C = 3: too narrow to tile
    ((2, 16, 9, 7), NHWC(2, 16, 9, 7), NHWC(2, 16, 9, 7), "TransformTensorFlat"),
    ((3, 5, 17, 19), None, None, "TransformTensorFlat"),
    ((2, 3, 4, 5), (3 * 4 * 8, 4 * 8, 8, 1), None, "TransformTensor"),        # padded to packed: strided
]


@pytest.mark.parametrize("dtype", ["FP32", "FP16"])
@pytest.mark.parametrize("dims,x_strides,y_strides,kernel", TRANSFORMS)
def test_transform_kernels_match_float64(handle, dtype, dims, x_strides, y_strides, kernel):
    rng = np.random.default_rng(6)
    for alpha, beta in ((1.0, 0.0), (2.0, -0.5)):
        assert _transform_case(handle, dtype, dims, x_strides, y_strides, alpha, beta, rng) == kernel


def test_transform_flat_in_place(handle):
    desc = TensorDesc("FP32", (2, 3, 5, 3))
    x = np.random.default_rng(7).standard_normal(desc.dims).astype(np.float32)
    xa = handle.to_device(x)
    transform_tensor(handle, 2.0, desc, xa, 0.5, desc, xa)
    assert max_error(xa.get(), 2.5 * x.astype(np.float64)) <= 1e-6
