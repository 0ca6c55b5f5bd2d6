"""miopy-driver dropout: MIOpenDriver's dropout command (forward, backward or both)."""
from __future__ import annotations

import argparse

import numpy as np

from .. import driver_common as common
from ..driver_common import add_timing, from_device, to_device
from ..errors import BadParam
from ..handle import Handle
from ..tensor import TensorDesc
from . import reference as ref
from .api import (
    dropout_backward,
    dropout_forward,
    dropout_get_reserve_space_size,
    dropout_get_states_size,
    set_dropout_descriptor,
)
from .problem import DropoutDirection, DropoutProblem

TOLERANCE = {"FP32": 1e-6, "FP16": 1e-3}
COMMANDS = ("dropout",)   # the miopy-driver sub-commands add_parsers adds (MIOpenDriver's names)


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser("dropout", help="dropout (MIOpenDriver dropout)")
    add = p.add_argument
    add("-F", "--forw", type=int, default=0, choices=(0, 1, 2), help="1 forward, 2 backward, 0 both")
    add("-d", "--input_dim", default="4,64,28,28", help="input dims N,C,H,W (up to 4)")
    add("-p", "--dropout", type=float, default=0.5, help="dropout rate")
    add("-l", "--seed_low", type=int, default=0, help="least significant 32 bits of the seed")
    add("-m", "--seed_high", type=int, default=0, help="most significant 32 bits of the seed")
    add("-e", "--use_mask", type=int, default=0, choices=(0, 1), help="forward reuses the reserve space's mask")
    add("-f", "--gen_file", type=int, default=0, help="(accepted for MIOpenDriver compatibility)")
    add("-o", "--dump_output", type=int, default=0, help="(accepted for MIOpenDriver compatibility)")
    add("--dtype", default="FP32", choices=("FP32", "FP16"))
    add_timing(p, iters=1)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return common.guarded(lambda handle: _run(handle, args), args)


def _run(handle: Handle, args: argparse.Namespace) -> bool:
    desc = _desc(args)
    common.fits(handle, {"x": desc, "y": desc, "dy": desc, "dx": desc})
    seed = (args.seed_high << 32) | args.seed_low
    states = handle.empty((dropout_get_states_size(handle),), np.uint8)
    d = set_dropout_descriptor(handle, args.dropout, states, seed, use_mask=bool(args.use_mask))
    rng = np.random.default_rng(seed & 0xFFFFFFFF)
    count = dropout_get_reserve_space_size(desc)
    given = (rng.random(count) >= args.dropout).astype(np.uint8)   # the mask -e 1 and a backward alone use
    mask = given if args.use_mask or args.forw == 2 else ref.keep_mask(count, args.dropout, seed)
    reserve = to_device(handle, given)
    ok = True
    if args.forw in (0, 1):
        x = (0.01 * rng.random(desc.dims)).astype(desc.dtype.numpy)
        x_dev, y_dev = to_device(handle, x), to_device(handle, np.full_like(x, np.nan))
        call = lambda: dropout_forward(handle, d, desc, desc, x_dev, desc, y_dev, reserve)
        call()
        got = {"y": from_device(handle, y_dev, x), "mask": from_device(handle, reserve, given)}
        common.report_time(handle, args, "Forward Dropout", call, 2 * desc.nbytes + count)
        if args.verify:
            ok &= common.verify_outputs("Forward Dropout", got, {"y": ref.forward(x, mask, args.dropout), "mask": mask},
                         TOLERANCE[args.dtype])
    if args.forw in (0, 2):
        dy = (0.01 * rng.random(desc.dims)).astype(desc.dtype.numpy)
        dy_dev, dx_dev = to_device(handle, dy), to_device(handle, np.full_like(dy, np.nan))
        call = lambda: dropout_backward(handle, d, desc, desc, dy_dev, desc, dx_dev, reserve)
        call()
        got = {"dx": from_device(handle, dx_dev, dy)}
        common.report_time(handle, args, "Backward Dropout", call, 2 * desc.nbytes + count)
        if args.verify:
            expected = {"dx": ref.backward(dy, mask, args.dropout)}
            ok &= common.verify_outputs("Backward Dropout", got, expected, TOLERANCE[args.dtype])
    return ok


def problems(args: argparse.Namespace) -> list[DropoutProblem]:
    """The problems the flags describe (miopy-tune): the directions -F asks for."""
    desc = _desc(args)
    directions = {0: (DropoutDirection.FORWARD, DropoutDirection.BACKWARD), 1: (DropoutDirection.FORWARD,),
                  2: (DropoutDirection.BACKWARD,)}[args.forw]
    return [DropoutProblem.create(d, desc, desc, use_mask=bool(args.use_mask)) for d in directions]


def _desc(args: argparse.Namespace) -> TensorDesc:
    dims = tuple(int(v) for v in args.input_dim.replace(" ", ",").split(",") if v)
    if not 1 <= len(dims) <= 4:
        raise BadParam("input_dim", f"expected 1 to 4 dims, got {args.input_dim!r}")
    return TensorDesc(args.dtype, (1,) * (4 - len(dims)) + dims)
