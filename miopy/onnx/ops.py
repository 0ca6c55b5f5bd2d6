"""The operators the runner knows: accepted attributes, shape inference with value checks, and host
evaluation for nodes whose inputs are all constants (shape arithmetic: Shape -> Gather -> Concat ->
Reshape chains of exported models fold away at load time).

Every check runs at load time and raises UnsupportedOperator naming the node, its op type and the
attribute (or input) at fault; nothing here touches a device.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..conv.descriptor import same_padding
from .errors import InvalidModel, UnsupportedOperator
from .graph import Node

Shape = tuple[int, ...]


class Context:
    """Shapes and constants of the values seen so far (load time)."""

    def __init__(self, constants: dict[str, np.ndarray]):
        self.consts: dict[str, np.ndarray] = dict(constants)
        self.shapes: dict[str, Shape] = {name: tuple(a.shape) for name, a in constants.items()}
        self.dtypes: dict[str, np.dtype] = {name: a.dtype for name, a in constants.items()}

    def shape(self, name: str) -> Shape:
        return self.shapes[name]

    def const(self, name: str) -> np.ndarray | None:
        return self.consts.get(name) if name else None


@dataclass(frozen=True)
class OpSpec:
    """An operator: its attributes, shape inference (device ops; None when the op only folds on the host)
    and host evaluation (None when it never folds)."""

    attrs: frozenset[str]
    infer: Callable[[Node, Context], list[Shape]] | None
    fold: Callable[[Node, list[np.ndarray]], list[np.ndarray]] | None = None


OPS: dict[str, OpSpec] = {}


def op(name: str, attrs: Sequence[str] = (), fold: Callable | None = None, device: bool = True):
    """Register the decorated shape function (or none, when device is False) as op name's spec."""
    def register(infer):
        OPS[name] = OpSpec(frozenset(attrs), infer if device else None, fold)
        return infer
    return register


def unsupported(node: Node, attribute: str | None, reason: str) -> UnsupportedOperator:
    return UnsupportedOperator(node.name, node.op, attribute, reason)


def check_node(node: Node) -> OpSpec:
    """The spec of node's op; UnsupportedOperator for an unknown op or attribute."""
    spec = OPS.get(node.op)
    if spec is None:
        raise unsupported(node, None, "operator not supported by miopy")
    for name in node.attrs:
        if name not in spec.attrs:
            raise unsupported(node, name, "attribute not supported by miopy")
    return spec


def const_input(node: Node, ctx: Context, index: int, what: str) -> np.ndarray:
    """Input index of node as a constant; UnsupportedOperator when it is computed at run time."""
    value = ctx.const(node.input(index))
    if value is None:
        raise unsupported(node, what, "must be a constant (an initializer or foldable at load time)")
    return value


def float_input(node: Node, ctx: Context, index: int, what: str = "input") -> Shape:
    """The shape of a float32 run-time input; UnsupportedOperator for other element types."""
    name = node.input(index)
    dtype = ctx.dtypes.get(name, np.dtype(np.float32))
    if dtype != np.float32:
        raise unsupported(node, what, f"element type {dtype} (only float32 tensors run on the device)")
    return ctx.shape(name)


def rank4(node: Node, shape: Shape, what: str = "X") -> Shape:
    if len(shape) != 4:
        raise unsupported(node, what, f"rank {len(shape)}: only 2-D images (N, C, H, W) are supported")
    return shape


def ints(node: Node, name: str, default: Sequence[int]) -> tuple[int, ...]:
    value = node.attr(name, default)
    return tuple(int(v) for v in value)


# -- windows: convolution and pooling geometry --------------------------------------------------------
@dataclass(frozen=True)
class Window:
    """Resolved 2-D window geometry: kernel, strides, dilations and (top, bottom, left, right) pads."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    pads: tuple[int, int, int, int]


def window(node: Node, in_hw: Sequence[int], kernel: Sequence[int], dilations_ok: bool = True) -> Window:
    """The window of a Conv / pooling node on an input of in_hw: auto_pad and pads resolved to four sides."""
    strides = ints(node, "strides", (1, 1))
    dilations = ints(node, "dilations", (1, 1))
    for name, values in (("strides", strides), ("dilations", dilations), ("kernel_shape", kernel)):
        if len(values) != 2 or min(values) < 1:
            raise unsupported(node, name, f"{list(values)}: expected two positive values (2-D)")
    if not dilations_ok and dilations != (1, 1):
        raise unsupported(node, "dilations", f"{list(dilations)}: only 1 is supported")
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = same_padding(in_hw, kernel, strides, dilations, upper=auto_pad == "SAME_UPPER")
    elif auto_pad == "VALID":
        pads = (0, 0, 0, 0)
    elif auto_pad == "NOTSET":
        onnx_pads = ints(node, "pads", (0, 0, 0, 0))   # ONNX: (top, left, bottom, right)
        if len(onnx_pads) != 4 or min(onnx_pads) < 0:
            raise unsupported(node, "pads", f"{list(onnx_pads)}: expected four non-negative values (2-D)")
        pads = (onnx_pads[0], onnx_pads[2], onnx_pads[1], onnx_pads[3])
    else:
        raise unsupported(node, "auto_pad", f"unknown value {auto_pad!r}")
    return Window((int(kernel[0]), int(kernel[1])), (strides[0], strides[1]), (dilations[0], dilations[1]), pads)


def window_output(node: Node, in_hw: Sequence[int], win: Window, ceil_mode: bool = False) -> tuple[int, int]:
    out = []
    for axis, size in enumerate(in_hw):
        begin, end = win.pads[2 * axis], win.pads[2 * axis + 1]
        span = win.dilations[axis] * (win.kernel[axis] - 1) + 1
        room = size + begin + end - span
        if room < 0:
            raise unsupported(node, "kernel_shape", f"window {win.kernel} does not fit input {tuple(in_hw)} "
                                                    f"with pads {win.pads}")
        count = (-(-room // win.strides[axis]) if ceil_mode else room // win.strides[axis]) + 1
        if ceil_mode and (count - 1) * win.strides[axis] >= size + begin:
            count -= 1   # the last window would start in the end padding (PyTorch's and ONNX's rule)
        out.append(count)
    return out[0], out[1]


# -- convolution --------------------------------------------------------------------------------------------
CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")


def conv_window(node: Node, x: Shape, w: Shape) -> Window:
    kernel = ints(node, "kernel_shape", w[2:])
    if tuple(kernel) != tuple(w[2:]):
        raise unsupported(node, "kernel_shape", f"{list(kernel)} != the weights' {list(w[2:])}")
    return window(node, x[2:], kernel)


@op("Conv", CONV_ATTRS)
def _conv(node: Node, ctx: Context) -> list[Shape]:
    x = rank4(node, float_input(node, ctx, 0))
    w = const_input(node, ctx, 1, "W").shape
    if len(w) != 4:
        raise unsupported(node, "W", f"weights of rank {len(w)}: only 2-D convolutions are supported")
    group = int(node.attr("group", 1))
    if group < 1 or x[1] != w[1] * group or w[0] % group:
        raise unsupported(node, "group", f"{group} does not fit input channels {x[1]} and weights {w}")
    bias = ctx.const(node.input(2))
    if node.input(2) and (bias is None or bias.shape != (w[0],)):
        raise unsupported(node, "B", f"bias must be a constant of shape ({w[0]},)")
    win = conv_window(node, x, w)
    return [(x[0], w[0], *window_output(node, x[2:], win))]


@op("ConvTranspose", CONV_ATTRS + ("output_padding", "output_shape"))
def _conv_transpose(node: Node, ctx: Context) -> list[Shape]:
    x = rank4(node, float_input(node, ctx, 0))
    w = const_input(node, ctx, 1, "W").shape
    group = int(node.attr("group", 1))
    if len(w) != 4 or w[0] != x[1] or x[1] % group:
        raise unsupported(node, "W", f"weights {w} do not fit input channels {x[1]} and group {group}")
    bias = ctx.const(node.input(2))
    if node.input(2) and (bias is None or bias.shape != (w[1] * group,)):
        raise unsupported(node, "B", f"bias must be a constant of shape ({w[1] * group},)")
    geo = transpose_geometry(node, x, w)
    return [(x[0], w[1] * group, *geo[1])]


def transpose_geometry(node: Node, x: Shape, w: Shape) -> tuple[Window, tuple[int, int], tuple[int, int]]:
    """ConvTranspose's window (pads resolved), output size and output padding."""
    strides, dilations = ints(node, "strides", (1, 1)), ints(node, "dilations", (1, 1))
    out_pad = ints(node, "output_padding", (0, 0))
    if len(out_pad) != 2 or any(o < 0 or o >= max(s, d) for o, s, d in zip(out_pad, strides, dilations)):
        raise unsupported(node, "output_padding", f"{list(out_pad)}: must be below the stride or dilation")
    kernel = ints(node, "kernel_shape", w[2:])
    if tuple(kernel) != tuple(w[2:]):
        raise unsupported(node, "kernel_shape", f"{list(kernel)} != the weights' {list(w[2:])}")
    full = [s * (size - 1) + o + d * (k - 1) + 1
            for size, s, o, d, k in zip(x[2:], strides, out_pad, dilations, kernel)]
    auto_pad = node.attr("auto_pad", "NOTSET")
    wanted = ints(node, "output_shape", ())
    if wanted or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = wanted[-2:] if wanted else tuple(size * s for size, s in zip(x[2:], strides))
        if len(target) != 2:
            raise unsupported(node, "output_shape", f"{list(wanted)}: expected the 2-D output size")
        totals = [f - t for f, t in zip(full, target)]
        if min(totals) < 0:
            raise unsupported(node, "output_shape", f"{list(target)} needs negative padding")
        upper = auto_pad == "SAME_UPPER"   # ONNX: the odd pixel at the end for SAME_UPPER, else at the begin
        sides = [(t // 2, t - t // 2) if upper else (t - t // 2, t // 2) for t in totals]
        pads = (sides[0][0], sides[0][1], sides[1][0], sides[1][1])
        win = Window((kernel[0], kernel[1]), (strides[0], strides[1]), (dilations[0], dilations[1]), pads)
    else:
        win = window(node, x[2:], kernel)
    out = tuple(f - win.pads[2 * a] - win.pads[2 * a + 1] for a, f in enumerate(full))
    if min(out) < 1:
        raise unsupported(node, "pads", f"output would be {out}")
    return win, (out[0], out[1]), (out_pad[0], out_pad[1])


@op("BatchNormalization", ("epsilon", "momentum", "training_mode"))
def _batchnorm(node: Node, ctx: Context) -> list[Shape]:
    x = float_input(node, ctx, 0)
    if len(x) < 2:
        raise unsupported(node, "X", f"rank {len(x)}: needs (N, C, ...)")
    if int(node.attr("training_mode", 0)):
        raise unsupported(node, "training_mode", "training mode is not supported (inference only)")
    if len([o for o in node.outputs if o]) > 1:
        raise unsupported(node, "outputs", "running_mean / running_var outputs need training mode")
    for index, what in ((1, "scale"), (2, "B"), (3, "input_mean"), (4, "input_var")):
        value = const_input(node, ctx, index, what)
        if value.shape != (x[1],):
            raise unsupported(node, what, f"shape {value.shape} != ({x[1]},)")
    return [x]


# -- activations ----------------------------------------------------------------------------------------------
def _same(node: Node, ctx: Context) -> list[Shape]:
    return [float_input(node, ctx, 0)]


for _name, _attrs in (("Relu", ()), ("Sigmoid", ()), ("Tanh", ()), ("HardSwish", ()), ("LeakyRelu", ("alpha",))):
    op(_name, _attrs)(_same)


@op("Clip")
def _clip(node: Node, ctx: Context) -> list[Shape]:
    clip_bounds(node, ctx)
    return [float_input(node, ctx, 0)]


def clip_bounds(node: Node, ctx: Context) -> tuple[float, float]:
    """Clip's (min, max), infinite where omitted; each must be a constant scalar (not NaN)."""
    bounds = []
    for index, what, default in ((1, "min", -math.inf), (2, "max", math.inf)):
        value = const_input(node, ctx, index, what) if node.input(index) else None
        if value is not None and np.asarray(value).size != 1:
            raise unsupported(node, what, f"shape {np.shape(value)}: must be a scalar")
        bound = default if value is None else float(np.asarray(value).reshape(()))
        if math.isnan(bound):
            raise unsupported(node, what, "NaN")
        bounds.append(bound)
    return bounds[0], bounds[1]


# -- pooling, normalisation, softmax ---------------------------------------------------------------------------
@op("MaxPool", ("auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"))
def _maxpool(node: Node, ctx: Context) -> list[Shape]:
    if len([o for o in node.outputs if o]) > 1:
        raise unsupported(node, "Indices", "the indices output is not supported")
    if int(node.attr("storage_order", 0)):
        raise unsupported(node, "storage_order", "column-major indices are not supported")
    return [_pool_shape(node, ctx, dilations_ok=False)]


@op("AveragePool", ("auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"))
def _avgpool(node: Node, ctx: Context) -> list[Shape]:
    return [_pool_shape(node, ctx, dilations_ok=False)]


def pool_window(node: Node, x: Shape, dilations_ok: bool = False) -> tuple[Window, tuple[int, int]]:
    kernel = ints(node, "kernel_shape", ())
    if len(kernel) != 2:
        raise unsupported(node, "kernel_shape", f"{list(kernel)}: expected a 2-D window")
    win = window(node, x[2:], kernel, dilations_ok)
    if any(p >= k for p, k in zip(win.pads, (kernel[0], kernel[0], kernel[1], kernel[1]))):
        raise unsupported(node, "pads", f"{list(win.pads)}: each must be smaller than the window {list(kernel)}")
    return win, window_output(node, x[2:], win, bool(node.attr("ceil_mode", 0)))


def _pool_shape(node: Node, ctx: Context, dilations_ok: bool) -> Shape:
    x = rank4(node, float_input(node, ctx, 0))
    _, out = pool_window(node, x, dilations_ok)
    return (x[0], x[1], *out)


@op("GlobalAveragePool")
def _global_pool(node: Node, ctx: Context) -> list[Shape]:
    x = rank4(node, float_input(node, ctx, 0))
    return [(x[0], x[1], 1, 1)]


OPS["GlobalMaxPool"] = OPS["GlobalAveragePool"]


def lrn_params(node: Node) -> tuple[int, float, float, float]:
    """(size, alpha, beta, bias) of an LRN node, checked. ONNX's LRN is MIOpen's cross-channel mode:
    y = x / (bias + alpha / size * sum of x^2 over channels c - (size - 1) // 2 .. c + size // 2)^beta."""
    if "size" not in node.attrs:
        raise unsupported(node, "size", "required")
    size = int(node.attr("size"))
    alpha, beta, bias = (float(node.attr(name, default)) for name, default in
                         (("alpha", 1e-4), ("beta", 0.75), ("bias", 1.0)))
    if size < 1:
        raise unsupported(node, "size", f"{size}: must be at least 1")
    if not (math.isfinite(alpha) and alpha >= 0):
        raise unsupported(node, "alpha", f"{alpha}: only finite non-negative values are supported")
    if not math.isfinite(beta):
        raise unsupported(node, "beta", f"{beta}: must be finite")
    if not (math.isfinite(bias) and bias > 0):
        raise unsupported(node, "bias", f"{bias}: only positive values are supported (the scale must stay positive)")
    return size, alpha, beta, bias


@op("LRN", ("alpha", "beta", "bias", "size"))
def _lrn(node: Node, ctx: Context) -> list[Shape]:
    lrn_params(node)
    return [rank4(node, float_input(node, ctx, 0))]


def softmax_axis(node: Node, shape: Shape) -> int:
    axis = int(node.attr("axis", -1))
    if not -len(shape) <= axis < len(shape):
        raise unsupported(node, "axis", f"{axis} is outside rank {len(shape)}")
    return axis % len(shape)


@op("Softmax", ("axis",))
def _softmax(node: Node, ctx: Context) -> list[Shape]:
    x = float_input(node, ctx, 0)
    softmax_axis(node, x)
    return [x]


OPS["LogSoftmax"] = OPS["Softmax"]


# -- element-wise arithmetic -------------------------------------------------------------------------------------
def broadcast(node: Node, a: Shape, b: Shape) -> Shape:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise unsupported(node, "inputs", f"shapes {a} and {b} do not broadcast") from None


def _binary_fold(fn):
    return lambda node, values: [np.asarray(fn(values[0], values[1])).astype(np.result_type(values[0], values[1]))]


def _div(a, b):
    return a // b if np.issubdtype(np.result_type(a, b), np.integer) else a / b


for _name, _fn in (("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply), ("Div", _div)):
    @op(_name, fold=_binary_fold(_fn))
    def _binary(node: Node, ctx: Context) -> list[Shape]:
        a, b = float_input(node, ctx, 0, "A"), float_input(node, ctx, 1, "B")
        out = broadcast(node, a, b)
        if len(out) > 4:
            raise unsupported(node, "inputs", f"rank {len(out)}: at most 4 dimensions are supported")
        return [out]


# -- layout ----------------------------------------------------------------------------------------------------
def _concat_fold(node: Node, values: list[np.ndarray]) -> list[np.ndarray]:
    return [np.concatenate(values, axis=int(node.attr("axis")))]


@op("Concat", ("axis",), fold=_concat_fold)
def _concat(node: Node, ctx: Context) -> list[Shape]:
    shapes = [float_input(node, ctx, i) for i in range(len(node.inputs))]
    if "axis" not in node.attrs:
        raise unsupported(node, "axis", "required")
    axis = int(node.attr("axis"))
    rank = len(shapes[0])
    if not -rank <= axis < rank or any(len(s) != rank for s in shapes):
        raise unsupported(node, "axis", f"{axis} does not fit inputs {shapes}")
    axis %= rank
    for s in shapes:
        if s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:]:
            raise unsupported(node, "inputs", f"shapes {shapes} differ outside axis {axis}")
    return [shapes[0][:axis] + (sum(s[axis] for s in shapes),) + shapes[0][axis + 1:]]


def flatten_shape(node: Node, shape: Shape) -> Shape:
    axis = int(node.attr("axis", 1))
    if not -len(shape) <= axis <= len(shape):
        raise unsupported(node, "axis", f"{axis} is outside rank {len(shape)}")
    if axis < 0:
        axis += len(shape)
    return (math.prod(shape[:axis]), math.prod(shape[axis:]))


@op("Flatten", ("axis",), fold=lambda node, v: [v[0].reshape(flatten_shape(node, v[0].shape))])
def _flatten(node: Node, ctx: Context) -> list[Shape]:
    return [flatten_shape(node, float_input(node, ctx, 0))]


def reshape_shape(node: Node, shape: Shape, target: np.ndarray) -> Shape:
    dims = [int(d) for d in np.asarray(target).reshape(-1)]
    if int(node.attr("allowzero", 0)) and 0 in dims:
        raise unsupported(node, "allowzero", f"1 with a 0 in shape {dims}: the output would be empty")
    if any(d == 0 and i >= len(shape) for i, d in enumerate(dims)):
        raise unsupported(node, "shape", f"{dims}: a 0 beyond the input's rank {len(shape)}")
    dims = [shape[i] if d == 0 else d for i, d in enumerate(dims)]
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise unsupported(node, "shape", f"{dims}: at most one -1 and no other negative value")
    known = math.prod(d for d in dims if d != -1)
    if -1 in dims:
        if known == 0 or math.prod(shape) % known:
            raise unsupported(node, "shape", f"{dims} does not fit {shape}")
        dims[dims.index(-1)] = math.prod(shape) // known
    if math.prod(dims) != math.prod(shape):
        raise unsupported(node, "shape", f"{dims} holds {math.prod(dims)} elements, the input {math.prod(shape)}")
    return tuple(dims)


@op("Reshape", ("allowzero",), fold=lambda node, v: [v[0].reshape(reshape_shape(node, v[0].shape, v[1]))])
def _reshape(node: Node, ctx: Context) -> list[Shape]:
    return [reshape_shape(node, float_input(node, ctx, 0), const_input(node, ctx, 1, "shape"))]


def _axes(node: Node, ctx: Context | None, values: list[np.ndarray] | None, rank: int) -> list[int]:
    if node.input(1):
        axes = values[1] if values is not None else (const_input(node, ctx, 1, "axes") if ctx else None)
    else:
        axes = node.attr("axes")
    if axes is None:
        return []
    return sorted(int(a) % rank for a in np.asarray(axes).reshape(-1))


def squeeze_shape(node: Node, shape: Shape, axes: list[int]) -> Shape:
    axes = axes or [i for i, d in enumerate(shape) if d == 1]
    if any(shape[a] != 1 for a in axes):
        raise unsupported(node, "axes", f"{axes}: dimensions of {shape} that are not 1")
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def unsqueeze_shape(node: Node, shape: Shape, axes: list[int]) -> Shape:
    out = list(shape)
    for a in axes:
        out.insert(a, 1)
    return tuple(out)


@op("Squeeze", ("axes",), fold=lambda node, v: [v[0].reshape(squeeze_shape(node, v[0].shape,
                                                                            _axes(node, None, v, v[0].ndim)))])
def _squeeze(node: Node, ctx: Context) -> list[Shape]:
    x = float_input(node, ctx, 0)
    return [squeeze_shape(node, x, _axes(node, ctx, None, len(x)))]


def _unsqueeze_fold(node: Node, v: list[np.ndarray]) -> list[np.ndarray]:
    rank = v[0].ndim + len(np.asarray(v[1] if node.input(1) else node.attr("axes")).reshape(-1))
    return [v[0].reshape(unsqueeze_shape(node, v[0].shape, _axes(node, None, v, rank)))]


@op("Unsqueeze", ("axes",), fold=_unsqueeze_fold)
def _unsqueeze(node: Node, ctx: Context) -> list[Shape]:
    x = float_input(node, ctx, 0)
    count = len(np.asarray(const_input(node, ctx, 1, "axes") if node.input(1) else node.attr("axes", [])).reshape(-1))
    return [unsqueeze_shape(node, x, _axes(node, ctx, None, len(x) + count))]


def transpose_perm(node: Node, rank: int) -> tuple[int, ...]:
    perm = ints(node, "perm", tuple(reversed(range(rank))))
    if sorted(perm) != list(range(rank)):
        raise unsupported(node, "perm", f"{list(perm)} is not a permutation of {rank} axes")
    return perm


@op("Transpose", ("perm",), fold=lambda node, v: [np.transpose(v[0], transpose_perm(node, v[0].ndim))])
def _transpose(node: Node, ctx: Context) -> list[Shape]:
    x = float_input(node, ctx, 0)
    if len(x) > 6:
        raise unsupported(node, "perm", f"rank {len(x)}: at most 6 dimensions are supported")
    perm = transpose_perm(node, len(x))
    return [tuple(x[p] for p in perm)]


def pad_amounts(node: Node, ctx: Context, rank: int) -> tuple[list[int], list[int], float]:
    """(begins, ends, constant value) of a Pad node, per axis of rank."""
    pads = [int(p) for p in const_input(node, ctx, 1, "pads").reshape(-1)]
    axes = list(range(rank))
    if node.input(3):
        axes = [int(a) % rank for a in const_input(node, ctx, 3, "axes").reshape(-1)]
    if len(pads) != 2 * len(axes):
        raise unsupported(node, "pads", f"{len(pads)} values for {len(axes)} axes")
    begins, ends = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        begins[a], ends[a] = pads[i], pads[i + len(axes)]
    value = float(np.asarray(const_input(node, ctx, 2, "constant_value")).reshape(())) if node.input(2) else 0.0
    return begins, ends, value


@op("Pad", ("mode",))
def _pad(node: Node, ctx: Context) -> list[Shape]:
    x = float_input(node, ctx, 0)
    mode = node.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        raise unsupported(node, "mode", f"{mode!r}: constant, reflect and edge are supported")
    if len(x) > 4:
        raise unsupported(node, "pads", f"rank {len(x)}: at most 4 dimensions are supported")
    begins, ends, _ = pad_amounts(node, ctx, len(x))
    out = tuple(d + b + e for d, b, e in zip(x, begins, ends))
    if min(out) < 1:
        raise unsupported(node, "pads", f"output would be {out}")
    if mode == "reflect" and any(b >= d or e >= d for d, b, e in zip(x, begins, ends)):
        raise unsupported(node, "pads", "reflect padding must be smaller than the dimension")
    return [out]


@op("Identity", fold=lambda node, v: [v[0]])
def _identity(node: Node, ctx: Context) -> list[Shape]:
    return [ctx.shape(node.input(0))]


@op("Dropout", ("seed",))
def _dropout(node: Node, ctx: Context) -> list[Shape]:
    mode = ctx.const(node.input(2))
    if node.input(2) and (mode is None or bool(np.asarray(mode).reshape(()))):
        raise unsupported(node, "training_mode", "dropout runs in inference mode only (training_mode false)")
    if len([o for o in node.outputs if o]) > 1:
        raise unsupported(node, "mask", "the mask output is not supported")
    return [float_input(node, ctx, 0)]


# -- matrix products --------------------------------------------------------------------------------------------
@op("Gemm", ("alpha", "beta", "transA", "transB"))
def _gemm(node: Node, ctx: Context) -> list[Shape]:
    """Y = alpha * A' B' + beta * C, B and C constants. A transposed A runs as a Transpose first, a C that is
    not one bias per output column as an Add after (miopy.onnx.passes)."""
    a = float_input(node, ctx, 0, "A")
    b = const_input(node, ctx, 1, "B").shape
    if len(a) != 2 or len(b) != 2:
        raise unsupported(node, "A", f"shapes {a} and {b}: Gemm multiplies matrices")
    m, k_a = (a[1], a[0]) if int(node.attr("transA", 0)) else a
    k, n = (b[1], b[0]) if int(node.attr("transB", 0)) else b
    if k_a != k:
        raise unsupported(node, "B", f"inner dimensions {k_a} and {k} differ")
    if node.input(2):
        c = const_input(node, ctx, 2, "C")
        if c.ndim > 2 or any(d not in (1, o) for d, o in zip(c.shape[::-1], (n, m))):
            raise unsupported(node, "C", f"shape {c.shape} does not broadcast to the output {(m, n)}")
    return [(m, n)]


def gemm_bias_per_column(c: np.ndarray, n: int) -> bool:
    """Whether Gemm's C is one value per output column (or a scalar): a bias the convolution adds."""
    return c.size in (1, n) and (c.ndim < 2 or c.shape[0] == 1)


@op("MatMul")
def _matmul(node: Node, ctx: Context) -> list[Shape]:
    a = float_input(node, ctx, 0, "A")
    b = const_input(node, ctx, 1, "B").shape
    if len(b) != 2 or len(a) < 2:
        raise unsupported(node, "B", f"shapes {a} x {b}: B must be a constant matrix, A of rank >= 2")
    if a[-1] != b[0]:
        raise unsupported(node, "B", f"inner dimensions {a[-1]} and {b[0]} differ")
    return [a[:-1] + (b[1],)]


# -- host-only shape arithmetic ------------------------------------------------------------------------------------
def _gather(node: Node, v: list[np.ndarray]) -> list[np.ndarray]:
    return [np.take(v[0], v[1].astype(np.int64), axis=int(node.attr("axis", 0)))]


def _slice(node: Node, v: list[np.ndarray]) -> list[np.ndarray]:
    data, starts, ends = v[0], v[1], v[2]
    axes = v[3] if len(v) > 3 and v[3] is not None else np.arange(len(starts))
    steps = v[4] if len(v) > 4 and v[4] is not None else np.ones(len(starts), np.int64)
    index = [slice(None)] * data.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[int(a)] = slice(int(s), int(e), int(st))
    return [data[tuple(index)]]


def _cast(node: Node, v: list[np.ndarray]) -> list[np.ndarray]:
    from onnx import helper
    return [v[0].astype(helper.tensor_dtype_to_np_dtype(int(node.attr("to"))))]


def _constant(node: Node, v: list[np.ndarray]) -> list[np.ndarray]:
    if "value" in node.attrs:
        return [np.asarray(node.attrs["value"])]
    for name, dtype in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                        ("value_ints", np.int64)):
        if name in node.attrs:
            return [np.asarray(node.attrs[name], dtype)]
    raise unsupported(node, next(iter(node.attrs), None), "only tensor, float(s) and int(s) values are supported")


def _constant_of_shape(node: Node, v: list[np.ndarray]) -> list[np.ndarray]:
    value = node.attr("value", np.zeros(1, np.float32))
    return [np.full(tuple(int(d) for d in v[0]), value.reshape(-1)[0], value.dtype)]


_HOST_ONLY: tuple[tuple[str, tuple[str, ...], Callable], ...] = (
        ("Shape", ("start", "end"), lambda node, v: [np.asarray(v[0].shape[node.attr("start", 0):node.attr("end")],
                                                                np.int64)]),
        ("Gather", ("axis",), _gather), ("Slice", (), _slice), ("Cast", ("to", "saturate"), _cast),
        ("Constant", ("value", "value_float", "value_floats", "value_int", "value_ints"), _constant),
        ("ConstantOfShape", ("value",), _constant_of_shape),
        ("Floor", (), lambda node, v: [np.floor(v[0])]), ("Ceil", (), lambda node, v: [np.ceil(v[0])]),
        ("Sqrt", (), lambda node, v: [np.sqrt(v[0])]), ("Neg", (), lambda node, v: [np.negative(v[0])]))
for _host_op, _host_attrs, _fold in _HOST_ONLY:
    OPS[_host_op] = OpSpec(frozenset(_host_attrs), None, _fold)


def fold_node(node: Node, spec: OpSpec, ctx: Context) -> list[np.ndarray] | None:
    """node's outputs computed on the host when every input is a constant (Shape only needs a known shape),
    else None."""
    if spec.fold is None:
        return None
    if node.op == "Shape":
        return spec.fold(node, [np.empty(ctx.shape(node.input(0)), np.uint8)])
    if not all(ctx.const(name) is not None for name in node.inputs if name):
        return None
    values: list = [ctx.const(name) if name else None for name in node.inputs]
    try:
        return spec.fold(node, values)
    except (ValueError, IndexError, TypeError) as exc:
        raise InvalidModel(f"node {node.name!r} ({node.op}) fails on its constant inputs: {exc}") from exc


def infer(node: Node, ctx: Context) -> None:
    """Fold node into constants, or infer its output shapes (checking every attribute value)."""
    spec = check_node(node)
    folded = fold_node(node, spec, ctx)
    if folded is not None:
        for name, value in zip(node.outputs, folded):
            if name:
                ctx.consts[name] = np.asarray(value)
                ctx.shapes[name] = tuple(np.shape(value))
                ctx.dtypes[name] = np.asarray(value).dtype
        return
    if spec.infer is None:
        raise unsupported(node, None, "only runs on constant inputs (shape arithmetic); this one's are computed "
                                      "at run time")
    shapes = spec.infer(node, ctx)
    for name, shape in zip(node.outputs, shapes):
        if min(shape, default=1) < 1:
            raise unsupported(node, None, f"output {name!r} would be empty: shape {shape}")
        ctx.shapes[name] = tuple(int(d) for d in shape)
        ctx.dtypes[name] = np.dtype(np.float32)


def known_ops() -> list[str]:
    """Operators the runner runs on the device (the others only fold on constants)."""
    return sorted(name for name, spec in OPS.items() if spec.infer is not None)


__all__ = ["OPS", "Context", "OpSpec", "Window", "infer", "known_ops", "unsupported"]
