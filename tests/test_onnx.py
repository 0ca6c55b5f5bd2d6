"""The ONNX runner against onnxruntime: every supported operator and attribute combination on small graphs,
fusions and folds, device-resident I/O, buffer planning, and the load-time errors."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from miopy import BadParam, MiopyError  # noqa: E402
from miopy.onnx import InferenceSession, InvalidModel, UnsupportedOperator  # noqa: E402
from miopy.onnx.graph import Node  # noqa: E402
from miopy.onnx.memory import plan_memory  # noqa: E402
from miopy.onnx.session import residual_fusion_available  # noqa: E402
from tests.onnx_models import TOLERANCE, GraphMaker, hybrid_error, onnxruntime_outputs, random_feeds  # noqa: E402

X = (2, 4, 9, 8)


def check(handle, model, feeds=None, tolerance=TOLERANCE, **kwargs) -> InferenceSession:
    """Run model on miopy and onnxruntime; every output must agree at the hybrid tolerance."""
    feeds = feeds or random_feeds(model)
    expected = onnxruntime_outputs(model, feeds)
    session = InferenceSession(model, handle, **kwargs)
    got = session.run(None, feeds)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert hybrid_error(g, e) <= tolerance
    return session


def single(op: str, attrs: dict, extra=(), shape=X):
    g = GraphMaker()
    y = g.node(op, ["x", *extra(g)] if callable(extra) else ["x", *extra], **attrs)
    return g.model({"x": shape}, [y])


# -- convolution ---------------------------------------------------------------------------------------------
CONV_CASES = {
    "plain": dict(),
    "pads-uneven": dict(pads=[1, 0, 2, 1]),
    "strided-uneven": dict(strides=[2, 1], pads=[0, 1, 1, 0]),
    "dilated": dict(dilations=[2, 1], pads=[2, 1, 2, 1]),
    "same-upper-s2": dict(auto_pad="SAME_UPPER", strides=[2, 2]),
    "same-lower-s2": dict(auto_pad="SAME_LOWER", strides=[2, 2]),
    "valid": dict(auto_pad="VALID"),
    "grouped": dict(group=2, pads=[1, 1, 1, 1]),
    "depthwise": dict(group=4, pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
    "no-bias": dict(bias=False, pads=[1, 1, 1, 1]),
    "1x1-strided": dict(r=1, strides=[2, 2]),
}


@pytest.mark.parametrize("case", CONV_CASES, ids=list(CONV_CASES))
def test_conv(handle, case):
    attrs = dict(CONV_CASES[case])
    r, bias = attrs.pop("r", 3), attrs.pop("bias", True)
    k = 4 if attrs.get("group", 1) == 4 else 6
    g = GraphMaker()
    y = g.conv("x", 4, k, r, bias, **attrs)
    check(handle, g.model({"x": X}, [y]))


ACTIVATIONS = {
    "Relu": ({}, ()), "LeakyRelu": ({"alpha": 0.2}, ()), "Sigmoid": ({}, ()), "Tanh": ({}, ()),
    "HardSwish": ({}, ()), "Clip-relu6": ({}, (0.0, 6.0)), "Clip-min0": ({}, (0.0, None)),
    "Clip-range": ({}, (-0.5, 1.5)), "Clip-max-only": ({}, (None, 0.7)), "Clip-min-only": ({}, (-1.0,)),
    "Clip-none": ({}, ()),
}


def _activation(g: GraphMaker, name: str, x: str) -> str:
    attrs, bounds = ACTIVATIONS[name]
    op = name.split("-")[0]
    inputs = [x] + [g.const(np.float32(b)) if b is not None else "" for b in bounds]
    while inputs and inputs[-1] == "":
        inputs.pop()
    return g.node(op, inputs, **attrs)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_conv_bn_activation_fuse_into_one_kernel(handle, name):
    g = GraphMaker()
    y = _activation(g, name, g.bn(g.conv("x", 4, 6, pads=[1, 1, 1, 1]), 6))
    session = check(handle, g.model({"x": X}, [y]))
    assert len(session.steps) == 1 and "BatchNormalization" in session.layers()[0][1]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_standalone_activations(handle, name):
    g = GraphMaker()
    y = _activation(g, name, "x")
    check(handle, g.model({"x": X}, [y]), {"x": (3 * np.random.default_rng(2).standard_normal(X)).astype(np.float32)})


def test_constant_affine_ops_fold_into_the_convolution(handle):
    """Mul / Add / Div / Sub by per-channel or scalar constants after a convolution: its weights and bias."""
    g = GraphMaker()
    y = g.node("Mul", [g.conv("x", 4, 6, pads=[1, 1, 1, 1]), g.weight(1, 6, 1, 1)])
    y = g.node("Add", [g.weight(6, 1, 1), y])
    y = g.node("Div", [y, g.const(np.float32(1.7))])
    y = g.node("Relu", [g.node("Sub", [y, g.weight(1, 6, 1, 1)])])
    session = check(handle, g.model({"x": X}, [y]))
    assert [layer[1] for layer in session.layers()] == ["Conv+Mul+Add+Div+Sub+Relu"]


def test_zero_pad_folds_into_the_convolution(handle):
    g = GraphMaker()
    p = g.node("Pad", ["x", g.const(np.array([0, 0, 1, 2, 0, 0, 2, 0], np.int64))])
    y = g.conv(p, 4, 6, bias=False)
    session = check(handle, g.model({"x": X}, [y]))
    assert [layer[1] for layer in session.layers()] == ["Conv+Pad"]


@pytest.mark.parametrize("mode,pads,value", [("constant", [0, 1, 1, 2, 1, 0, 2, 1], 0.5),
                                             ("reflect", [0, 0, 2, 1, 0, 0, 1, 3], None),
                                             ("edge", [0, 0, 1, 0, 0, 0, 2, 2], None),
                                             ("constant", [0, 0, -1, 2, 0, 0, 1, -2], None)])
def test_pad(handle, mode, pads, value):
    g = GraphMaker()
    inputs = ["x", g.const(np.array(pads, np.int64))] + ([g.const(np.float32(value))] if value is not None else [])
    check(handle, g.model({"x": X}, [g.node("Pad", inputs, mode=mode)]))


CONV_TRANSPOSE_CASES = {
    "strided": dict(strides=[2, 2], pads=[1, 1, 1, 1]),
    "output-padding": dict(strides=[2, 3], output_padding=[1, 2]),
    "uneven-pads": dict(strides=[2, 1], pads=[0, 1, 1, 0]),
    "grouped-dilated": dict(group=2, dilations=[2, 1]),
    "output-shape": dict(strides=[2, 2], output_shape=[17, 16]),
    "same-upper": dict(strides=[2, 2], auto_pad="SAME_UPPER"),
}


@pytest.mark.parametrize("case", CONV_TRANSPOSE_CASES, ids=list(CONV_TRANSPOSE_CASES))
def test_conv_transpose(handle, case):
    attrs = CONV_TRANSPOSE_CASES[case]
    g = GraphMaker()
    group = attrs.get("group", 1)
    y = g.node("ConvTranspose", ["x", g.weight(4, 6 // group, 3, 3, scale=0.3), g.weight(6)], **attrs)
    check(handle, g.model({"x": X}, [g.node("Relu", [y])]))


# -- pooling -------------------------------------------------------------------------------------------------------
POOL_CASES = {
    "max-2x2": ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2])),
    "max-3x3-s2-pads": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    "max-uneven-pads": ("MaxPool", dict(kernel_shape=[3, 2], strides=[1, 2], pads=[0, 1, 2, 0])),
    "max-ceil": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    "max-same-upper": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
    "avg-exclude-pad": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    "avg-include-pad": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 1], pads=[1, 0, 1, 2],
                                            count_include_pad=1)),
    "avg-ceil-same-lower": ("AveragePool", dict(kernel_shape=[2, 3], strides=[2, 2], auto_pad="SAME_LOWER")),
    "avg-ceil-pads": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 0, 1], ceil_mode=1)),
    "avg-ceil-include-pad": ("AveragePool", dict(kernel_shape=[3, 2], strides=[2, 3], pads=[1, 1, 1, 0], ceil_mode=1,
                                                 count_include_pad=1)),
    "global-avg": ("GlobalAveragePool", {}),
    "global-max": ("GlobalMaxPool", {}),
}


@pytest.mark.parametrize("case", POOL_CASES, ids=list(POOL_CASES))
def test_pooling(handle, case):
    op, attrs = POOL_CASES[case]
    check(handle, single(op, attrs))


# -- matrix products and views ----------------------------------------------------------------------------------
@pytest.mark.parametrize("trans_b,c_shape,alpha,beta", [(1, (5,), 1.0, 1.0), (0, (1, 5), 0.5, 2.0), (1, (), 1.0, 0.5),
                                                        (0, None, 1.0, 1.0)])
def test_flatten_gemm(handle, trans_b, c_shape, alpha, beta):
    g = GraphMaker()
    f = g.node("Flatten", ["x"], axis=1)
    k = int(np.prod(X[1:]))
    b = g.weight(5, k) if trans_b else g.weight(k, 5)
    c = [g.weight(*c_shape)] if c_shape is not None else []
    y = g.node("Gemm", [f, b, *c], transB=trans_b, alpha=alpha, beta=beta)
    session = check(handle, g.model({"x": X}, [g.node("Relu", [y])]))
    assert [layer[1] for layer in session.layers()] == ["Gemm+Relu"]


@pytest.mark.parametrize("trans_a,trans_b,c_shape,layers", [
    (1, 0, (4,), ["Transpose", "Gemm+Relu"]),                 # A^T: a layout copy, then the 1x1 convolution
    (1, 1, (5, 4), ["Transpose", "Gemm", "Add", "Relu"]),     # C a full matrix: an Add after it
    (0, 1, (5, 1), ["Gemm", "Add", "Relu"]),                  # C a column: broadcast along the row
])
def test_gemm_trans_a_and_matrix_c(handle, trans_a, trans_b, c_shape, layers):
    g = GraphMaker(17)
    b = g.weight(4, 6) if trans_b else g.weight(6, 4)
    y = g.node("Gemm", ["a", b, g.weight(*c_shape)], transA=trans_a, transB=trans_b, alpha=0.7, beta=1.3)
    session = check(handle, g.model({"a": (6, 5) if trans_a else (5, 6)}, [g.node("Relu", [y])]))
    assert [layer[1] for layer in session.layers()] == layers


def test_matmul_on_rows(handle):
    """MatMul of a rank-4 A by a constant, then a bias along its last axis (folded) and a per-row scale
    along axis 1 (not a channel of the product: runs as its own op, so it must not fold)."""
    g = GraphMaker()
    y = g.node("Add", [g.node("MatMul", ["x", g.weight(8, 3)]), g.weight(3)])
    session = check(handle, g.model({"x": X}, [g.node("Relu", [y])]))
    assert [layer[1] for layer in session.layers()] == ["MatMul+Add+Relu"]
    g = GraphMaker()
    y = g.node("Mul", [g.node("MatMul", ["x", g.weight(8, 3)]), g.weight(1, 4, 1, 1)])
    session = check(handle, g.model({"x": X}, [y]))
    assert [layer[1] for layer in session.layers()] == ["MatMul", "Mul"]


def test_views_and_layout(handle):
    """Reshape (0 and -1), Transpose, Squeeze / Unsqueeze, Identity, Dropout and Flatten(-1), chained."""
    g = GraphMaker()
    r = g.node("Reshape", ["x", g.const(np.array([0, 0, -1], np.int64))])            # (2, 4, 72)
    t = g.node("Transpose", [r], perm=[0, 2, 1])                                        # (2, 72, 4)
    u = g.node("Unsqueeze", [t, g.const(np.array([1], np.int64))])                      # (2, 1, 72, 4)
    s = g.node("Squeeze", [u, g.const(np.array([1], np.int64))])
    i = g.node("Identity", [s])
    d = g.node("Dropout", [i])
    f = g.node("Flatten", [d], axis=-1)
    f = g.node("Reshape", [f, g.const(np.array([6, -1, 8], np.int64))], allowzero=1)  # no 0: as allowzero=0
    t2 = g.node("Transpose", ["x"], perm=[3, 1, 0, 2])
    check(handle, g.model({"x": X}, [f, g.node("Relu", [t2])]))


@pytest.mark.parametrize("axis", [1, 2, -1])
def test_concat(handle, axis):
    g = GraphMaker()
    a = g.node("Relu", ["x"])
    b = g.conv("x", 4, 4, pads=[1, 1, 1, 1])
    y = g.node("Concat", [a, b, "x"], axis=axis)
    check(handle, g.model({"x": X}, [y]))


# -- element-wise arithmetic and softmax on run-time tensors -------------------------------------------------------
BINARY_CASES = {   # (shape of a, shape of b; "c:" a constant); the output broadcasts both, NumPy's way
    "same": (X, X),
    "b-per-channel": (X, (1, 4, 1, 1)),
    "a-per-channel": ((4, 1, 1), X),                # Add, Mul, Sub swap their operands; Div expands a
    "both-broadcast": ((2, 1, 9, 8), (1, 4, 1, 1)),  # a expanded into the output, then in place
    "rank2-row": ((6, 5), (5,)),
    "rank3-columns": ((1, 9, 1), (4, 1, 8)),
    "constant-a": ("c:4,1,1", X),                    # Div: a broadcast on the host at load time
    "constant-scalar-b": (X, "c:"),
}


@pytest.mark.parametrize("case", BINARY_CASES, ids=list(BINARY_CASES))
def test_add_sub_mul_div_broadcast_like_numpy(handle, case):
    """Each case runs Add, Sub, Mul and Div in one model (one session) against onnxruntime."""
    g = GraphMaker(7)
    inputs, names = {}, []
    for name, shape in zip("ab", BINARY_CASES[case]):
        if isinstance(shape, str):
            dims = [int(d) for d in shape[2:].split(",") if d]
            names.append(g.weight(*dims, positive=True) if dims else g.const(np.float32(1.3)))
        else:
            inputs[name] = shape
            names.append(name)
    rng = np.random.default_rng(8)
    feeds = {n: rng.standard_normal(shape).astype(np.float32) for n, shape in inputs.items()}
    if "b" in feeds:   # divisors away from 0
        feeds["b"] = np.copysign(0.25 + np.abs(feeds["b"]), feeds["b"]).astype(np.float32)
    outs = [g.node(op, names) for op in ("Add", "Sub", "Mul", "Div")]
    session = check(handle, g.model(inputs, outs), feeds)
    assert [layer[1] for layer in session.layers()] == ["Add", "Sub", "Mul", "Div"]


def test_residual_add_overwrites_a_dying_input(handle):
    """relu(x) dies at the Add that reads it: the sum takes its slot (OpTensor with c = a); the softmax of the
    sum then overwrites that slot too."""
    g = GraphMaker()
    r = g.node("Relu", ["x"])
    s = g.node("Add", [r, "x"])
    y = g.node("Softmax", [s], axis=1)
    session = check(handle, g.model({"x": X}, [y]))
    plan = session.memory_plan
    assert plan.slot(s) == plan.slot(r) == plan.slot(y) != plan.slot("x")


@pytest.mark.parametrize("axis,shape", [(1, X), (-1, X), (2, X), (-1, (6, 10))])
def test_softmax_and_log_softmax(handle, axis, shape):
    g = GraphMaker()
    y = g.node("Softmax", ["x"], axis=axis)
    z = g.node("LogSoftmax", ["x"], axis=axis)
    feeds = {"x": (4 * np.random.default_rng(9).standard_normal(shape)).astype(np.float32)}
    session = check(handle, g.model({"x": shape}, [y, z]), feeds)
    assert [layer[1] for layer in session.layers()] == ["Softmax", "LogSoftmax"]


LRN_CASES = {   # ONNX's LRN: y = x / (bias + alpha / size * sum of x^2 over size channels)^beta
    "alexnet": dict(size=5, alpha=1e-4, beta=0.75, bias=2.0),
    "strong": dict(size=3, alpha=0.9, beta=0.6, bias=1.5),
    "defaults-3": dict(size=3),
    "wider-than-c": dict(size=7, alpha=2.0, beta=1.3, bias=0.5),
    "size-1": dict(size=1, alpha=3.0, beta=0.5, bias=1.0),
}


@pytest.mark.parametrize("case", LRN_CASES, ids=list(LRN_CASES))
def test_lrn(handle, case):
    """LRN on the LRN family's cross-channel mode, standalone and after a fused conv + relu, against
    onnxruntime (inputs scaled up so the normalisation is far from the identity)."""
    g = GraphMaker(14)
    a = g.node("LRN", ["x"], **LRN_CASES[case])
    b = g.node("LRN", [g.node("Relu", [g.conv("x", 4, 6, pads=[1, 1, 1, 1])])], **LRN_CASES[case])
    feeds = {"x": (3 * np.random.default_rng(15).standard_normal(X)).astype(np.float32)}
    session = check(handle, g.model({"x": X}, [a, b]), feeds)
    assert [layer[1] for layer in session.layers()] == ["LRN", "Conv+Relu", "LRN"]


def _lrn_spec(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """ONNX's LRN definition in float64 (onnxruntime refuses even sizes, which the specification allows):
    channels c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2)."""
    x = x.astype(np.float64)
    square_sum = np.zeros_like(x)
    for c in range(x.shape[1]):
        lo, hi = max(0, c - (size - 1) // 2), min(x.shape[1] - 1, c + size // 2)
        square_sum[:, c] = (x[:, lo:hi + 1] ** 2).sum(axis=1)
    return x / (bias + alpha / size * square_sum) ** beta


@pytest.mark.parametrize("size", [2, 4])
def test_lrn_even_size_follows_the_specification(handle, size):
    attrs = dict(size=size, alpha=0.8, beta=0.7, bias=1.2)
    g = GraphMaker()
    model = g.model({"x": X}, [g.node("LRN", ["x"], **attrs)])
    x = (3 * np.random.default_rng(16).standard_normal(X)).astype(np.float32)
    got = InferenceSession(model, handle).run(None, {"x": x})[0]
    assert hybrid_error(got, _lrn_spec(x, **attrs)) <= TOLERANCE
    odd, h = attrs | {"size": size + 1}, GraphMaker()      # the specification's formula is onnxruntime's
    model = h.model({"x": X}, [h.node("LRN", ["x"], **odd)])
    assert hybrid_error(onnxruntime_outputs(model, {"x": x})[0], _lrn_spec(x, **odd)) <= 1e-5


def test_standalone_batchnorm(handle):
    g = GraphMaker()
    check(handle, g.model({"x": X}, [g.bn("x", 4)]))


def test_shape_arithmetic_folds(handle):
    """x.view(x.size(0), -1) as exporters write it: Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    g = GraphMaker()
    shape = g.node("Shape", ["x"])
    n = g.node("Gather", [shape, g.const(np.array(0, np.int64))], axis=0)
    n1 = g.node("Unsqueeze", [n, g.const(np.array([0], np.int64))])
    target = g.node("Concat", [n1, g.const(np.array([-1], np.int64))], axis=0)
    y = g.node("Reshape", [g.node("Relu", ["x"]), target])
    session = check(handle, g.model({"x": X}, [y]))
    assert [layer[1] for layer in session.layers()] == ["Relu"]


# -- small real architectures ----------------------------------------------------------------------------------------
def test_inception_and_depthwise_blocks(handle):
    """A stem with GoogLeNet's LRN, an Inception-style block (1x1, 3x3 and 5x5 branches and a pooled branch,
    concatenated), a MobileNet-style depthwise-separable block with ReLU6, global pooling and a classifier."""
    g = GraphMaker(5)
    stem = g.node("MaxPool", [g.node("Relu", [g.bn(g.conv("x", 3, 8, pads=[1, 1, 1, 1], strides=[2, 2]), 8)])],
                  kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    stem = g.node("LRN", [stem], size=5, alpha=0.5, beta=0.75, bias=1.0)
    b1 = g.node("Relu", [g.conv(stem, 8, 4, r=1)])
    b2 = g.node("Relu", [g.conv(g.node("Relu", [g.conv(stem, 8, 4, r=1)]), 4, 6, pads=[1, 1, 1, 1])])
    b3 = g.node("Relu", [g.conv(g.node("Relu", [g.conv(stem, 8, 2, r=1)]), 2, 4, r=5, pads=[2, 2, 2, 2])])
    b4 = g.node("Relu", [g.conv(g.node("MaxPool", [stem], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), 8, 2, r=1)])
    cat = g.node("Concat", [b1, b2, b3, b4], axis=1)                                    # 16 channels
    relu6 = [g.const(np.float32(0)), g.const(np.float32(6))]
    dw = g.node("Clip", [g.bn(g.conv(cat, 16, 16, group=16, pads=[1, 1, 1, 1], bias=False), 16), *relu6])
    pw = g.node("Clip", [g.bn(g.conv(dw, 16, 24, r=1, bias=False), 24), *relu6])
    pooled = g.node("Flatten", [g.node("GlobalAveragePool", [pw])])
    y = g.node("Gemm", [pooled, g.weight(10, 24), g.weight(10)], transB=1)
    session = check(handle, g.model({"x": (2, 3, 30, 30)}, [y]))
    assert len(session.steps) == 15 and session.memory.slots < len(session.memory_plan.root_of)


def _basic_block(g: GraphMaker, x: str, c: int, k: int, stride: int) -> str:
    """ResNet's basic block: conv-bn-relu, conv-bn, plus the shortcut (a strided 1x1 conv-bn when the shape
    changes), relu."""
    y = g.bn(g.conv(g.node("Relu", [g.bn(g.conv(x, c, k, pads=[1] * 4, strides=[stride] * 2, bias=False), k)]),
                    k, k, pads=[1] * 4, bias=False), k)
    shortcut = x if stride == 1 and c == k else g.bn(g.conv(x, c, k, r=1, strides=[stride] * 2, bias=False), k)
    return g.node("Relu", [g.node("Add", [y, shortcut])])


def _residual_fused(session: InferenceSession) -> list[tuple[str, str]]:
    """(ops, solver) of the steps whose convolution kernel adds the residual (FUSE_ADD in its defines)."""
    out = []
    for step, (start, stop) in zip(session.steps, session._ranges):
        launches = [launch for runner, _ in session.sequence.steps[start:stop]
                    for launch in getattr(runner, "plan", runner).solution.launches]
        if any(dict(launch.spec.defines).get("FUSE_ADD") == "1" for launch in launches):
            out.append(("+".join([step.node.op, *step.node.fused.get("ops", ())]), step.solver))
    return out


def test_resnet_basic_blocks(handle):
    """A ResNet stem, two basic blocks (the second strided, with a projection shortcut), global pooling, a
    classifier and a softmax: each block's tail (conv + bn + Add + Relu) is one convolution kernel with the
    fusion epilogue's residual add, and its output takes the dying residual's slot."""
    assert residual_fusion_available()
    g = GraphMaker(6)
    stem = g.node("MaxPool", [g.node("Relu", [g.bn(g.conv("x", 3, 8, pads=[1, 1, 1, 1], strides=[2, 2]), 8)])],
                  kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    x = _basic_block(g, _basic_block(g, stem, 8, 8, 1), 8, 16, 2)
    y = g.node("Gemm", [g.node("Flatten", [g.node("GlobalAveragePool", [x])]), g.weight(10, 16), g.weight(10)],
               transB=1)
    session = check(handle, g.model({"x": (2, 3, 30, 30)}, [g.node("Softmax", [y], axis=1)]))
    ops = [layer[1] for layer in session.layers()]
    assert len(session.steps) == 10 and ops.count("Conv+BatchNormalization+Add+Relu") == 2
    assert not any(op in ("Add", "Relu") for op in ops)           # no standalone OpTensor or activation left
    assert [o for o, _ in _residual_fused(session)] == ["Conv+BatchNormalization+Add+Relu"] * 2
    assert len(session.sequence) == len(session.steps)           # one plan run per step, nothing in between
    for node in (s.node for s in session.steps if "residual" in s.node.fused):   # the residual dies there
        assert session.memory_plan.slot(node.outputs[0]) == session.memory_plan.slot(node.fused["residual"])


def _bottleneck(g: GraphMaker, x: str, c: int, mid: int, k: int, stride: int) -> str:
    """ResNet-50's bottleneck in torchvision's export order: the projection shortcut comes after the main
    branch, so the Add fuses into the shortcut's convolution (the main branch's output is its residual)."""
    y = g.node("Relu", [g.bn(g.conv(x, c, mid, r=1, bias=False), mid)])
    y = g.node("Relu", [g.bn(g.conv(y, mid, mid, pads=[1] * 4, strides=[stride] * 2, bias=False), mid)])
    y = g.bn(g.conv(y, mid, k, r=1, bias=False), k)
    shortcut = x if stride == 1 and c == k else g.bn(g.conv(x, c, k, r=1, strides=[stride] * 2, bias=False), k)
    return g.node("Relu", [g.node("Add", [y, shortcut])])


def test_resnet_bottleneck_blocks(handle):
    """Two bottleneck blocks (projection, then identity): both Adds run in a convolution's epilogue."""
    g = GraphMaker(11)
    x = _bottleneck(g, _bottleneck(g, "x", 8, 4, 16, 2), 16, 4, 16, 1)
    session = check(handle, g.model({"x": (2, 8, 10, 10)}, [x]))
    fused = _residual_fused(session)
    assert len(session.steps) == 7 and len(fused) == 2 and len(session.sequence) == 7
    shortcut = session.steps[3].node                               # the projection, after the main branch
    assert shortcut.inputs[0] == "x" and shortcut.fused["residual"] == session.steps[2].node.outputs[0]
    assert session.memory_plan.slot(shortcut.outputs[0]) == session.memory_plan.slot(shortcut.fused["residual"])


def test_mobilenet_v2_inverted_residual(handle):
    """MobileNetV2's block: 1x1 expansion + ReLU6, depthwise 3x3 + ReLU6, linear 1x1 projection, plus the
    block input (no activation after the Add): the projection adds the residual in its epilogue."""
    g = GraphMaker(19)
    relu6 = [g.const(np.float32(0)), g.const(np.float32(6))]
    y = g.node("Clip", [g.bn(g.conv("x", 4, 12, r=1, bias=False), 12), *relu6])
    y = g.node("Clip", [g.bn(g.conv(y, 12, 12, group=12, pads=[1] * 4, bias=False), 12), *relu6])
    y = g.node("Add", ["x", g.bn(g.conv(y, 12, 4, r=1, bias=False), 4)])
    session = check(handle, g.model({"x": X}, [g.node("GlobalAveragePool", [y])]))
    assert [o for o, _ in _residual_fused(session)] == ["Conv+BatchNormalization+Add"]
    assert len(session.steps) == 4


def test_residual_add_stays_apart_when_it_cannot_fuse(handle):
    """The convolution's output is also read elsewhere (here: a graph output), or the other addend
    broadcasts: the Add runs as OpTensor and the result still matches."""
    g = GraphMaker(12)
    c = g.conv("x", 4, 4, pads=[1, 1, 1, 1])
    y = g.node("Relu", [g.node("Add", [c, "x"])])
    session = check(handle, g.model({"x": X}, [y, c]))
    assert [layer[1] for layer in session.layers()] == ["Conv", "Add", "Relu"] and not _residual_fused(session)
    g = GraphMaker(13)
    z = g.node("GlobalAveragePool", ["x"])
    y = g.node("Relu", [g.node("Add", [g.conv("x", 4, 4, pads=[1, 1, 1, 1]), z])])
    session = check(handle, g.model({"x": X}, [y]))
    assert "Add" in [layer[1] for layer in session.layers()] and not _residual_fused(session)


# -- the session -------------------------------------------------------------------------------------------------
def _small_net() -> tuple:
    g = GraphMaker()
    y = g.node("Relu", [g.bn(g.conv("x", 4, 6, pads=[1, 1, 1, 1]), 6)])
    return g.model({"x": ["N", 4, 9, 8]}, [g.conv(y, 6, 3, 1)]), g


def test_batch_override_and_onnxruntime_interface(handle):
    model, _ = _small_net()
    session = check(handle, model, {"x": np.random.default_rng(3).standard_normal((3, 4, 9, 8)).astype(np.float32)},
                    batch=3)
    assert [(a.name, a.shape, a.type) for a in session.get_inputs()] == [("x", [3, 4, 9, 8], "tensor(float)")]
    assert session.get_outputs()[0].shape == [3, 3, 9, 8]
    with pytest.raises(InvalidModel, match="symbolic"):
        InferenceSession(model, handle)


def test_device_io_and_replay(handle):
    model, _ = _small_net()
    session = InferenceSession(model, handle, batch=2)
    rng = np.random.default_rng(4)
    first, second = (rng.standard_normal(X).astype(np.float32) for _ in range(2))
    expected = [onnxruntime_outputs(model, {"x": a})[0] for a in (first, second)]
    (y,) = session.run_device(None, {"x": handle.to_device(first)})
    assert hybrid_error(y.get(), expected[0]) <= TOLERANCE
    session.input_array("x").set(second)
    (y2,) = session.run_device()
    assert y2 is y and hybrid_error(y.get(), expected[1]) <= TOLERANCE
    assert hybrid_error(session.run(None, {"x": first})[0], expected[0]) <= TOLERANCE
    compiled = handle.cache_stats()["compiled"]
    for _ in range(3):
        session.run_device()
    assert handle.cache_stats()["compiled"] == compiled
    with pytest.raises(BadParam, match="shape"):
        session.run(None, {"x": first[:1]})
    with pytest.raises(BadParam, match="dtype"):
        session.run(None, {"x": first.astype(np.float64)})
    with pytest.raises(BadParam, match="no input"):
        session.run(None, {"y": first})


def test_profile_and_memory_report(handle):
    model, _ = _small_net()
    session = InferenceSession(model, handle, batch=2)
    times, total = session.profile(iters=2, warmup=1)
    assert len(times) == len(session.steps) == 2 and all(t > 0 for t in times) and total >= max(times)
    report = session.memory
    assert report.activations == 4 * (2 * 4 * 9 * 8 + 2 * 6 * 9 * 8 + 2 * 3 * 9 * 8)
    assert report.weights > 0 and report.total >= report.activations + report.weights


def _node(name: str, op: str, inputs: list[str], outputs: list[str]) -> Node:
    return Node(name, op, inputs, outputs, {})


def test_buffer_planning_reuses_dead_values():
    """x -> a -> b -> c -> d: a's slot is free again once b exists; views share; in-place reuses its input."""
    nodes = [_node("1", "Conv", ["x"], ["a"]), _node("2", "Conv", ["a"], ["b"]), _node("3", "Conv", ["b"], ["c"]),
             _node("4", "Flatten", ["c"], ["cf"]), _node("5", "Relu", ["cf"], ["d"]), _node("6", "Conv", ["d"], ["e"])]
    shapes = {name: (1, 8) for name in "xabcde"} | {"cf": (1, 8)}
    plan = plan_memory(nodes, shapes, ["x"], ["e"], 4, ("Flatten",), ("Relu",))
    assert plan.slot("c") == plan.slot("a") and plan.slot("cf") == plan.slot("c") == plan.slot("d")
    assert len({plan.slot(v) for v in "xabcde"}) == 3 and plan.peak_bytes == 3 * 32
    assert plan.slot("x") not in {plan.slot(v) for v in "abcde"}


@pytest.mark.parametrize("opset", [13, 18, 21])
def test_opsets(handle, opset):
    """One chain at opsets 13 (the first supported), 18 (Pad's axes input) and 21: conv + relu, Pad, Dropout
    with its ratio and training_mode inputs, Transpose's default perm, Flatten at axis 0, Softmax."""
    g = GraphMaker(18)
    y = g.node("Relu", [g.conv("x", 4, 6, pads=[1, 1, 1, 1])])
    if opset >= 18:
        y = g.node("Pad", [y, g.const(np.array([1, 2, 0, 1], np.int64)), g.const(np.float32(0.5)),
                           g.const(np.array([2, -1], np.int64))], mode="constant")
    else:
        y = g.node("Pad", [y, g.const(np.array([0, 0, 1, 2, 0, 0, 0, 1], np.int64)), g.const(np.float32(0.5))])
    y = g.node("Dropout", [y, g.const(np.float32(0.3)), g.const(np.bool_(False))])
    y = g.node("Softmax", [g.node("Flatten", [g.node("Transpose", [y])], axis=0)], axis=-1)
    session = check(handle, g.model({"x": X}, [y], opset=opset))
    assert [layer[1] for layer in session.layers()] == ["Conv+Relu", "Pad", "Transpose", "Softmax"]


def test_every_device_operator_has_a_primitive():
    """An operator that passes the load-time checks always runs: each has a builder or is a view."""
    from miopy.onnx import known_ops
    from miopy.onnx.build import BUILDERS, VIEWS
    assert set(known_ops()) <= set(BUILDERS) | set(VIEWS)
    assert {"LRN", "Conv", "ConvTranspose", "Gemm", "MatMul", "Clip", "HardSwish", "Pad", "Concat"} <= set(BUILDERS)


# -- errors at load time ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("build,op,attribute", [
    (lambda g: g.node("Erf", ["x"]), "Erf", None),
    (lambda g: g.node("Relu", ["x"], bogus=1), "Relu", "bogus"),
    (lambda g: g.node("MaxPool", ["x"], kernel_shape=[2, 2], storage_order=1), "MaxPool", "storage_order"),
    (lambda g: g.node("Clip", ["x", g.const(np.float32([-1, 0])), g.const(np.float32(1))]), "Clip", "min"),
    (lambda g: g.node("Clip", ["x", "", g.node("Relu", [g.const(np.float32(1))])]), "Clip", "max"),
    (lambda g: g.node("Gemm", [g.node("Flatten", ["x"]), g.weight(288, 3), g.weight(4, 3)]), "Gemm", "C"),
    (lambda g: g.node("Gemm", [g.node("Flatten", ["x"]), g.node("Flatten", ["x"])], transB=1), "Gemm", "B"),
    (lambda g: g.node("Conv", ["x", g.weight(4, 4, 3)]), "Conv", "W"),
    (lambda g: g.node("Conv", ["x", "x"]), "Conv", "W"),
    (lambda g: g.node("BatchNormalization", ["x", *(g.weight(4) for _ in range(4))], training_mode=1),
     "BatchNormalization", "training_mode"),
    (lambda g: g.node("Conv", ["x", g.weight(4, 4, 3, 3)], auto_pad="BOGUS"), "Conv", "auto_pad"),
    (lambda g: g.node("Pad", ["x", g.const(np.zeros(8, np.int64))], mode="wrap"), "Pad", "mode"),
    (lambda g: g.node("LRN", ["x"], size=3, bias=0.0), "LRN", "bias"),
    (lambda g: g.node("Reshape", ["x", g.const(np.array([0, -1], np.int64))], allowzero=1), "Reshape", "allowzero"),
    (lambda g: g.node("LRN", ["x"], size=3, alpha=-1.0), "LRN", "alpha"),
    (lambda g: g.node("LRN", ["x"], alpha=1.0), "LRN", "size"),
])
def test_unsupported_operators_are_named_at_load_time(handle, build, op, attribute):
    g = GraphMaker()
    y = build(g)
    model = g.model({"x": X}, [g.node("Relu", [g.conv("x", 4, 4)]), y])
    plans = len(handle.plans)
    with pytest.raises(UnsupportedOperator) as info:
        InferenceSession(model, handle)
    err = info.value
    assert err.op_type == op and err.attribute == attribute and err.node.startswith(op.lower())
    assert isinstance(err, MiopyError) and err.node in str(err) and op in str(err)
    assert len(handle.plans) == plans    # refused before anything was built


def _raw(nodes, inputs=("x",), outputs=("y",), opset=17, inits=()):
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(X)) for n in inputs]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs]
    graph = helper.make_graph(nodes, "bad", ins, outs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)] if opset else [])


@pytest.mark.parametrize("model,match", [
    (b"not a model", "not an ONNX model|cannot read"),
    (42, "expected a path"),
    ("/no/such/model.onnx", "cannot read"),
    (_raw([helper.make_node("Relu", ["z"], ["y"])]), "reads 'z'"),
    (_raw([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Relu", ["x"], ["y"])]), "redefines"),
    (_raw([helper.make_node("Relu", ["x"], ["a"])]), "produced by no node"),
    (_raw([helper.make_node("Relu", ["x"], ["y"])], opset=0), "no opset"),
])
def test_malformed_models(handle, model, match):
    with pytest.raises(InvalidModel, match=match):
        InferenceSession(model, handle)


def test_foreign_domain_is_unsupported(handle):
    node = helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft", name="gelu")
    with pytest.raises(UnsupportedOperator, match="com.microsoft"):
        InferenceSession(_raw([node]), handle)


def test_old_opset_is_converted(handle):
    """An opset-11 model (Clip's bounds as inputs already; Softmax-free) goes through the version converter."""
    g = GraphMaker()
    y = g.node("Clip", [g.conv("x", 4, 4, pads=[1, 1, 1, 1]), g.const(np.float32(0)), g.const(np.float32(6))])
    check(handle, g.model({"x": X}, [y], opset=11))


# -- the command lines ----------------------------------------------------------------------------------------------
def test_miopy_run_table_and_verify(tmp_path, capsys):
    from miopy.cli import run
    model, _ = _small_net()
    path = tmp_path / "net.onnx"
    onnx.save(model, path)
    assert run.main([str(path), "--batch", "2", "--iters", "2", "--verify", "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "Conv+BatchNormalization+Relu" in out and "images/s" in out and "OK" in out
    import json
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["batch"] == 2 and len(result["layers"]) == 2 and result["max_error"] <= 1e-4


def test_miopy_tune_onnx_problems(tmp_path):
    from miopy.cli.tune import onnx_problems
    model, _ = _small_net()
    path = tmp_path / "net.onnx"
    onnx.save(model, path)
    forward = onnx_problems(path, 5, 1)
    assert [p.key() for p in forward] == ["4-9-8-3x3-6-9-8-5-1x1-1x1-1x1-0-NCHW-FP32-F",
                                          "6-9-8-1x1-3-9-8-5-0x0-1x1-1x1-0-NCHW-FP32-F"]
    assert len(onnx_problems(path, 5, 0)) == 6


def test_core_import_path_does_not_import_onnx():
    """onnx is an optional extra: importing miopy (and its CLI modules) must not pull it in."""
    import subprocess
    import sys
    code = ("import sys, miopy, miopy.cli.driver, miopy.cli.run, miopy.cli.tune; "
            "assert 'onnx' not in sys.modules and 'onnxruntime' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_reference_session_lowers_an_ir_version_onnxruntime_refuses():
    """onnx newer than onnxruntime (seen on the GPU machine: IR 14 against a maximum of 13) still verifies."""
    from miopy.onnx.reference import onnxruntime_session
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])]),
        opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 99
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(onnxruntime_session(model).run(None, {"x": x})[0], np.maximum(x, 0))
    assert model.ir_version == 99          # the caller's model is not changed
