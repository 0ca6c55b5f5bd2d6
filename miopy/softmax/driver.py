"""miopy-driver softmax: MIOpenDriver's softmax command (forward, backward, time, verify)."""
from __future__ import annotations

import argparse

import numpy as np

from .. import driver_common as common
from ..handle import Handle
from ..tensor import TensorDesc
from . import reference as ref
from .api import softmax_backward, softmax_forward
from .descriptor import SoftmaxAlgorithm, SoftmaxDesc, SoftmaxMode
from .problem import Direction, SoftmaxProblem

NAMES = {Direction.FORWARD: "Forward Softmax", Direction.BACKWARD: "Backward Softmax"}
COMMANDS = ("softmax",)   # the miopy-driver sub-commands add_parsers adds (MIOpenDriver's names)


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser("softmax", help="run, time and verify a softmax / log-softmax")
    common.add_common(p, "softmax")
    add = p.add_argument
    add("-A", "--alpha", type=float, default=1.0, help="alpha: out = alpha * result + beta * out")
    add("-B", "--beta", type=float, default=0.0, help="beta: out = alpha * result + beta * out")
    add("-a", "--algorithm", type=int, default=1, choices=(0, 1, 2), help="fast (0), accurate (1), logsoftmax (2)")
    add("-m", "--mode", type=int, default=1, choices=(0, 1), help="instance mode (0), channel mode (1)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return common.guarded(lambda handle: _run(handle, args), args)


def _run(handle: Handle, a: argparse.Namespace) -> bool:
    desc = TensorDesc("FP32", common.dims(a))
    algo, mode = SoftmaxAlgorithm(a.algorithm), SoftmaxMode(a.mode)
    sm = SoftmaxDesc(algo, mode)
    print(f"Softmax {algo.name.lower()}, {mode.name.lower()} mode: {desc.dims}, {sm.rows(desc)[0]} rows of "
          f"{sm.rows(desc)[1]}, alpha {a.alpha}, beta {a.beta}")
    common.fits(handle, {"x": desc, "y": desc, "dy": desc, "dx": desc})
    x, y0 = common.random(desc.dims, a.seed), _initial(desc, a, 1)
    xa, ya = handle.to_device(x), handle.to_device(y0)
    forward = lambda: softmax_forward(handle, a.alpha, desc, xa, a.beta, desc, ya, algo, mode)
    y = ref.softmax_forward(x, algo, mode)
    ok = True
    if "forward" in common.directions(a):
        forward()
        ok &= not a.verify or common.verify(NAMES[Direction.FORWARD], ya.get(), _blend(a, y, y0), tolerance(a))
        ya.set(y0)
        common.report_time(handle, a, NAMES[Direction.FORWARD], forward, _bytes(sm, desc, Direction.FORWARD))
    if "backward" in common.directions(a):
        y32 = y.astype(np.float32)
        dy, dx0 = common.random(desc.dims, a.seed + 2), _initial(desc, a, 3)
        yb, dya, dxa = handle.to_device(y32), handle.to_device(dy), handle.to_device(dx0)
        backward = lambda: softmax_backward(handle, a.alpha, desc, yb, desc, dya, a.beta, desc, dxa, algo, mode)
        backward()
        want = _blend(a, ref.softmax_backward(y32, dy, algo, mode), dx0)
        ok &= not a.verify or common.verify(NAMES[Direction.BACKWARD], dxa.get(), want, tolerance(a))
        common.report_time(handle, a, NAMES[Direction.BACKWARD], backward, _bytes(sm, desc, Direction.BACKWARD))
    return ok


def tolerance(a: argparse.Namespace) -> float:
    """Hybrid error bound: row sums in float grow like sqrt(row length)."""
    return 2e-5 * max(1.0, (a.in_channels * (a.in_h * a.in_w if a.mode == 0 else 1) / 1024) ** 0.5)


def _blend(a: argparse.Namespace, result: np.ndarray, before: np.ndarray) -> np.ndarray:
    return a.alpha * result + a.beta * before if a.beta else a.alpha * result


def _initial(desc: TensorDesc, a: argparse.Namespace, seed: int) -> np.ndarray:
    """The output's contents before the call: random when beta blends it in, else NaN (unwritten shows)."""
    if a.beta:
        return common.random(desc.dims, a.seed + seed)
    return np.full(desc.dims, np.nan, np.float32)


def _bytes(sm: SoftmaxDesc, desc: TensorDesc, direction: Direction) -> int:
    roles = {"x": desc, "y": desc} if direction is Direction.FORWARD else {"y": desc, "dy": desc, "dx": desc}
    return SoftmaxProblem.create(direction, sm, **roles).bytes()


def problems(a: argparse.Namespace) -> list[SoftmaxProblem]:
    """The problems the flags describe (miopy-tune): the directions -F asks for."""
    desc, sm = TensorDesc("FP32", common.dims(a)), SoftmaxDesc(SoftmaxAlgorithm(a.algorithm), SoftmaxMode(a.mode))
    roles = {"forward": (Direction.FORWARD, ("x", "y")), "backward": (Direction.BACKWARD, ("y", "dy", "dx"))}
    return [SoftmaxProblem.create(roles[d][0], sm, **dict.fromkeys(roles[d][1], desc)) for d in common.directions(a)]
