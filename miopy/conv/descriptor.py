"""The convolution descriptor (MIOpen's miopenConvolutionDescriptor_t): padding, stride, dilation, groups, mode
(convolution or transpose) and math mode, with PyTorch's output-shape rules."""
from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from .. import config
from ..errors import check
from ..tensor import STRICT, TensorDesc, as_int, check_math_mode, int_tuple

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
