"""miopy-driver toy: run and verify the toy family's forward and backward."""
from __future__ import annotations

import argparse

import numpy as np

from miopy import driver_common as common
from miopy.handle import Handle
from miopy.tensor import TensorDesc

from . import reference as ref
from .api import square_backward, square_forward
from .descriptor import SquareDesc
from .problem import ROLES, Direction, SquareProblem

COMMANDS = ("toy",)


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser("toy", help="run and verify y = scale * x^2 (the family template's example)")
    common.add_common(p, "square")
    p.add_argument("-A", "--scale", type=float, default=1.5, help="the scale")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return common.guarded(lambda handle: _run(handle, args), args)


def _run(handle: Handle, a: argparse.Namespace) -> bool:
    t, desc = TensorDesc("FP32", common.dims(a)), SquareDesc(a.scale)
    x, dy = common.random(t.dims, a.seed), common.random(t.dims, a.seed + 1)
    xa, dya = handle.to_device(x), handle.to_device(dy)
    ya, dxa = (handle.to_device(np.full(t.dims, np.nan, np.float32)) for _ in range(2))
    ok = True
    if "forward" in common.directions(a):
        square_forward(handle, desc, t, xa, t, ya)
        ok &= common.verify("Forward Square", ya.get(), ref.square_forward(x, a.scale), 1e-6)
    if "backward" in common.directions(a):
        square_backward(handle, desc, t, xa, t, dya, t, dxa)
        ok &= common.verify("Backward Square", dxa.get(), ref.square_backward(dy, x, a.scale), 1e-6)
    return ok


def problems(a: argparse.Namespace) -> list[SquareProblem]:
    t = TensorDesc("FP32", common.dims(a))
    wanted = {"forward": Direction.FORWARD, "backward": Direction.BACKWARD}
    return [SquareProblem.create(wanted[d], **dict.fromkeys(ROLES[wanted[d]], t)) for d in common.directions(a)]
