"""miopy-driver activ: MIOpenDriver's activation command (forward, backward, time, verify)."""
from __future__ import annotations

import argparse

import numpy as np

from .. import driver_common as common
from ..handle import Handle
from ..tensor import TensorDesc
from . import reference as ref
from .api import activation_backward, activation_forward
from .descriptor import ActivationMode
from .problem import ROLES, ActivationProblem, Direction

NAMES = {Direction.FORWARD: "Forward Activation", Direction.BACKWARD: "Backward Activation"}
TOLERANCE = {"FP32": 1e-5, "FP16": 2e-3}   # a few float operations per element, then the output's rounding
COMMANDS = ("activ",)   # the miopy-driver sub-commands add_parsers adds (MIOpenDriver's names)


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser("activ", help="run, time and verify an activation")
    common.add_common(p, "activation")
    add = p.add_argument
    add("-m", "--mode", default="relu", help="activation mode: a name (relu, logistic, tanh, leaky_relu, ...) or "
                                              "its MIOpen value 0-11")
    add("-A", "--alpha", type=float, default=1.0, help="the mode's alpha")
    add("-B", "--beta", type=float, default=0.0, help="the mode's beta")
    add("-G", "--gamma", type=float, default=1.0, help="the mode's gamma")
    add("--dtype", choices=("FP32", "FP16"), default="FP32", help="data type")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return common.guarded(lambda handle: _run(handle, args), args)


def _run(handle: Handle, a: argparse.Namespace) -> bool:
    mode = ActivationMode.of(int(a.mode) if a.mode.isdigit() else a.mode, "-m")
    desc = TensorDesc(a.dtype, common.dims(a))
    print(f"Activation {mode.name.lower()} (alpha {a.alpha}, beta {a.beta}, gamma {a.gamma}): {desc.dims} "
          f"{a.dtype}")
    common.fits(handle, {"x": desc, "y": desc, "dy": desc, "dx": desc})
    dtype = desc.dtype.numpy
    x, dy = common.random(desc.dims, a.seed, dtype), common.random(desc.dims, a.seed + 1, dtype)
    xa, ya, dya = handle.to_device(x), handle.to_device(np.full_like(x, np.nan)), handle.to_device(dy)
    dxa = handle.to_device(np.full_like(x, np.nan))
    scalars = (mode, a.alpha, a.beta, a.gamma)
    forward = lambda: activation_forward(handle, *scalars, desc, xa, desc, ya)
    backward = lambda: activation_backward(handle, *scalars, desc, ya, desc, dya, desc, xa, desc, dxa)
    ok, tolerance = True, TOLERANCE[a.dtype]
    forward()
    if "forward" in common.directions(a):
        want = ref.forward_reference(mode, x, a.alpha, a.beta, a.gamma)
        ok &= not a.verify or common.verify(NAMES[Direction.FORWARD], ya.get(), want, tolerance)
        common.report_time(handle, a, NAMES[Direction.FORWARD], forward, _bytes(Direction.FORWARD, mode, desc))
    if "backward" in common.directions(a):
        backward()
        want = ref.backward_reference(mode, dy, x, a.alpha, a.beta, a.gamma)
        ok &= not a.verify or common.verify(NAMES[Direction.BACKWARD], dxa.get(), want, tolerance)
        common.report_time(handle, a, NAMES[Direction.BACKWARD], backward, _bytes(Direction.BACKWARD, mode, desc))
    return ok


def _bytes(direction: Direction, mode: ActivationMode, desc: TensorDesc) -> int:
    roles = {"x": desc, "y": desc} if direction is Direction.FORWARD else dict.fromkeys(("dx", "dy", "x", "y"), desc)
    return ActivationProblem.create(direction, mode, **roles).bytes()


def problems(a: argparse.Namespace) -> list[ActivationProblem]:
    """The problems the flags describe (miopy-tune): the directions -F asks for."""
    mode = ActivationMode.of(int(a.mode) if a.mode.isdigit() else a.mode, "-m")
    desc = TensorDesc(a.dtype, common.dims(a))
    directions = {"forward": Direction.FORWARD, "backward": Direction.BACKWARD}
    return [ActivationProblem.create(directions[d], mode, **dict.fromkeys(ROLES[directions[d]], desc))
            for d in common.directions(a)]
