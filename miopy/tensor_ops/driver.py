"""miopy-driver tensorop: MIOpenDriver's tensor-op command (SetTensor, ScaleTensor, OpTensor)."""
from __future__ import annotations

import argparse

import numpy as np

from .. import driver_common as common
from ..driver_common import add_dims, add_timing, from_device, to_device
from ..handle import Handle
from ..tensor import TensorDesc
from . import reference as ref
from .api import op_tensor, scale_tensor, set_tensor
from .descriptor import TensorOp
from .problem import TensorOpProblem

OPS = ("SetTensor", "ScaleTensor", "Add", "Mul", "Min", "Max")   # -o values 0 .. 5, as MIOpenDriver
TOLERANCE = {"FP32": 1e-6, "FP16": 1e-3}
COMMANDS = ("tensorop",)   # the miopy-driver sub-commands add_parsers adds (MIOpenDriver's names)


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser("tensorop", help="tensor operations (MIOpenDriver tensorop)")
    add = p.add_argument
    add("-F", "--forw", type=int, default=1, help="(not used, as in MIOpenDriver)")
    add_dims(p, batch=64)
    add("-o", "--tensor_op", type=int, default=0, choices=range(len(OPS)),
        help="0 SetTensor, 1 ScaleTensor, 2 Add, 3 Mul, 4 Min, 5 Max")
    add("-A", "--alpha1", type=float, default=1.0)
    add("-B", "--alpha2", type=float, default=1.0)
    add("-G", "--beta", type=float, default=0.0)
    add("-v", "--tensor_val", type=float, default=1.0, help="value of SetTensor / ScaleTensor")
    add("-b", "--b_dims", default=None, help="B's dims as N,C,H,W to broadcast (each 1 or A's; default A's)")
    add("-d", "--dtype", default="FP32", choices=("FP32", "FP16"))
    add("--seed", type=int, default=0, help="random seed of the inputs")
    add_timing(p, iters=10)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return common.guarded(lambda handle: _run(handle, args), args)


def _run(handle: Handle, args: argparse.Namespace) -> bool:
    dims = (args.batchsize, args.in_channels, args.in_h, args.in_w)
    a_desc = TensorDesc(args.dtype, dims)
    common.fits(handle, {"a": a_desc, "b": a_desc, "c": a_desc})
    rng = np.random.default_rng(args.seed)
    host = lambda d: np.asarray(rng.uniform(-2, 2, d), a_desc.dtype.numpy)
    a = host(dims)
    a_dev = to_device(handle, a)
    name = OPS[args.tensor_op]
    if args.tensor_op < 2:
        fn = set_tensor if args.tensor_op == 0 else scale_tensor
        call = lambda: fn(handle, a_desc, a_dev, args.tensor_val)
        call()
        got = {"y": from_device(handle, a_dev, a)}
        expected = {"y": ref.set_tensor(dims, args.tensor_val) if args.tensor_op == 0
                    else ref.scale_tensor(a, args.tensor_val)}
        moved = a_desc.nbytes * (1 if args.tensor_op == 0 else 2)
    else:
        b_dims = tuple(int(v) for v in args.b_dims.split(",")) if args.b_dims else dims
        b_desc = TensorDesc(args.dtype, b_dims)
        b, c = host(b_dims), host(dims)
        b_dev, c_dev = to_device(handle, b), to_device(handle, c)
        op = TensorOp(args.tensor_op - 2)
        call = lambda: op_tensor(handle, op, args.alpha1, a_desc, a_dev, args.alpha2, b_desc, b_dev, args.beta, a_desc,
                                 c_dev)
        call()
        got = {"c": from_device(handle, c_dev, c)}
        expected = {"c": ref.op_tensor(int(op), a, b, c, args.alpha1, args.alpha2, args.beta)}
        moved = a_desc.nbytes * (3 if args.beta else 2) + b_desc.nbytes
    common.report_time(handle, args, f"Tensor Op {name}", call, moved)
    return common.verify_outputs(f"Tensor Op {name}", got, expected, TOLERANCE[args.dtype]) if args.verify else True


def problems(args: argparse.Namespace) -> list[TensorOpProblem]:
    """The OpTensor problem the flags describe (miopy-tune); SetTensor and ScaleTensor have no solvers to tune."""
    dims = (args.batchsize, args.in_channels, args.in_h, args.in_w)
    if args.tensor_op < 2:
        return []
    b_dims = tuple(int(v) for v in args.b_dims.split(",")) if args.b_dims else dims
    a_desc = TensorDesc(args.dtype, dims)
    return [TensorOpProblem.create(TensorOp(args.tensor_op - 2), a_desc, TensorDesc(args.dtype, b_dims), a_desc)]
