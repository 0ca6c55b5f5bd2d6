"""miopy-driver CBAInfer and CBAInferfp16: MIOpenDriver's fused convolution + bias + activation inference
(ConvolutionBiasActivationForward), on FP32 or FP16 data."""
from __future__ import annotations

import argparse

import numpy as np

from .. import driver_common as common
from ..accuracy import max_error, tolerance
from ..activation import ActivationMode
from ..conv.driver import conv_arguments, descriptors
from ..conv.problem import ConvProblem
from ..conv.problem import Direction as ConvDirection
from ..conv.reference import conv_forward
from ..errors import check
from ..handle import Handle
from ..tensor import TensorDesc
from .api import conv_bias_activation_forward
from .epilogue import Epilogue, apply_reference
from .problem import FusedProblem

# The miopy-driver sub-commands add_parsers adds (MIOpenDriver's names), each with its data type; as in every
# family's driver module, iterating COMMANDS gives the names.
COMMANDS = {"CBAInfer": "FP32", "CBAInferfp16": "FP16"}


def add_parsers(subparsers) -> None:
    for command, dtype in COMMANDS.items():
        p = subparsers.add_parser(command, help=f"fused convolution + bias + activation on {dtype} data")
        conv_arguments(p)
        add = p.add_argument
        add("--activ", default="relu", help="activation mode: a name (relu, logistic, ...) or its value 0-11")
        add("--activ_alpha", type=float, default=1.0, help="the activation's alpha")
        add("--activ_beta", type=float, default=0.0, help="the activation's beta")
        add("--activ_gamma", type=float, default=1.0, help="the activation's gamma")
        add("-t", "--time", type=int, default=1, choices=(0, 1), help="time -i iterations")
        add("-V", "--verify", type=int, default=1, choices=(0, 1), help="verify against the float64 reference")
        add("-i", "--iter", type=int, default=10, help="timed iterations")
        add("-s", "--seed", type=int, default=0, help="random seed of the inputs")
        p.set_defaults(dtype=dtype, run=run)


def run(args: argparse.Namespace) -> int:
    described: list = []

    def prepare() -> str:
        check(args.seed >= 0, "-s", f"must be >= 0, got {args.seed}")
        x_desc, w_desc, conv = descriptors(args)
        check(conv.mode == "conv", "-m", "fusion runs forward convolutions (-m conv)")
        mode = ActivationMode.of(int(args.activ) if args.activ.isdigit() else args.activ, "--activ")
        described.extend((x_desc, w_desc, conv, mode))
        return f", {x_desc.dtype.value}"

    return common.guarded(lambda handle: _run(handle, args, *described), args, prepare)


def _run(handle: Handle, a: argparse.Namespace, x_desc, w_desc, conv, mode: ActivationMode) -> bool:
    y_desc = conv.output_desc(x_desc, w_desc)
    bias_desc = TensorDesc(x_desc.dtype, (1, y_desc.c, 1, 1))
    common.fits(handle, {"x": x_desc, "w": w_desc, "y": y_desc})
    dtype = x_desc.dtype.numpy
    x, w = common.random(x_desc.dims, a.seed, dtype), common.random(w_desc.dims, a.seed + 1, dtype)
    bias = common.random(bias_desc.dims, a.seed + 2, dtype)
    xa, wa, ba = handle.to_device(x), handle.to_device(w), handle.to_device(bias)
    ya = handle.to_device(np.full(y_desc.dims, np.nan, dtype))
    scalars = (a.activ_alpha, a.activ_beta, a.activ_gamma)
    call = lambda: conv_bias_activation_forward(handle, x_desc, xa, w_desc, wa, conv, bias_desc, ba, mode, *scalars,
                                                y_desc, ya)
    call()
    name = f"Fused Conv+Bias+{mode.name.title()}"
    ok = True
    if a.verify:
        conv_out = conv_forward(x, w, conv.pads, conv.stride, conv.dilation, conv.groups)
        roles = dict(zip(("bias", "activ_alpha", "activ_beta", "activ_gamma"), (bias, *scalars)))
        want = apply_reference(Epilogue(bias=True, activation=mode), conv_out, roles)
        reduction = x_desc.c // conv.groups * w_desc.h * w_desc.w
        limit = tolerance(x_desc.dtype, reduction, conv.math_mode or handle.math_mode, 1e-4)
        err = max_error(ya.get(), want)
        ok = err <= limit
        print(f"{name} {'Verifies OK' if ok else 'FAILED'} (max error {err:.2e}, tolerance {limit:.0e})")
    common.report_time(handle, a, name, call, x_desc.nbytes + w_desc.nbytes + y_desc.nbytes)
    return ok


def problems(args: argparse.Namespace) -> list[FusedProblem]:
    """The fused problem the flags describe (miopy-tune tunes it through its convolution's records)."""
    x_desc, w_desc, conv = descriptors(args)
    mode = ActivationMode.of(int(args.activ) if args.activ.isdigit() else args.activ, "--activ")
    y_desc = conv.output_desc(x_desc, w_desc)
    problem = ConvProblem.create(ConvDirection.FORWARD, x_desc, w_desc, conv, y_desc)
    return [FusedProblem(x_desc, y_desc, Epilogue(bias=True, activation=mode), problem)]
