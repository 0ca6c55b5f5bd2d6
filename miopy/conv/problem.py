"""Convolution descriptor, direction and problem (the unit find, the DBs and the solvers work on), and the
mapping of a user's call (any direction, convolution or transpose) onto a problem."""
from __future__ import annotations

import enum
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, TypeAlias

from .. import config
from ..errors import BadParam, check
from ..tensor import STRICT, DataType, TensorDesc, as_int, check_math_mode, int_tuple

if TYPE_CHECKING:
    from ..solver import Registry


class Direction(enum.IntEnum):
    """Convolution direction; values are MIOpenDriver's -F flags."""

    FORWARD = 1
    BACKWARD_DATA = 2
    BACKWARD_WEIGHTS = 4

    @property
    def letter(self) -> str:
        return {1: "F", 2: "B", 4: "W"}[int(self)]


IntPair: TypeAlias = "int | tuple[int, int] | Sequence[int]"


def _pair(value, field: str) -> tuple[int, int]:
    """An int or a pair of ints (Python or NumPy integers) as a pair; BadParam(field) for anything else."""
    if not isinstance(value, bool):
        try:
            return (operator.index(value),) * 2
        except TypeError:
            pass
    pair = int_tuple(value, field)
    check(len(pair) == 2, field, f"expected an int or a pair of ints, got {value!r}")
    return pair[0], pair[1]


def _sides(value) -> tuple[int, int, int, int]:
    """Padding as (top, bottom, left, right): an int, an (h, w) pair (both sides alike, MIOpen's form) or
    four ints (top, bottom, left, right); BadParam("pad") for anything else."""
    if not isinstance(value, bool):
        try:
            pad = operator.index(value)
            return pad, pad, pad, pad
        except TypeError:
            pass
    sides = int_tuple(value, "pad")
    check(len(sides) in (2, 4), "pad", f"expected an int, an (h, w) pair or (top, bottom, left, right), got {value!r}")
    return (sides[0], sides[0], sides[1], sides[1]) if len(sides) == 2 else (sides[0], sides[1], sides[2], sides[3])


def resolve_math_mode(explicit: str | None, handle_default: str | None = None) -> str:
    """The math mode a convolution runs under: the descriptor's when it names one, else the handle's, else
    MIOPY_MATH_MODE, else "strict"."""
    if explicit is not None:
        return explicit
    if handle_default is not None:
        return handle_default
    env = config.math_mode()
    return check_math_mode(env.lower(), "MIOPY_MATH_MODE") if env is not None else STRICT


def same_padding(in_hw: Sequence[int], filter_hw: Sequence[int], stride: IntPair = 1, dilation: IntPair = 1,
                 upper: bool = True) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) padding whose output is ceil(input / stride) along each axis (ONNX's
    auto_pad SAME_UPPER, TensorFlow's "SAME", MIOpen's same mode): the odd pixel goes to the end when upper,
    to the beginning otherwise (SAME_LOWER)."""
    strides, dilations = _pair(stride, "stride"), _pair(dilation, "dilation")
    sides: list[int] = []
    for size, f, st, d in zip(in_hw, filter_hw, strides, dilations):
        total = max((-(-size // st) - 1) * st + d * (f - 1) + 1 - size, 0)
        small, large = total // 2, total - total // 2
        sides += [small, large] if upper else [large, small]
    return sides[0], sides[1], sides[2], sides[3]


@dataclass(frozen=True, eq=False)
class ConvDesc:
    """Padding, stride, dilation (each an int or an (h, w) pair), groups, and mode.

    pad may also give every side: (top, bottom, left, right), as ONNX's begin / end pads and auto_pad
    SAME_UPPER / SAME_LOWER need (see same_padding). ``pad`` is then the (top, left) pair the kernels
    index with, ``pad_end`` the (bottom, right) pair, and ``pads`` all four; an int or a pair pads both
    sides alike. mode="conv" is cross-correlation as in PyTorch's conv2d; mode="transpose" is PyTorch's
    conv_transpose2d, whose weights are laid out (C_in, C_out / groups, R, S).
    """

    pad: tuple[int, int]
    pad_end: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    groups: int
    mode: str
    output_padding: tuple[int, int]
    math_mode: str | None
    _key: tuple = field(repr=False, compare=False)
    _hash: int = field(repr=False, compare=False)

    def __init__(self, pad: IntPair = 0, stride: IntPair = 1, dilation: IntPair = 1, groups: int = 1,
                 mode: str = "conv", output_padding: IntPair = 0, math_mode: str | None = None):
        sides = _sides(pad)
        stride_, dil_, op = (_pair(v, f) for v, f in ((stride, "stride"), (dilation, "dilation"),
                                                      (output_padding, "output_padding")))
        check(all(p >= 0 for p in sides), "pad", f"must be >= 0, got {pad!r}")
        check(all(s > 0 for s in stride_), "stride", f"must be > 0, got {stride_}")
        check(all(d > 0 for d in dil_), "dilation", f"must be > 0, got {dil_}")
        groups_ = as_int(groups, "groups")
        check(groups_ > 0, "groups", f"must be a positive int, got {groups!r}")
        check(mode in ("conv", "transpose"), "mode", f"must be 'conv' or 'transpose', got {mode!r}")
        check(all(o >= 0 for o in op), "output_padding", f"must be >= 0, got {op}")
        check(mode == "transpose" or op == (0, 0), "output_padding", "only applies to mode='transpose'")
        check(all(o < max(s, d) for o, s, d in zip(op, stride_, dil_)), "output_padding",
              f"must be smaller than stride or dilation, got {op}")
        if math_mode is not None:
            check_math_mode(math_mode)
        key = ((sides[0], sides[2]), (sides[1], sides[3]), stride_, dil_, groups_, mode, op, math_mode)
        for name, value in zip(("pad", "pad_end", "stride", "dilation", "groups", "mode", "output_padding",
                                "math_mode", "_key", "_hash"), (*key, key, hash(key))):
            object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConvDesc):
            return NotImplemented
        return self is other or self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        return (ConvDesc, (self.pads, self.stride, self.dilation, self.groups, self.mode, self.output_padding,
                           self.math_mode))

    @property
    def pads(self) -> tuple[int, int, int, int]:
        """(top, bottom, left, right)."""
        return self.pad[0], self.pad_end[0], self.pad[1], self.pad_end[1]

    @property
    def is_symmetric(self) -> bool:
        """Whether each axis is padded alike at both ends (MIOpen's pairs)."""
        return self.pad == self.pad_end

    def pad_text(self) -> str:
        """"1x1" for symmetric padding, "top,bottomxleft,right" otherwise (problem keys, messages)."""
        if self.is_symmetric:
            return f"{self.pad[0]}x{self.pad[1]}"
        return f"{self.pad[0]},{self.pad_end[0]}x{self.pad[1]},{self.pad_end[1]}"

    def output_desc(self, x_desc: TensorDesc, w_desc: TensorDesc) -> TensorDesc:
        """Descriptor of the output for input x and weights w (PyTorch's shape formulas)."""
        _check_operands(self, x_desc, w_desc)
        n, _, h, w = x_desc.dims
        _, _, r, s = w_desc.dims
        if self.mode == "conv":
            k = w_desc.n
            out = [(size + p + e - d * (f - 1) - 1) // st + 1
                   for size, p, e, d, f, st in zip((h, w), self.pad, self.pad_end, self.dilation, (r, s), self.stride)]
        else:
            k = w_desc.c * self.groups
            out = [(size - 1) * st - p - e + d * (f - 1) + o + 1
                   for size, p, e, d, f, st, o in zip((h, w), self.pad, self.pad_end, self.dilation, (r, s),
                                                      self.stride, self.output_padding)]
        check(out[0] > 0 and out[1] > 0, "pad",
              f"output would be {out[0]}x{out[1]}: filter {r}x{s} (dilation {self.dilation}) does not fit "
              f"input {h}x{w} with pad {self.pad_text()}")
        return TensorDesc(x_desc.dtype, (n, k, out[0], out[1]))


def _check_operands(conv: ConvDesc, x_desc: TensorDesc, w_desc: TensorDesc) -> None:
    check(isinstance(x_desc, TensorDesc), "x_desc", "must be a TensorDesc")
    check(isinstance(w_desc, TensorDesc), "w_desc", "must be a TensorDesc")
    check(x_desc.dtype == w_desc.dtype, "w_desc.dtype",
          f"{w_desc.dtype.value} does not match input {x_desc.dtype.value}")
    g = conv.groups
    if conv.mode == "conv":
        check(w_desc.n % g == 0, "w_desc.dims", f"output channels K={w_desc.n} not divisible by groups={g}")
        check(x_desc.c == w_desc.c * g, "w_desc.dims",
              f"input channels C={x_desc.c} != weights C/groups={w_desc.c} x groups={g}")
    else:
        check(x_desc.c == w_desc.n, "w_desc.dims",
              f"input channels {x_desc.c} != transpose weights' first dim {w_desc.n}")
        check(w_desc.n % g == 0, "w_desc.dims", f"input channels {w_desc.n} not divisible by groups={g}")


@dataclass(frozen=True)
class ConvProblem:
    """One convolution in convolution terms: x (N,C,H,W) * w (K,C/g,R,S) -> y (N,K,P,Q), plus direction.

    For every direction the descriptors keep their forward roles: backward-data computes x from y and w,
    backward-weights computes w from x and y. Transpose convolutions are mapped onto this form by the
    API layer (their forward is this problem's backward-data).

    math_mode is the resolved math mode ("strict" or "tf32"; always "strict" for fp16 data, whose products
    are exact in fp32 whatever unit computes them): solvers that use tensor cores on fp32 data apply only
    under "tf32". The key carries it ("-tf32"), so DB records of one mode never serve the other.
    """

    direction: Direction
    x: TensorDesc
    w: TensorDesc
    y: TensorDesc
    conv: ConvDesc
    math_mode: str = STRICT
    registry: ClassVar[Registry]   # set by miopy.conv.registry

    @classmethod
    def create(cls, direction: Direction | int, x: TensorDesc, w: TensorDesc, conv: ConvDesc,
               y: TensorDesc | None = None, math_mode: str | None = None) -> ConvProblem:
        """Validate and build; y is derived from x, w and conv unless given (then it must match). math_mode
        is the handle's default (None: none), used when conv names none (resolve_math_mode)."""
        check(isinstance(conv, ConvDesc), "conv_desc", "must be a ConvDesc")
        check(conv.mode == "conv", "conv.mode", "ConvProblem is in convolution terms; map transpose first")
        direction = direction_of(direction)
        check(y is None or isinstance(y, TensorDesc), "y_desc", "must be a TensorDesc")
        expected = conv.output_desc(x, w)
        if y is None:
            y = expected
        check(y.dtype == x.dtype, "y_desc.dtype", f"{y.dtype.value} does not match input {x.dtype.value}")
        check(y.dims == expected.dims, "y_desc.dims", f"expected {expected.dims}, got {y.dims}")
        mode = resolve_math_mode(conv.math_mode, math_mode)
        return cls(direction, x, w, y, conv, mode if x.dtype is DataType.FLOAT32 else STRICT)

    def with_direction(self, direction: Direction) -> ConvProblem:
        return ConvProblem(Direction(direction), self.x, self.w, self.y, self.conv, self.math_mode)

    def as_fully_connected(self) -> ConvProblem | None:
        """This problem as a 1x1 convolution of 1x1 images over C*H*W input channels where it is one: packed tensors
        and a filter covering the whole unpadded image (one output pixel), larger than 1x1. Same memory, same sums:
        x[n][c][h][w] is x'[n][c*H*W + h*W + w], w[k][c][r][s] likewise, groups keep their channels. A GEMM
        solver then sees the fully-connected layer it is instead of R*S taps, of which backward-data's gather
        reads one in R*S. None where it is not one."""
        if not (self.is_packed and self.r * self.s > 1 and self.r == self.in_h and self.s == self.in_w
                and self.out_h == self.out_w == 1 and self.conv.pads == (0, 0, 0, 0)):
            return None
        area = self.in_h * self.in_w
        x = TensorDesc(self.dtype, (self.n, self.c * area, 1, 1))
        w = TensorDesc(self.dtype, (self.k, self.c_per_group * area, 1, 1))
        conv = ConvDesc(groups=self.groups, math_mode=self.conv.math_mode)
        return ConvProblem(self.direction, x, w, self.y, conv, self.math_mode)

    # Sizes, named as in the papers: N, C, H, W input; K, R, S filters; P, Q output.
    n = property(lambda self: self.x.n)
    c = property(lambda self: self.x.c)
    in_h = property(lambda self: self.x.h)
    in_w = property(lambda self: self.x.w)
    k = property(lambda self: self.w.n)
    r = property(lambda self: self.w.h)
    s = property(lambda self: self.w.w)
    out_h = property(lambda self: self.y.h)
    out_w = property(lambda self: self.y.w)
    groups = property(lambda self: self.conv.groups)
    pad_h = property(lambda self: self.conv.pad[0])          # top: the kernels index with the begin pads
    pad_w = property(lambda self: self.conv.pad[1])          # left
    pad_h_end = property(lambda self: self.conv.pad_end[0])  # bottom: implied by H, R and P
    pad_w_end = property(lambda self: self.conv.pad_end[1])  # right
    stride_h = property(lambda self: self.conv.stride[0])
    stride_w = property(lambda self: self.conv.stride[1])
    dil_h = property(lambda self: self.conv.dilation[0])
    dil_w = property(lambda self: self.conv.dilation[1])
    dtype = property(lambda self: self.x.dtype)

    @property
    def c_per_group(self) -> int:
        return self.c // self.groups

    @property
    def k_per_group(self) -> int:
        return self.k // self.groups

    @property
    def is_packed(self) -> bool:
        return self.x.is_packed and self.w.is_packed and self.y.is_packed

    def key(self) -> str:
        """MIOpen-like readable key: C-H-W-RxS-K-P-Q-N-pads-strides-dilations-bias-layout-dtype-dir[-gG]
        [-tf32][-s<strides>]: the math mode appears when it is not strict, so strict keys stay MIOpen's."""
        key = self.__dict__.get("_key")
        if key is None:
            key = self._make_key()
            object.__setattr__(self, "_key", key)
        return key

    def _make_key(self) -> str:
        parts = [self.c, self.in_h, self.in_w, f"{self.r}x{self.s}", self.k, self.out_h, self.out_w, self.n,
                 self.conv.pad_text(), f"{self.stride_h}x{self.stride_w}",
                 f"{self.dil_h}x{self.dil_w}", 0, "NCHW", self.dtype.value, self.direction.letter]
        key = "-".join(str(p) for p in parts)
        if self.groups > 1:
            key += f"-g{self.groups}"
        if self.math_mode != STRICT:
            key += f"-{self.math_mode}"
        if not self.is_packed:
            key += "-s" + "_".join(",".join(map(str, d.strides)) for d in (self.x, self.w, self.y))
        return key

    # -- what the shared machinery asks of a problem (miopy.solver.Problem) ------------------------------
    def tensors(self) -> Mapping[str, TensorDesc]:
        return {"x": self.x, "w": self.w, "y": self.y}

    def outputs(self) -> tuple[str, ...]:
        return (OUTPUT_ROLE[self.direction],)

    def reduction_length(self) -> int:
        """Terms summed into each output: C/g*R*S forward, K/g*R*S backward-data, N*P*Q backward-weights."""
        if self.direction is Direction.FORWARD:
            return self.c_per_group * self.r * self.s
        if self.direction is Direction.BACKWARD_DATA:
            return self.k_per_group * self.r * self.s
        return self.n * self.out_h * self.out_w

    def flops(self) -> int:
        """Useful FLOPs: 2*N*K*P*Q*(C/groups)*R*S, the same for every direction."""
        return 2 * self.n * self.k * self.out_h * self.out_w * self.c_per_group * self.r * self.s

    def bytes(self) -> int:
        """Bytes of x, w and y, each moved once."""
        return sum(d.element_count * d.dtype.itemsize for d in (self.x, self.w, self.y))

    def driver_args(self) -> str:
        """The miopy-driver flags that describe this problem."""
        ends = "" if self.conv.is_symmetric else f"--pad_h_end {self.pad_h_end} --pad_w_end {self.pad_w_end} "
        return (f"-n {self.n} -c {self.c} -H {self.in_h} -W {self.in_w} -k {self.k} -y {self.r} -x {self.s} "
                f"-p {self.pad_h} -q {self.pad_w} {ends}-u {self.stride_h} -v {self.stride_w} "
                f"-l {self.dil_h} -j {self.dil_w} -g {self.groups} -F {int(self.direction)}")

    def driver_command(self) -> str:
        """The miopy-driver sub-command (conv, or convfp16 for FP16 data) and flags that describe this problem,
        with its math mode when not strict."""
        command = "convfp16" if self.dtype is DataType.FLOAT16 else "conv"
        mode = f" --math_mode {self.math_mode}" if self.math_mode != STRICT else ""
        return f"{command} {self.driver_args()}{mode}"

    def __str__(self) -> str:
        return self.key()



# Which problem tensor each direction writes.
OUTPUT_ROLE = {Direction.FORWARD: "y", Direction.BACKWARD_DATA: "x", Direction.BACKWARD_WEIGHTS: "w"}
# User-facing names of the forward roles x, w, y, per direction.
FIELDS = {Direction.FORWARD: {"x": "x", "w": "w", "y": "y"},
          Direction.BACKWARD_DATA: {"x": "dx", "w": "w", "y": "dy"},
          Direction.BACKWARD_WEIGHTS: {"x": "x", "w": "dw", "y": "dy"}}


def direction_of(value, field: str = "direction") -> Direction:
    """A Direction from a member or its MIOpenDriver value (1, 2, 4); BadParam(field) otherwise."""
    if isinstance(value, Direction):
        return value
    try:
        return Direction(as_int(value, field))
    except ValueError:
        raise BadParam(field, f"must be 1, 2 or 4, got {value!r}") from None


def directions(forw: int) -> list[Direction]:
    """MIOpenDriver's -F value as directions: 0 is all three."""
    return list(Direction) if forw == 0 else [direction_of(forw, "-F")]


@dataclass(frozen=True)
class ProblemMapping:
    """A user-level call mapped onto a ConvProblem; roles[problem_role] = the user's tensor (x, w or y)."""

    problem: ConvProblem
    roles: Mapping[str, str]

    def fields(self, direction: Direction) -> dict[str, str]:
        """Problem role -> the user's field name in this call (dx, dy, dw ... for messages)."""
        names = FIELDS[direction]
        return {prole: names[urole] for prole, urole in self.roles.items()}


def map_problem(direction, x_desc: TensorDesc, w_desc: TensorDesc, conv: ConvDesc,
                y_desc: TensorDesc | None = None, math_mode: str | None = None) -> ProblemMapping:
    """Map (direction, user descriptors) to a ConvProblem. x is the op's input, y its output.

    A transpose convolution's forward is the backward-data of the convolution whose input is the
    transpose's output; its backward-data is that convolution's forward; backward-weights swaps x and y.
    math_mode is the handle's default (see ConvProblem.create).
    """
    check(isinstance(conv, ConvDesc), "conv_desc", "must be a ConvDesc")
    direction = direction_of(direction)
    if conv.mode == "conv":
        return ProblemMapping(ConvProblem.create(direction, x_desc, w_desc, conv, y_desc, math_mode),
                              {"x": "x", "w": "w", "y": "y"})
    expected = conv.output_desc(x_desc, w_desc)
    if y_desc is not None:
        check(isinstance(y_desc, TensorDesc), "y_desc", "must be a TensorDesc")
        check(y_desc.dims == expected.dims, "y_desc.dims", f"expected {expected.dims}, got {y_desc.dims}")
    conv_as_conv = ConvDesc(conv.pads, conv.stride, conv.dilation, conv.groups, "conv", math_mode=conv.math_mode)
    out = y_desc or expected
    problem = ConvProblem.create(_TRANSPOSE_DIRECTION[direction], out, w_desc, conv_as_conv, x_desc, math_mode)
    return ProblemMapping(problem, {"x": "y", "w": "w", "y": "x"})


_TRANSPOSE_DIRECTION = {Direction.FORWARD: Direction.BACKWARD_DATA, Direction.BACKWARD_DATA: Direction.FORWARD,
                        Direction.BACKWARD_WEIGHTS: Direction.BACKWARD_WEIGHTS}
