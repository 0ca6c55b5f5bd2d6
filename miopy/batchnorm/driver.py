"""miopy-driver bnorm: MIOpenDriver's batch-norm command (forward training / inference, backward)."""
from __future__ import annotations

import argparse

import numpy as np

from .. import driver_common as common
from ..driver_common import LAYOUTS, add_dims, add_timing, data_desc, from_device, to_device
from ..errors import BadParam
from ..handle import Handle
from ..tensor import strided_view
from . import reference as ref
from .api import (
    batch_normalization_backward,
    batch_normalization_forward_inference,
    batch_normalization_forward_training,
)
from .descriptor import BatchNormMode, derive_bn_tensor_descriptor
from .problem import BatchNormProblem, BnDirection

EPSILON, FACTOR = 1e-5, 0.1   # MIOpenDriver's epsilon and a PyTorch-like exponential average factor
TOLERANCE = {"FP32": 1e-4, "FP16": 2e-3}
COMMANDS = ("bnorm",)   # the miopy-driver sub-commands add_parsers adds (MIOpenDriver's names)


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser("bnorm", help="batch normalisation (MIOpenDriver bnorm)")
    add = p.add_argument
    add("-F", "--forw", type=int, default=1, choices=(0, 1, 2), help="forward: 0 off, 1 training, 2 inference")
    add("-b", "--back", type=int, default=0, choices=(0, 1), help="backward (with -F 0)")
    add_dims(p, batch=32)
    add("-m", "--mode", type=int, default=0, choices=(0, 1), help="0 per-activation, 1 spatial")
    add("-s", "--save", type=int, default=0, choices=(0, 1), help="save mean / inverse variance, or use them backward")
    add("-r", "--run", dest="running", type=int, default=0, choices=(0, 1),
        help="keep running statistics, or use them in inference")
    add("-A", "--alpha", type=float, default=1.0)
    add("-B", "--beta", type=float, default=0.0)
    add("-L", "--layout", default="NCHW", choices=LAYOUTS)
    add("-P", "--printconv", type=int, default=1, help="(accepted for MIOpenDriver compatibility)")
    add("-d", "--dtype", default="FP32", choices=("FP32", "FP16"), help="data type (MIOpenDriver: bnormfp16)")
    add("--seed", type=int, default=0, help="random seed of the inputs")
    add_timing(p, iters=1)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return common.guarded(lambda handle: _run(handle, args), args)


def _run(handle: Handle, args: argparse.Namespace) -> bool:
    """Run, time and verify the requested computation; True when it verifies (or is not verified)."""
    if args.forw and args.back:
        print("Warning: backward needs -F 0; running forward only.")
    if not args.forw and not args.back:
        raise BadParam("forw", "nothing to run: pass -F 1, -F 2 or -F 0 -b 1")
    mode = BatchNormMode(args.mode)
    x_desc = data_desc(args.dtype, (args.batchsize, args.in_channels, args.in_h, args.in_w), args.layout)
    bn_desc = derive_bn_tensor_descriptor(x_desc, mode)
    common.fits(handle, {"x": x_desc, "y": x_desc, "dy": x_desc, "dx": x_desc})
    rng = np.random.default_rng(args.seed)
    data = lambda: rng.standard_normal(x_desc.element_span).astype(x_desc.dtype.numpy)
    param = lambda low=None: (rng.random(bn_desc.dims) + low if low is not None
                              else rng.standard_normal(bn_desc.dims)).astype(np.float32)
    host = {"x": data(), "y": data(), "scale": param(), "bias": param(), "mean": param(), "var": param(0.5)}
    view = lambda flat: strided_view(flat, x_desc.dims, x_desc.strides)
    if args.forw == 1:
        return _training(handle, args, mode, x_desc, bn_desc, host, view)
    if args.forw == 2:
        return _inference(handle, args, mode, x_desc, bn_desc, host, view)
    host.update(dy=data(), dx=data(), dscale=param(), dbias=param(), inv=param(0.5))
    return _backward(handle, args, mode, x_desc, bn_desc, host, view)


def _training(handle: Handle, args, mode, x_desc, bn_desc, host, view) -> bool:
    dev = {k: to_device(handle, v) for k, v in host.items()}
    poison = np.full(bn_desc.dims, np.nan, np.float32)
    saved = {"saved_mean": to_device(handle, poison), "saved_inv_variance": to_device(handle, poison)}
    running = {"running_mean": dev["mean"], "running_var": dev["var"]} if args.running else \
        {"running_mean": None, "running_var": None}
    call = lambda: batch_normalization_forward_training(handle, mode, args.alpha, args.beta, x_desc, dev["x"], x_desc,
                                                        dev["y"], bn_desc, dev["scale"], dev["bias"], FACTOR,
                                                        epsilon=EPSILON, **running, **(saved if args.save else {}))
    call()
    got = {"y": view(from_device(handle, dev["y"], host["y"]))}
    if args.running:
        got.update(running_mean=from_device(handle, dev["mean"], host["mean"]),
                   running_var=from_device(handle, dev["var"], host["var"]))
    if args.save:
        got.update({role: from_device(handle, buf, poison) for role, buf in saved.items()})
    common.report_time(handle, args, "Forward Train Batch Norm", call, 2 * x_desc.nbytes)
    if not args.verify:
        return True
    before = (host["mean"], host["var"]) if args.running else (None, None)
    expected = ref.forward_training(view(host["x"]), host["scale"], host["bias"], EPSILON,
                                    mode is BatchNormMode.SPATIAL, FACTOR, *before)
    expected["y"] = args.alpha * expected["y"] + args.beta * view(host["y"]).astype(np.float64)
    return common.verify_outputs("Forward Train Batch Norm", got, {k: expected[k] for k in got}, TOLERANCE[args.dtype])


def _inference(handle: Handle, args, mode, x_desc, bn_desc, host, view) -> bool:
    dev = {k: to_device(handle, v) for k, v in host.items()}
    mean, var = (dev["mean"], dev["var"]) if args.running else (None, None)
    call = lambda: batch_normalization_forward_inference(handle, mode, args.alpha, args.beta, x_desc, dev["x"], x_desc,
                                                         dev["y"], bn_desc, dev["scale"], dev["bias"], mean, var,
                                                         EPSILON)
    call()
    got = {"y": view(from_device(handle, dev["y"], host["y"]))}
    common.report_time(handle, args, "Forward Inference Batch Norm", call, 2 * x_desc.nbytes)
    if not args.verify:
        return True
    x = view(host["x"])
    if args.running:
        y = ref.forward_inference(x, host["scale"], host["bias"], host["mean"], host["var"], EPSILON)
    else:
        y = ref.forward_training(x, host["scale"], host["bias"], EPSILON, mode is BatchNormMode.SPATIAL)["y"]
    expected = {"y": args.alpha * y + args.beta * view(host["y"]).astype(np.float64)}
    return common.verify_outputs("Forward Inference Batch Norm", got, expected, TOLERANCE[args.dtype])


def _backward(handle: Handle, args, mode, x_desc, bn_desc, host, view) -> bool:
    dev = {k: to_device(handle, v) for k, v in host.items()}
    saved = (dev["mean"], dev["inv"]) if args.save else (None, None)
    call = lambda: batch_normalization_backward(handle, mode, args.alpha, args.beta, args.alpha, args.beta, x_desc,
                                                dev["x"], x_desc, dev["dy"], x_desc, dev["dx"], bn_desc, dev["scale"],
                                                dev["dscale"], dev["dbias"], EPSILON, *saved)
    call()
    got = {"dx": view(from_device(handle, dev["dx"], host["dx"])),
           "dscale": from_device(handle, dev["dscale"], host["dscale"]),
           "dbias": from_device(handle, dev["dbias"], host["dbias"])}
    common.report_time(handle, args, "Backward Batch Norm", call, 3 * x_desc.nbytes)
    if not args.verify:
        return True
    expected = ref.backward(view(host["x"]), view(host["dy"]), host["scale"], EPSILON, mode is BatchNormMode.SPATIAL,
                            *((host["mean"], host["inv"]) if args.save else (None, None)))
    before = {"dx": view(host["dx"]), "dscale": host["dscale"], "dbias": host["dbias"]}
    expected = {k: args.alpha * v + args.beta * before[k].astype(np.float64) for k, v in expected.items()}
    return common.verify_outputs("Backward Batch Norm", got, expected, TOLERANCE[args.dtype])


def problems(args: argparse.Namespace) -> list[BatchNormProblem]:
    """The problem the flags describe (miopy-tune): training (-F 1), inference (-F 2) or backward (-F 0 -b 1)."""
    mode = BatchNormMode(args.mode)
    x_desc = data_desc(args.dtype, (args.batchsize, args.in_channels, args.in_h, args.in_w), args.layout)
    bn_desc = derive_bn_tensor_descriptor(x_desc, mode)
    if args.forw == 1:
        return [BatchNormProblem.create(BnDirection.FORWARD_TRAINING, mode, x_desc, x_desc, bn_desc, None,
                                        bool(args.running), bool(args.save))]
    if args.forw == 2:
        return [BatchNormProblem.create(BnDirection.FORWARD_INFERENCE, mode, x_desc, x_desc, bn_desc)]
    if not args.back:
        raise BadParam("forw", "nothing to tune: pass -F 1, -F 2 or -F 0 -b 1")
    return [BatchNormProblem.create(BnDirection.BACKWARD, mode, x_desc, x_desc, bn_desc, x_desc, False,
                                    bool(args.save))]
