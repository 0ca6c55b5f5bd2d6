"""miopenPoolingMode_t and the pooling descriptor: window, per-side padding, strides, PyTorch's ceil_mode."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from ..errors import BadParam, check
from ..tensor import TensorDesc, as_int, enum_member, int_tuple

INDEX_BYTES = np.dtype(np.int32).itemsize   # max pooling saves one int32 per output: the argmax's flat offset
                                            # h * W + w in its input plane


class PoolingMode(enum.IntEnum):
    """miopenPoolingMode_t: values are MIOpen's."""

    MAX = 0
    AVERAGE = 1               # padding excluded from the divisor (PyTorch's count_include_pad=False)
    AVERAGE_INCLUSIVE = 2     # padding included in the divisor (count_include_pad=True)

    @classmethod
    def of(cls, value: PoolingMode | int | str, field: str = "mode") -> PoolingMode:
        """A member, its int value or its name (any case; MIOpenDriver's max / avg / avg_in too)."""
        aliases = {"AVG": cls.AVERAGE, "AVG_IN": cls.AVERAGE_INCLUSIVE}
        if isinstance(value, str) and value.upper() in aliases:
            return aliases[value.upper()]
        return enum_member(cls, value, field, "pooling mode")


@dataclass(frozen=True, eq=False)
class PoolingDesc:
    """A 2-D pooling: mode, window (h, w), pads (top, bottom, left, right), strides (h, w), ceil_mode.

    pads take an int (every side), MIOpen's (pad_h, pad_w) pair, or four per-side values (top, bottom,
    left, right) for the asymmetric padding ONNX models use. strides default to the window (PyTorch's
    default). ceil_mode rounds the output size up as PyTorch does: the last window may hang over the
    bottom / right padding but always starts inside the input or the top / left padding.
    Descriptors are hashable and compare by value; the hash is computed once.
    """

    mode: PoolingMode
    window: tuple[int, int]
    pads: tuple[int, int, int, int]
    strides: tuple[int, int]
    ceil_mode: bool = False
    _hash: int = field(init=False, repr=False, compare=False)

    def __init__(self, mode, window, pads=0, strides=None, ceil_mode: bool = False):
        window_t = _pair(window, "window")
        strides_t = window_t if strides is None else _pair(strides, "strides")
        pads_t = _pads(pads)
        check(all(k > 0 for k in window_t), "window", f"must be positive, got {window_t}")
        check(all(s > 0 for s in strides_t), "strides", f"must be positive, got {strides_t}")
        check(all(p >= 0 for p in pads_t), "pads", f"must be non-negative, got {pads_t}")
        for axis, (before, after), k in (("h", pads_t[:2], window_t[0]), ("w", pads_t[2:], window_t[1])):
            check(before < k and after < k, "pads", f"pads {before}, {after} along {axis} must be smaller than "
                                                    f"the window {k}: a window would cover padding only")
        check(isinstance(ceil_mode, bool), "ceil_mode", f"must be a bool, got {ceil_mode!r}")
        values = (PoolingMode.of(mode), window_t, pads_t, strides_t, ceil_mode)
        for name, value in zip(("mode", "window", "pads", "strides", "ceil_mode"), values):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_hash", hash(values))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, PoolingDesc):
            return NotImplemented
        return (self._hash == other._hash and self.mode is other.mode and self.window == other.window
                and self.pads == other.pads and self.strides == other.strides and self.ceil_mode == other.ceil_mode)

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        return (PoolingDesc, (self.mode, self.window, self.pads, self.strides, self.ceil_mode))

    @classmethod
    def same(cls, mode, window, strides, x_desc: TensorDesc, upper: bool = True) -> PoolingDesc:
        """'Same' padding for x_desc (MIOpen's miopenPaddingSame, ONNX's auto_pad SAME_UPPER / SAME_LOWER):
        output ceil(in / stride); the odd pad goes after (upper) or before."""
        window_t, strides_t = _pair(window, "window"), _pair(strides, "strides")
        h = same_pads(x_desc.h, window_t[0], strides_t[0], upper)
        w = same_pads(x_desc.w, window_t[1], strides_t[1], upper)
        return cls(mode, window_t, h + w, strides_t)

    @property
    def is_max(self) -> bool:
        return self.mode is PoolingMode.MAX

    def output_dims(self, x_desc: TensorDesc) -> tuple[int, int, int, int]:
        """N, C, out_h, out_w (MIOpen's miopenGetPoolingForwardOutputDim); BadParam if the window does not fit."""
        check(isinstance(x_desc, TensorDesc), "x_desc", "must be a TensorDesc")
        top, bottom, left, right = self.pads
        out_h = output_size(x_desc.h, self.window[0], self.strides[0], top, bottom, self.ceil_mode, "x_desc.h")
        out_w = output_size(x_desc.w, self.window[1], self.strides[1], left, right, self.ceil_mode, "x_desc.w")
        return (x_desc.n, x_desc.c, out_h, out_w)

    def output_desc(self, x_desc: TensorDesc) -> TensorDesc:
        """The packed output descriptor for input x_desc."""
        return TensorDesc(x_desc.dtype, self.output_dims(x_desc))

    def workspace_bytes(self, y_desc: TensorDesc) -> int:
        """Bytes of the index workspace a forward with do_backward saves for the backward (MIOpen's
        miopenPoolingGetWorkSpaceSizeV2): one int32 per output element for max pooling, none for average."""
        check(isinstance(y_desc, TensorDesc), "y_desc", "must be a TensorDesc")
        return y_desc.element_count * INDEX_BYTES if self.is_max else 0

    def __repr__(self) -> str:
        return (f"PoolingDesc({self.mode.name}, window={self.window}, pads={self.pads}, strides={self.strides}"
                f"{', ceil_mode=True' if self.ceil_mode else ''})")


def output_size(size: int, window: int, stride: int, before: int, after: int, ceil_mode: bool,
                field: str = "x_desc") -> int:
    """PyTorch's pooling output size with per-side pads (floor, or ceil with the last window starting
    inside the input or the leading pad)."""
    span = size + before + after - window
    check(span >= 0, field, f"{size} plus pads {before} + {after} is smaller than the window {window}")
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + before:
        out -= 1
    return out


def same_pads(size: int, window: int, stride: int, upper: bool = True) -> tuple[int, int]:
    """(before, after) pads giving ceil(size / stride) outputs; the odd one goes after when upper."""
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    small, large = total // 2, total - total // 2
    return (small, large) if upper else (large, small)


def _pair(value, field: str) -> tuple[int, int]:
    if isinstance(value, (tuple, list)):
        items = int_tuple(value, field)
        check(len(items) == 2, field, f"expected an int or an (h, w) pair, got {value!r}")
        return items[0], items[1]
    v = as_int(value, field)
    return v, v


def _pads(value) -> tuple[int, int, int, int]:
    if not isinstance(value, (tuple, list)):
        v = as_int(value, "pads")
        return v, v, v, v
    items = int_tuple(value, "pads")
    if len(items) == 2:
        return items[0], items[0], items[1], items[1]
    if len(items) == 4:
        return items[0], items[1], items[2], items[3]
    raise BadParam("pads", f"expected an int, (pad_h, pad_w) or (top, bottom, left, right), got {value!r}")
