"""miopy-driver pool: MIOpenDriver's pooling command (forward, backward, time, verify)."""
from __future__ import annotations

import argparse

import numpy as np

from .. import driver_common as common
from ..handle import Handle
from ..tensor import TensorDesc
from . import reference as ref
from .api import pooling_backward, pooling_forward, pooling_workspace_size
from .descriptor import PoolingDesc, PoolingMode
from .problem import Direction, PoolingProblem

TOLERANCE = 1e-5   # hybrid error of window sums in float
COMMANDS = ("pool",)   # the miopy-driver sub-commands add_parsers adds (MIOpenDriver's names)


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser("pool", help="run, time and verify a 2-D pooling")
    common.add_common(p, "pooling")
    add = p.add_argument
    add("-y", "--win_h", type=int, default=3, help="window height")
    add("-x", "--win_w", type=int, default=3, help="window width")
    add("-v", "--pool_stride_1", type=int, default=1, help="vertical stride")
    add("-u", "--pool_stride_0", type=int, default=1, help="horizontal stride")
    add("-p", "--pad_h", type=int, default=0, help="zero padding height (top and bottom)")
    add("-q", "--pad_w", type=int, default=0, help="zero padding width (left and right)")
    add("-r", "--pad_val", type=int, default=0, help="padding value (MIOpenDriver's; pads are never read)")
    add("-m", "--mode", choices=("max", "avg", "avg_in"), default="max",
        help="max, avg (padding excluded) or avg_in (padding included)")
    add("-z", "--pad_mode", choices=("default", "same", "valid"), default="default",
        help="same: pads for ceil(in / stride) outputs (the odd one after); valid: no padding")
    add("-I", "--index_type", default="miopenIndexUint32",
        choices=("miopenIndexUint8", "miopenIndexUint16", "miopenIndexUint32", "miopenIndexUint64"),
        help="accepted for MIOpenDriver's sake: miopy saves int32 indices")
    add("-P", "--print", type=int, default=1, help="print the pooling dimensions")
    add("--ceil", type=int, default=0, help="1: PyTorch's ceil_mode")
    p.set_defaults(run=run)


def descriptors(a: argparse.Namespace) -> tuple[PoolingDesc, TensorDesc]:
    x_desc = TensorDesc("FP32", common.dims(a))
    mode, window, strides = PoolingMode.of(a.mode), (a.win_h, a.win_w), (a.pool_stride_1, a.pool_stride_0)
    if a.pad_mode == "same":
        return PoolingDesc.same(mode, window, strides, x_desc), x_desc
    pads = (0, 0) if a.pad_mode == "valid" else (a.pad_h, a.pad_w)
    return PoolingDesc(mode, window, pads, strides, bool(a.ceil)), x_desc


def run(args: argparse.Namespace) -> int:
    return common.guarded(lambda handle: _run(handle, args), args)


def _run(handle: Handle, a: argparse.Namespace) -> bool:
    desc, x_desc = descriptors(a)
    y_desc = desc.output_desc(x_desc)
    if a.print:
        print(f"Pooling {desc.mode.name.lower()}: input {x_desc.dims} -> output {y_desc.dims}, window {desc.window}, "
              f"pads (top, bottom, left, right) {desc.pads}, strides {desc.strides}")
    common.fits(handle, {"x": x_desc, "y": y_desc, "dy": y_desc, "dx": x_desc})
    x, dy = common.random(x_desc.dims, a.seed), common.random(y_desc.dims, a.seed + 1)
    xa, dya = handle.to_device(x), handle.to_device(dy)
    ya, dxa = handle.to_device(np.full(y_desc.dims, np.nan, np.float32)), handle.empty(x_desc.dims)
    ws = handle.empty((max(pooling_workspace_size(desc, y_desc) // np.dtype(np.int32).itemsize, 1),), np.int32)
    forward = lambda: pooling_forward(handle, desc, 1.0, x_desc, xa, 0.0, y_desc, ya, True, ws)
    forward()
    geometry = (int(desc.mode), desc.window, desc.pads, desc.strides, desc.ceil_mode)
    y_ref, indices = ref.pool_forward(x, *geometry)
    ok = True
    if "forward" in common.directions(a):
        common.report_time(handle, a, "Forward Pooling", forward, _bytes(desc, x_desc, y_desc, Direction.FORWARD))
        ok &= not a.verify or common.verify("Forward Pooling", ya.get(), y_ref, TOLERANCE)
    if "backward" in common.directions(a):
        dxa.set(np.full(x_desc.dims, np.nan, np.float32))
        backward = lambda: pooling_backward(handle, desc, 1.0, y_desc, ya, y_desc, dya, x_desc, xa, 0.0, x_desc, dxa,
                                            ws)
        backward()
        common.report_time(handle, a, "Backward Pooling", backward,
                           _bytes(desc, x_desc, y_desc, Direction.BACKWARD))
        ok &= not a.verify or common.verify("Backward Pooling", dxa.get(),
                                            ref.pool_backward(dy, x_desc.dims, *geometry, indices=indices), TOLERANCE)
    return ok


def _bytes(desc: PoolingDesc, x_desc: TensorDesc, y_desc: TensorDesc, direction: Direction) -> int:
    return PoolingProblem.create(direction, desc, x_desc, y_desc, save_indices=True).bytes()


def problems(a: argparse.Namespace) -> list[PoolingProblem]:
    """The problems the flags describe (miopy-tune): the directions -F asks for, the max saving its indices."""
    desc, x_desc = descriptors(a)
    wanted = {"forward": Direction.FORWARD, "backward": Direction.BACKWARD}
    return [PoolingProblem.create(wanted[d], desc, x_desc, save_indices=desc.is_max) for d in common.directions(a)]
