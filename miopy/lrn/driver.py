"""miopy-driver lrn: MIOpenDriver's LRN command (forward saving the scale, backward, time, verify)."""
from __future__ import annotations

import argparse

import numpy as np

from .. import driver_common as common
from ..handle import Handle
from ..tensor import TensorDesc
from . import reference as ref
from .api import lrn_backward, lrn_forward, lrn_workspace_size
from .descriptor import LRNDesc, LRNMode
from .problem import Direction, LRNProblem

TOLERANCE = 1e-5   # hybrid error of a window sum and a pow in float
COMMANDS = ("lrn",)   # the miopy-driver sub-commands add_parsers adds (MIOpenDriver's names)


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser("lrn", help="run, time and verify a local response normalisation")
    common.add_common(p, "LRN")
    add = p.add_argument
    add("-N", "--lrnN", type=int, default=5, help="window size")
    add("-A", "--alpha", type=float, default=0.001, help="lrn alpha")
    add("-B", "--beta", type=float, default=0.75, help="lrn beta")
    add("-K", "--lrnK", type=float, default=1.0, help="lrn k")
    add("-m", "--mode", choices=("within", "cross"), default="within", help="within-channel or cross-channel")
    add("-P", "--printconv", type=int, default=1, help="print the dimensions")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return common.guarded(lambda handle: _run(handle, args), args)


def _run(handle: Handle, a: argparse.Namespace) -> bool:
    t = TensorDesc("FP32", common.dims(a))
    desc = LRNDesc(LRNMode.of(a.mode), a.lrnN, a.alpha, a.beta, a.lrnK)
    if a.printconv:
        print(f"LRN {desc.mode.name.lower()}: {t.dims}, n {desc.n} (window {-desc.pre}..+{desc.post}), "
              f"alpha {desc.alpha}, beta {desc.beta}, k {desc.k}")
    common.fits(handle, {"x": t, "y": t, "dy": t, "dx": t, "workspace": t})
    x, dy = common.random(t.dims, a.seed), common.random(t.dims, a.seed + 1)
    xa, dya = handle.to_device(x), handle.to_device(dy)
    ya, dxa = (handle.to_device(np.full(t.dims, np.nan, np.float32)) for _ in range(2))
    ws = handle.empty((lrn_workspace_size(t) // np.dtype(np.float32).itemsize,), np.float32)
    forward = lambda: lrn_forward(handle, desc, 1.0, t, xa, 0.0, t, ya, True, ws)
    forward()
    geometry = (int(desc.mode), desc.n, desc.alpha, desc.beta, desc.k, desc.pre)
    ok = True
    if "forward" in common.directions(a):
        ok &= not a.verify or common.verify("Forward LRN", ya.get(), ref.lrn_forward(x, *geometry)[0], TOLERANCE)
        common.report_time(handle, a, "Forward LRN", forward,
                           LRNProblem.create(Direction.FORWARD, desc, True, x=t, y=t).bytes())
    if "backward" in common.directions(a):
        backward = lambda: lrn_backward(handle, desc, 1.0, t, ya, t, dya, t, xa, 0.0, t, dxa, ws)
        backward()
        ok &= not a.verify or common.verify("Backward LRN", dxa.get(), ref.lrn_backward(dy, x, *geometry), TOLERANCE)
        common.report_time(handle, a, "Backward LRN", backward,
                           LRNProblem.create(Direction.BACKWARD, desc, x=t, dy=t, dx=t).bytes())
    return ok


def problems(a: argparse.Namespace) -> list[LRNProblem]:
    """The problems the flags describe (miopy-tune): the directions -F asks for (the forward saving its scale)."""
    t = TensorDesc("FP32", common.dims(a))
    desc = LRNDesc(LRNMode.of(a.mode), a.lrnN, a.alpha, a.beta, a.lrnK)
    made = {"forward": lambda: LRNProblem.create(Direction.FORWARD, desc, True, x=t, y=t),
            "backward": lambda: LRNProblem.create(Direction.BACKWARD, desc, x=t, dy=t, dx=t)}
    return [made[d]() for d in common.directions(a)]
