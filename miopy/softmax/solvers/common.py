"""What both softmax kernels take: the problem's defines, with dims folded where every tensor allows."""
from __future__ import annotations

from ..descriptor import SoftmaxMode
from ..problem import Direction, SoftmaxProblem

PREFIX = {"x": "X", "y": "Y", "dy": "DY", "dx": "DX"}


def kernel_defines(p: SoftmaxProblem) -> dict[str, int]:
    """ALGO, MODE, dims and every tensor's strides (T##S_N ...), MIOPY_HALF.

    Dims are folded where every tensor's strides allow, so the kernel's index arithmetic shrinks: H into W
    when each row of W elements continues into the next (S_H == W * S_W), and in instance mode C into that
    run too (S_C == H * S_H), leaving a packed row as N x 1 x 1 x L."""
    n, c, h, w = p.shape.dims
    strides = {role: list(t.strides) for role, t in p.tensors().items()}
    if h > 1 and all(s[2] == w * s[3] for s in strides.values()):
        h, w = 1, h * w
    if p.desc.mode is SoftmaxMode.INSTANCE and h == 1 and c > 1 and all(s[1] == w * s[3] for s in strides.values()):
        c, w = 1, c * w
    defines = {"ALGO": int(p.desc.algorithm), "MODE": int(p.desc.mode), "N": n, "C": c, "H": h, "W": w,
               **p.dtype.defines}
    for role, s in strides.items():
        defines.update({f"{PREFIX[role]}S_{axis}": stride for axis, stride in zip("NCHW", s)})
    return defines


def kernel_roles(p: SoftmaxProblem) -> tuple[str, ...]:
    return ("x", "y") if p.direction is Direction.FORWARD else ("dx", "dy", "y")


def kernel_name(prefix: str, p: SoftmaxProblem) -> str:
    return f"{prefix}_{'fwd' if p.direction is Direction.FORWARD else 'bwd'}"
