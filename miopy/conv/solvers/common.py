"""Defines every convolution kernel shares: problem sizes and the storage type as compile-time constants."""
from __future__ import annotations

from ..problem import ConvProblem


def problem_defines(p: ConvProblem) -> dict[str, int]:
    """Sizes, pads, strides, dilations and groups of p as -D defines (so index arithmetic folds), and the
    data type's (MIOPY_HALF, kernels/types.h): the kernel cache key names the dtype through them."""
    return {**p.dtype.defines, "N": p.n, "C": p.c, "H": p.in_h, "W": p.in_w, "K": p.k, "R": p.r, "S": p.s,
            "P": p.out_h, "Q": p.out_w, "G": p.groups, "PAD_H": p.pad_h, "PAD_W": p.pad_w,
            "STRIDE_H": p.stride_h, "STRIDE_W": p.stride_w, "DIL_H": p.dil_h, "DIL_W": p.dil_w}


def stride_defines(p: ConvProblem) -> dict[str, int]:
    """Element strides of x, w and y as XS_*, WS_*, YS_* defines."""
    out = {}
    for prefix, desc, names in (("XS", p.x, "NCHW"), ("WS", p.w, "KCRS"), ("YS", p.y, "NKPQ")):
        out.update({f"{prefix}_{a}": st for a, st in zip(names, desc.strides)})
    return out
