"""Defines every pooling kernel shares: dims, window geometry, element strides and the storage type."""
from __future__ import annotations

from ...tensor import TensorDesc
from ..problem import Direction, PoolingProblem


def strides(prefix: str, desc: TensorDesc) -> dict[str, int]:
    """prefix##S_N ... prefix##S_W: the element strides of desc."""
    return {f"{prefix}S_{axis}": stride for axis, stride in zip("NCHW", desc.strides)}


def problem_defines(p: PoolingProblem) -> dict[str, int]:
    """MODE, dims, window, strides, pads, tensor strides and MIOPY_HALF of p (x / dx as X, y / dy as Y)."""
    d = p.desc
    top, bottom, left, right = d.pads
    return {"MODE": int(d.mode), "N": p.x.n, "C": p.x.c, "H": p.x.h, "W": p.x.w, "OH": p.y.h, "OW": p.y.w,
            "KH": d.window[0], "KW": d.window[1], "SH": d.strides[0], "SW": d.strides[1],
            "PT": top, "PB": bottom, "PL": left, "PR": right, **strides("X", p.x), **strides("Y", p.y),
            **p.dtype.defines}


def roles(p: PoolingProblem) -> tuple[str, ...]:
    """The kernel's buffer arguments in order."""
    if p.direction is Direction.FORWARD:
        return ("x", "y", "indices") if p.save_indices else ("x", "y")
    return ("dx", "dy", "indices") if p.desc.is_max else ("dx", "dy")
