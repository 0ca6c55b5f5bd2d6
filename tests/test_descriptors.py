import numpy as np
import pytest

from miopy import BadParam, ConvDesc, ConvProblem, DataType, Direction, MiopyError, TensorDesc
from miopy.conv.problem import map_problem


def test_tensor_desc_packed_and_strided():
    d = TensorDesc("FP32", (2, 3, 4, 5))
    assert d.strides == (60, 20, 5, 1) and d.is_packed and d.nbytes == 2 * 3 * 4 * 5 * 4
    s = TensorDesc(np.float32, (2, 3, 4, 5), strides=(64, 20, 5, 1))
    assert not s.is_packed and s.element_span == 64 + 60
    assert DataType.of("float16") is DataType.FLOAT16


@pytest.mark.parametrize("dims,strides,field", [
    ((2, 3, 4), None, "dims"), ((2, 0, 4, 4), None, "dims"), ((2, -1, 4, 4), None, "dims"),
    ((2, 3, 4, 5), (60, 20, 4, 1), "strides"), ((2, 3, 4, 5), (60, 20, 5, 0), "strides"),
    (None, None, "dims"), ((2, 3, 4.5, 5), None, "dims"), ((2, "3", 4, 5), None, "dims"),
    ((2, 3, 4, 5), 7, "strides"), ((2, 3, 4, 5), (60, 20, 5, 1.0), "strides"),
])
def test_tensor_desc_rejects(dims, strides, field):
    with pytest.raises(BadParam) as info:
        TensorDesc("FP32", dims, strides)
    assert info.value.field == field


def test_numpy_integers_are_accepted():
    d = TensorDesc("FP32", np.array([2, 3, 4, 5]), np.array([60, 20, 5, 1]))
    assert d.dims == (2, 3, 4, 5) and all(type(v) is int for v in d.dims + d.strides)
    conv = ConvDesc(np.int64(1), (np.int32(2), 1), np.int64(1), np.int64(2))
    assert conv.pad == (1, 1) and conv.stride == (2, 1) and conv.groups == 2 and type(conv.groups) is int


def test_tensor_desc_rejects_dtype():
    with pytest.raises(BadParam, match="dtype"):
        TensorDesc(np.int32, (1, 1, 1, 1))


@pytest.mark.parametrize("h,r,pad,stride,dil", [(27, 5, 2, 1, 1), (227, 11, 0, 4, 1), (14, 3, 1, 2, 1),
                                                 (13, 3, 2, 1, 2), (7, 1, 0, 2, 1)])
def test_output_shape_matches_pytorch_formula(h, r, pad, stride, dil):
    x, w = TensorDesc("FP32", (2, 4, h, h + 1)), TensorDesc("FP32", (6, 4, r, r))
    y = ConvDesc(pad, stride, dil).output_desc(x, w)
    expect = lambda size: (size + 2 * pad - dil * (r - 1) - 1) // stride + 1
    assert y.dims == (2, 6, expect(h), expect(h + 1))


def test_transpose_output_shape():
    x, w = TensorDesc("FP32", (1, 4, 5, 6)), TensorDesc("FP32", (4, 3, 3, 3))
    y = ConvDesc(1, 2, 1, groups=2, mode="transpose", output_padding=1).output_desc(x, w)
    # (H-1)*s - 2p + d(R-1) + op + 1
    assert y.dims == (1, 6, 4 * 2 - 2 + 2 + 1 + 1, 5 * 2 - 2 + 2 + 1 + 1)


@pytest.mark.parametrize("kwargs,field", [
    (dict(pad=-1), "pad"), (dict(stride=0), "stride"), (dict(dilation=(1, 0)), "dilation"),
    (dict(groups=0), "groups"), (dict(mode="fft"), "mode"), (dict(output_padding=1), "output_padding"),
    (dict(mode="transpose", stride=2, output_padding=2), "output_padding"), (dict(pad="x"), "pad"),
    (dict(pad=1.5), "pad"), (dict(stride=(1, 2, 3)), "stride"), (dict(dilation=(1, "2")), "dilation"),
    (dict(groups="2"), "groups"), (dict(groups=2.0), "groups"), (dict(groups=None), "groups"),
])
def test_conv_desc_rejects(kwargs, field):
    with pytest.raises(BadParam) as info:
        ConvDesc(**kwargs)
    assert info.value.field == field


@pytest.mark.parametrize("x,w,conv,field", [
    ((1, 4, 8, 8), (6, 2, 3, 3), ConvDesc(groups=1), "w_desc.dims"),      # C != Cg * groups
    ((1, 6, 8, 8), (5, 2, 3, 3), ConvDesc(groups=3), "w_desc.dims"),      # K not divisible by groups
    ((1, 4, 2, 2), (6, 4, 5, 5), ConvDesc(pad=1), "pad"),                  # empty output
])
def test_problem_rejects(x, w, conv, field):
    with pytest.raises(BadParam) as info:
        ConvProblem.create(1, TensorDesc("FP32", x), TensorDesc("FP32", w), conv)
    assert info.value.field == field


def test_problem_rejects_dtype_mismatch_and_wrong_y():
    x, w = TensorDesc("FP32", (1, 4, 8, 8)), TensorDesc("FP16", (4, 4, 3, 3))
    with pytest.raises(BadParam, match="dtype"):
        ConvProblem.create(1, x, w, ConvDesc())
    w = TensorDesc("FP32", (4, 4, 3, 3))
    with pytest.raises(BadParam, match="y_desc"):
        ConvProblem.create(1, x, w, ConvDesc(), TensorDesc("FP32", (1, 4, 8, 8)))
    with pytest.raises(MiopyError):
        ConvProblem.create(3, x, w, ConvDesc())


def test_key_flops_bytes():
    p = ConvProblem.create(Direction.FORWARD, TensorDesc("FP32", (32, 64, 56, 56)),
                           TensorDesc("FP32", (64, 64, 3, 3)), ConvDesc(1))
    assert p.key() == "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"
    assert p.flops() == 2 * 32 * 64 * 56 * 56 * 64 * 9
    assert p.bytes() == 4 * (32 * 64 * 56 * 56 * 2 + 64 * 64 * 9)
    g = ConvProblem.create(Direction.BACKWARD_WEIGHTS, TensorDesc("FP32", (2, 8, 9, 9)),
                           TensorDesc("FP32", (4, 4, 3, 3)), ConvDesc(0, 2, 1, groups=2))
    assert g.key().endswith("-W-g2") and g.flops() == 2 * 2 * 4 * 4 * 4 * 4 * 9


def test_transpose_maps_to_backward_data():
    x, w = TensorDesc("FP32", (1, 4, 5, 5)), TensorDesc("FP32", (4, 3, 3, 3))
    conv = ConvDesc(1, 2, mode="transpose", output_padding=1)
    m = map_problem(Direction.FORWARD, x, w, conv)
    assert m.problem.direction is Direction.BACKWARD_DATA
    assert m.problem.y.dims == (1, 4, 5, 5) and m.problem.x.dims == (1, 3, 10, 10)
    assert m.roles == {"x": "y", "w": "w", "y": "x"}


def test_tolerance_grows_with_the_reduction_length():
    from miopy.conv import reference, registry
    naive = registry.get("ConvDirectNaive")
    x, w = TensorDesc("FP32", (128, 96, 27, 27)), TensorDesc("FP32", (256, 96, 5, 5))
    fwd = ConvProblem.create(1, x, w, ConvDesc(2))
    wrw = fwd.with_direction(Direction.BACKWARD_WEIGHTS)
    assert fwd.reduction_length() == 96 * 25 and wrw.reduction_length() == 128 * 27 * 27
    assert reference.tolerance(naive) == 1e-3
    assert 1e-3 < reference.tolerance(naive, fwd) < reference.tolerance(naive, wrw) < 1e-2


# -- per-side padding ---------------------------------------------------------------------------------------
def test_pads_per_side_and_pairs_agree():
    assert ConvDesc(1) == ConvDesc((1, 1)) == ConvDesc((1, 1, 1, 1))
    c = ConvDesc((0, 1, 2, 3))
    assert (c.pad, c.pad_end, c.pads) == ((0, 2), (1, 3), (0, 1, 2, 3)) and not c.is_symmetric
    assert ConvDesc((0, 1, 0, 1)) != ConvDesc((1, 0, 1, 0)) and hash(c) == hash(ConvDesc((0, 1, 2, 3)))
    import pickle
    assert pickle.loads(pickle.dumps(c)) == c


@pytest.mark.parametrize("pad", [(1, 2, 3), (0, 1, 0, -1), (0, 1, 0, 1, 0), (0, 1, 0, 1.0), True])
def test_pads_rejected(pad):
    with pytest.raises(BadParam) as info:
        ConvDesc(pad)
    assert info.value.field == "pad"


@pytest.mark.parametrize("h,r,pads,stride", [(14, 3, (0, 1, 0, 1), 2), (9, 5, (3, 1, 0, 2), 1),
                                             (10, 3, (2, 0, 1, 0), 3)])
def test_asymmetric_output_shape(h, r, pads, stride):
    x, w = TensorDesc("FP32", (1, 2, h, h + 1)), TensorDesc("FP32", (3, 2, r, r))
    y = ConvDesc(pads, stride).output_desc(x, w)
    top, bottom, left, right = pads
    assert y.dims[2:] == ((h + top + bottom - r) // stride + 1, (h + 1 + left + right - r) // stride + 1)
    t = ConvDesc(pads, stride, mode="transpose").output_desc(y, TensorDesc("FP32", (3, 2, r, r)))
    assert t.dims[2:] == tuple((o - 1) * stride - b - e + r for o, b, e in zip(y.dims[2:], pads[::2], pads[1::2]))


def test_same_padding():
    from miopy.conv.descriptor import same_padding
    assert same_padding((14, 14), (3, 3), 2) == (0, 1, 0, 1)          # MIOpen's --pad_mode same case
    assert same_padding((14, 14), (3, 3), 2, upper=False) == (1, 0, 1, 0)
    assert same_padding((7, 8), (3, 3), 1) == (1, 1, 1, 1)
    assert same_padding((5, 5), (1, 1), 2) == (0, 0, 0, 0)
    for h, r, s, d in [(13, 5, 3, 1), (12, 3, 2, 2), (224, 7, 2, 1)]:
        x, w = TensorDesc("FP32", (1, 1, h, h)), TensorDesc("FP32", (1, 1, r, r))
        y = ConvDesc(same_padding((h, h), (r, r), s, d), s, d).output_desc(x, w)
        assert y.dims[2:] == (-(-h // s),) * 2


def test_asymmetric_key_and_driver_args():
    p = ConvProblem.create(1, TensorDesc("FP32", (1, 4, 14, 14)), TensorDesc("FP32", (8, 4, 3, 3)),
                           ConvDesc((0, 1, 0, 1), 2))
    q = ConvProblem.create(1, TensorDesc("FP32", (1, 4, 14, 14)), TensorDesc("FP32", (8, 4, 3, 3)),
                           ConvDesc((1, 0, 1, 0), 2))
    assert p.key() == "4-14-14-3x3-8-7-7-1-0,1x0,1-2x2-1x1-0-NCHW-FP32-F" and p.key() != q.key()
    from miopy.cli.driver import parser
    from miopy.conv.driver import descriptors
    args = parser().parse_args(["conv", *p.driver_args().split()])
    assert descriptors(args)[2] == p.conv
    same = parser().parse_args(["conv", "-H", "14", "-W", "14", "-u", "2", "-v", "2", "--pad_mode", "same"])
    assert descriptors(same)[2].pads == (0, 1, 0, 1)
