"""What both LRN kernels take: window, dims, every tensor's strides, and the numbers as arguments."""
from __future__ import annotations

import numpy as np

from ...solver import Arg
from ..problem import Direction, LRNProblem

PREFIX = {"x": "X", "y": "Y", "scale": "S", "dx": "DX", "dy": "DY"}


def kernel_defines(p: LRNProblem) -> dict[str, int]:
    """LRN_N, LRN_PRE, LRN_POST, MODE, dims, SAVE_SCALE, T##S_* strides of each tensor, MIOPY_HALF."""
    d = p.desc
    n, c, h, w = p.shape.dims
    defines = {"MODE": int(d.mode), "LRN_N": d.n, "LRN_PRE": d.pre, "LRN_POST": d.post, "N": n, "C": c, "H": h,
               "W": w, "SAVE_SCALE": int(p.save_scale), **p.dtype.defines}
    for role, t in p.tensors().items():
        defines.update({f"{PREFIX[role]}S_{axis}": s for axis, s in zip("NCHW", t.strides)})
    return defines


def kernel_args(p: LRNProblem) -> tuple[Arg, ...]:
    """Buffer roles then numbers (alpha / area, beta, and k forward), in the kernels' order."""
    d = p.desc
    numbers: tuple[Arg, ...] = (np.float32(d.alpha / d.area), np.float32(d.beta))
    if p.direction is Direction.FORWARD:
        return ("x", "y", *(("scale",) if p.save_scale else ()), *numbers, np.float32(d.k))
    return ("dx", "dy", "x", "scale", *numbers)


def kernel_suffix(p: LRNProblem) -> str:
    return "fwd" if p.direction is Direction.FORWARD else "bwd"
