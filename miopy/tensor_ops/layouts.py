"""The kernels of SetTensor, ScaleTensor and TransformTensor, chosen by layout (tensor_ops.cl).

- Dense tensors (the elements addressed are exactly offsets 0 .. count-1, in any layout; for TransformTensor
  both with one layout): flat 16-byte vector accesses in a grid-stride loop, since the order of elements
  does not matter to an element-wise op.
- TransformTensor between layouts whose contiguous axes differ (NCHW <-> NHWC, ...): a tiled transpose
  through local memory, so reads of x and writes of y are both coalesced.
- Anything else: one work-item per element through both tensors' strides.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..kernel_cache import KernelSpec
from ..solver import KernelLaunch, ceil_div, round_up
from ..tensor import TensorDesc

WG = 256
FLAT_UNROLL = 4       # vectors per work-item in the flat kernels' grid-stride loop
VECTOR_BYTES = 16     # one float4 or one half8 per access
TILE, ROWS = 32, 8    # transform_tiled's tile and work-group (TILE x ROWS work-items)
TILED_MIN = 16        # both transposed axes at least this long; a narrower tile leaves most lanes idle


@dataclass(frozen=True)
class Axis:
    """One axis of an index space: its length and the element strides of x and y along it."""

    size: int
    x: int
    y: int


def is_dense(desc: TensorDesc) -> bool:
    """The elements desc addresses are exactly offsets 0 .. count-1 (no gaps; TensorDesc forbids overlap)."""
    return desc.element_span == desc.element_count


def flat_launch(kernel: str, desc: TensorDesc, args: tuple) -> KernelLaunch:
    """kernel (set_flat, scale_flat, transform_flat) over the dense desc's element_count elements."""
    vec = VECTOR_BYTES // desc.dtype.itemsize
    count = desc.element_count
    stride = round_up(max(1, ceil_div(count // vec, FLAT_UNROLL)), WG)
    defines = {"FLAT": 1, "VEC": vec, "COUNT": count, "STRIDE": stride, "UNROLL": FLAT_UNROLL, **desc.dtype.defines}
    return KernelLaunch(KernelSpec.make("tensor_ops.cl", kernel, defines), (stride,), (WG,), args)


def merged_axes(x: TensorDesc, y: TensorDesc) -> list[Axis]:
    """x's dims without those of length 1, neighbours merged where both x and y step over them as one axis
    (NCHW's H and W, NHWC's H and W), outermost first."""
    axes: list[Axis] = []
    for size, sx, sy in zip(x.dims, x.strides, y.strides):
        if size == 1:
            continue
        if axes and axes[-1].x == size * sx and axes[-1].y == size * sy:
            axes[-1] = Axis(axes[-1].size * size, sx, sy)
        else:
            axes.append(Axis(size, sx, sy))
    return axes


def tiled_axes(x: TensorDesc, y: TensorDesc) -> tuple[Axis, Axis, Axis, Axis] | None:
    """(A, B, P, Q) for transform_tiled: A is x's contiguous axis, B is y's (another one), both at least
    TILED_MIN long; P and Q the other axes (length 1 where absent). None where the tiled kernel does not fit."""
    axes = merged_axes(x, y)
    a = next((i for i, ax in enumerate(axes) if ax.x == 1), None)
    b = next((i for i, ax in enumerate(axes) if ax.y == 1), None)
    if a is None or b is None or a == b or min(axes[a].size, axes[b].size) < TILED_MIN:
        return None
    rest = [ax for i, ax in enumerate(axes) if i not in (a, b)]
    if len(rest) > 2:
        return None
    p, q = [Axis(1, 0, 0)] * (2 - len(rest)) + rest
    return axes[a], axes[b], p, q


def tiled_launch(x: TensorDesc, axes: tuple[Axis, Axis, Axis, Axis], args: tuple) -> KernelLaunch:
    """transform_tiled: one work-group per TILE x TILE tile of (A, B) per (p, q)."""
    a, b, p, q = axes
    tiles_a, tiles_b = ceil_div(a.size, TILE), ceil_div(b.size, TILE)
    defines = {"TILED": 1, "TILE": TILE, "ROWS": ROWS, "TA": a.size, "TB": b.size, "TILES_A": tiles_a,
               "TILES_B": tiles_b, "DQ": q.size, "XA": a.x, "XB": b.x, "XP": p.x, "XQ": q.x, "YA": a.y, "YB": b.y,
               "YP": p.y, "YQ": q.y, **x.dtype.defines}
    groups = tiles_a * tiles_b * p.size * q.size
    spec = KernelSpec.make("tensor_ops.cl", "transform_tiled", defines)
    return KernelLaunch(spec, (groups * TILE * ROWS,), (TILE * ROWS,), args)
