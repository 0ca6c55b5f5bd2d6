"""Layout copies the graph needs between primitives: concatenation into a slice, transposition, padding and
broadcasting (expansion), as plans over one kernel (kernels/tensor_layout.cl) configured by an index map.

Shapes are logical (rank 1 to 6, row-major packed); each plan is memoised per handle by its geometry.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import NotSupported, check
from ..handle import Handle
from ..kernel_cache import KernelSpec
from ..plan import Operand, Plan, memo_plan
from ..pointwise import MAX_ELEMENTS, WORK_GROUP
from ..solver import KernelLaunch, Solution, round_up
from ..tensor import DataType, TensorDesc, packed_strides

RANK = 6
PAD_MODES = {"none": 0, "constant": 1, "reflect": 2, "edge": 3}


def flat_desc(count: int) -> TensorDesc:
    """A packed FP32 descriptor of count elements (what a plan checks a buffer's size against)."""
    return TensorDesc(DataType.FLOAT32, (1, 1, 1, count))


def _six(values: Sequence[int], fill: int) -> tuple[int, ...]:
    check(len(values) <= RANK, "shape", f"rank {len(values)} > {RANK}")
    return (fill,) * (RANK - len(values)) + tuple(int(v) for v in values)


def _plan(handle: Handle, name: str, space: Sequence[int], src: tuple[int, int], dst: tuple[int, int],
          src_strides: Sequence[int], dst_strides: Sequence[int], pad_mode: str = "none",
          pad_begin: Sequence[int] = (), src_dims: Sequence[int] = ()) -> Plan:
    """A copy over index space with the given strides; src / dst are (element offset, element count)."""
    count = math.prod(space)
    if max(count, src[1], dst[1]) > MAX_ELEMENTS:
        raise NotSupported(f"{name}: more than 2^31 - 1 elements")
    defines = {"COUNT": count, "SRC_OFF": src[0], "DST_OFF": dst[0], "PAD_MODE": PAD_MODES[pad_mode]}
    for prefix, values, fill in (("D", space, 1), ("SS", src_strides, 0), ("DS", dst_strides, 0),
                                 ("PB", pad_begin or (0,) * len(space), 0), ("SD", src_dims or space, 1)):
        defines.update({f"{prefix}{i}": v for i, v in enumerate(_six(values, fill))})
    spec = KernelSpec.make("tensor_layout.cl", "layout_copy", defines)
    launch = KernelLaunch(spec, (round_up(count, WORK_GROUP),), (WORK_GROUP,), ("x", "y", "value"))
    ops = (Operand("x", "x", flat_desc(src[1])), Operand("y", "y", flat_desc(dst[1]), written=True))
    return Plan(handle, Solution(name, {}, (launch,)), ops)


def concat_plan(handle: Handle, part: Sequence[int], whole: Sequence[int], axis: int, offset: int) -> Plan:
    """Copies x of shape part into y of shape whole at offset along axis (one input of a concatenation)."""
    key = ("onnx.layout_concat", tuple(part), tuple(whole), axis, offset)

    def build() -> Plan:
        strides = packed_strides(tuple(whole))
        return _plan(handle, "Concat", part, (0, math.prod(part)), (offset * strides[axis], math.prod(whole)),
                     packed_strides(tuple(part)), strides)
    return memo_plan(handle, key, build)


def transpose_plan(handle: Handle, shape: Sequence[int], perm: Sequence[int]) -> Plan:
    """y = x transposed by perm (numpy.transpose's convention)."""
    key = ("onnx.layout_transpose", tuple(shape), tuple(perm))

    def build() -> Plan:
        out = tuple(shape[p] for p in perm)
        src = packed_strides(tuple(shape))
        return _plan(handle, "Transpose", out, (0, math.prod(shape)), (0, math.prod(out)),
                     tuple(src[p] for p in perm), packed_strides(out))
    return memo_plan(handle, key, build)


def pad_plan(handle: Handle, shape: Sequence[int], begins: Sequence[int], ends: Sequence[int],
             mode: str = "constant") -> Plan:
    """y = x padded by begins / ends per axis (negative: cropped); run with scalars {"value": v}."""
    key = ("onnx.layout_pad", tuple(shape), tuple(begins), tuple(ends), mode)

    def build() -> Plan:
        out = tuple(d + b + e for d, b, e in zip(shape, begins, ends))
        return _plan(handle, "Pad", out, (0, math.prod(shape)), (0, math.prod(out)), packed_strides(tuple(shape)),
                     packed_strides(out), mode, begins, shape)
    return memo_plan(handle, key, build)


def expand_plan(handle: Handle, shape: Sequence[int], out: Sequence[int]) -> Plan:
    """y = x broadcast to out (numpy.broadcast_to, materialised): shape has out's rank, each dim out's or 1."""
    key = ("onnx.layout_expand", tuple(shape), tuple(out))

    def build() -> Plan:
        check(len(shape) == len(out) and all(d in (1, o) for d, o in zip(shape, out)), "shape",
              f"{tuple(shape)} does not broadcast to {tuple(out)}")
        strides = tuple(0 if d != o else s for d, o, s in zip(shape, out, packed_strides(tuple(shape))))
        return _plan(handle, "Expand", out, (0, math.prod(shape)), (0, math.prod(out)), strides,
                     packed_strides(tuple(out)))
    return memo_plan(handle, key, build)


def pad_value(value: float) -> dict:
    return {"value": np.float32(value)}


NO_VALUE = pad_value(0.0)
