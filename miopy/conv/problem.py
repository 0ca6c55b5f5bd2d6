"""Convolution direction and problem (the unit find, the DBs and the solvers work on), and the mapping of a
user's call (any direction, convolution or transpose) onto a problem."""
from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..errors import BadParam, check
from ..tensor import STRICT, DataType, TensorDesc, as_int
from .descriptor import ConvDesc, resolve_math_mode

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
