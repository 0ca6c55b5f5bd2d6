"""miopy-driver conv and convfp16: MIOpenDriver's convolution commands (find, run, time and verify every direction
on FP32 or FP16 data)."""
from __future__ import annotations

import argparse

import numpy as np

from .. import driver_common as common
from ..accuracy import max_error
from ..errors import check
from ..handle import Handle
from ..plan import check_fits
from ..tensor import MATH_MODES, TensorDesc
from . import api
from .descriptor import ConvDesc, same_padding
from .problem import OUTPUT_ROLE, ConvProblem, Direction, directions, map_problem
from .reference import solve, tolerance
from .registry import REGISTRY as registry
from .solvers.common import ConvSolver

# The miopy-driver sub-commands add_parsers adds (MIOpenDriver's names), each with its data type
# (miopy-tune reads conv's); as in every family's driver module, iterating COMMANDS gives the names.
COMMANDS = {"conv": "FP32", "convfp16": "FP16"}
NAMES = {Direction.FORWARD: "Forward Convolution", Direction.BACKWARD_DATA: "Backward Data Convolution",
         Direction.BACKWARD_WEIGHTS: "Backward Weights Convolution"}


def conv_arguments(parser: argparse.ArgumentParser) -> None:
    """MIOpenDriver's conv flags describing the problem (shared with miopy-tune)."""
    add = parser.add_argument
    add("-n", "--batchsize", type=int, default=100)
    add("-c", "--in_channels", type=int, default=3)
    add("-H", "--in_h", type=int, default=32)
    add("-W", "--in_w", type=int, default=32)
    add("-k", "--out_channels", type=int, default=32)
    add("-y", "--fil_h", type=int, default=3)
    add("-x", "--fil_w", type=int, default=3)
    add("-p", "--pad_h", type=int, default=0)
    add("-q", "--pad_w", type=int, default=0)
    add("--pad_h_end", type=int, default=None, help="bottom padding when it differs from -p (the top)")
    add("--pad_w_end", type=int, default=None, help="right padding when it differs from -q (the left)")
    add("-z", "--pad_mode", choices=("default", "same", "valid"), default="default",
        help="same: pads giving ceil(input / stride) outputs, the odd one at the end; valid: no padding")
    add("-u", "--conv_stride_h", type=int, default=1)
    add("-v", "--conv_stride_w", type=int, default=1)
    add("-l", "--dilation_h", type=int, default=1)
    add("-j", "--dilation_w", type=int, default=1)
    add("-g", "--group_count", type=int, default=1)
    add("-m", "--mode", choices=("conv", "trans"), default="conv")
    add("-F", "--forw", type=int, default=0, choices=(0, 1, 2, 4), help="1 fwd, 2 bwd-data, 4 bwd-weights, 0 all")
    add("-S", "--solver", default=None, help="force a solver by id")
    add("--math_mode", choices=MATH_MODES, default=None,
        help="strict or tf32 (default: MIOPY_MATH_MODE, else strict); tf32 lets fp32 use tensor cores")


def descriptors(a: argparse.Namespace) -> tuple[TensorDesc, TensorDesc, ConvDesc]:
    """Input, weight and convolution descriptors from the flags (MiopyError on bad values); the data type is
    a.dtype when the command sets one (convfp16: FP16), else FP32."""
    mode = "transpose" if a.mode == "trans" else "conv"
    dtype = getattr(a, "dtype", None) or "FP32"
    x = TensorDesc(dtype, (a.batchsize, a.in_channels, a.in_h, a.in_w))
    check(a.group_count >= 1, "-g", f"must be >= 1, got {a.group_count}")
    check(a.in_channels % a.group_count == 0 and a.out_channels % a.group_count == 0, "-g",
          f"{a.group_count} groups must divide -c {a.in_channels} and -k {a.out_channels}")
    wdims = ((a.in_channels, a.out_channels // max(a.group_count, 1), a.fil_h, a.fil_w) if mode == "transpose"
             else (a.out_channels, a.in_channels // max(a.group_count, 1), a.fil_h, a.fil_w))
    conv = ConvDesc(_pads(a), (a.conv_stride_h, a.conv_stride_w), (a.dilation_h, a.dilation_w), a.group_count, mode,
                    math_mode=a.math_mode)
    return x, TensorDesc(dtype, wdims), conv


def _pads(a: argparse.Namespace) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) from -p -q, --pad_h_end --pad_w_end and --pad_mode."""
    if a.pad_mode == "valid":
        return 0, 0, 0, 0
    if a.pad_mode == "same":
        return same_padding((a.in_h, a.in_w), (a.fil_h, a.fil_w), (a.conv_stride_h, a.conv_stride_w),
                            (a.dilation_h, a.dilation_w))
    bottom = a.pad_h if a.pad_h_end is None else a.pad_h_end
    right = a.pad_w if a.pad_w_end is None else a.pad_w_end
    return a.pad_h, bottom, a.pad_w, right


def run_direction(handle: Handle, direction: Direction, x_desc, w_desc, conv, args) -> bool:
    """Find, run, time and verify one direction; prints MIOpenDriver-style lines; True when it verifies."""
    y_desc = conv.output_desc(x_desc, w_desc)
    mapping = map_problem(direction, x_desc, w_desc, conv, y_desc)
    problem = mapping.problem
    check_fits(handle, {"x": x_desc.nbytes, "w": w_desc.nbytes, "y": y_desc.nbytes})  # before any host data
    rng = np.random.default_rng(args.seed)
    host = {r: rng.standard_normal(d.dims).astype(d.dtype.numpy)
            for r, d in (("x", x_desc), ("w", w_desc), ("y", y_desc))}
    out_user = mapping.roles[OUTPUT_ROLE[problem.direction]]
    host[out_user][...] = np.nan  # poison: unwritten elements show
    dev = {r: handle.to_device(a) for r, a in host.items()}
    solvers = [registry.get(args.solver)] if args.solver else None
    found = api.find_convolution(handle, x_desc, w_desc, conv, direction, y_desc=y_desc, solvers=solvers)
    rec = found[0]
    print(f"{NAMES[direction]}: solver {rec.solver_id} ({rec.algorithm}), params from {rec.params_source} "
          f"{rec.params}; find ranked {len(found)} solver(s){' from the find DB' if found.from_db else ''}")
    call = _call(handle, direction, x_desc, w_desc, y_desc, conv, dev, rec)
    call()
    ms = handle.time_ms(call, warmup=1, iters=args.iter) if args.time else rec.time_ms
    print(f"{NAMES[direction]}: kernel time {ms:.4f} ms, {problem.flops() / ms / 1e6:.1f} GFLOP/s, "
          f"{problem.bytes() / ms / 1e6:.1f} GB/s")
    if not args.verify:
        return True
    got = handle.to_host(dev[out_user])
    expected = solve(problem, {prole: host[urole] for prole, urole in mapping.roles.items()})
    err = max_error(got, expected)
    tol = tolerance(registry.get(rec.solver_id), problem)
    ok = err <= tol
    print(f"{NAMES[direction]} {'Verifies OK' if ok else 'FAILED'} (max error {err:.2e}, tolerance {tol:.0e})")
    return ok


def _call(handle: Handle, direction, x_desc, w_desc, y_desc, conv, dev, rec):
    if direction is Direction.FORWARD:
        return lambda: api.convolution_forward(handle, x_desc, dev["x"], w_desc, dev["w"], conv, y_desc, dev["y"],
                                               algo=rec)
    if direction is Direction.BACKWARD_DATA:
        return lambda: api.convolution_backward_data(handle, y_desc, dev["y"], w_desc, dev["w"], conv, x_desc,
                                                     dev["x"], algo=rec)
    return lambda: api.convolution_backward_weights(handle, y_desc, dev["y"], x_desc, dev["x"], conv, w_desc,
                                                    dev["w"], algo=rec)


def _claimed(args, direction: Direction, x_desc, w_desc, conv) -> bool:
    """With -F 0 and -S, only the directions the forced solver implements run; the others are named."""
    if not (args.solver and args.forw == 0):
        return True
    solver = registry.get(args.solver)
    assert isinstance(solver, ConvSolver)
    if map_problem(direction, x_desc, w_desc, conv).problem.direction in solver.directions:
        return True
    print(f"{NAMES[direction]}: skipped, {solver.id} does not implement it")
    return False


def add_parsers(subparsers) -> None:
    """conv (FP32) and convfp16 (FP16), MIOpenDriver's flags."""
    for command, dtype in COMMANDS.items():
        conv = subparsers.add_parser(command, help=f"find, run, time and verify a convolution on {dtype} data")
        conv_arguments(conv)
        conv.set_defaults(dtype=dtype, run=run)
        conv.add_argument("-t", "--time", type=int, default=1, choices=(0, 1),
                          help="1: time -i iterations; 0: report find's time")
        conv.add_argument("-V", "--verify", type=int, default=1, choices=(0, 1),
                          help="verify against the float64 reference (of the inputs as stored)")
        conv.add_argument("-i", "--iter", type=int, default=10, help="timed iterations")
        conv.add_argument("-s", "--seed", type=int, default=0, help="random seed of the inputs")


def run(args: argparse.Namespace) -> int:
    """Every direction -F asks for (those the -S solver implements), on one handle."""
    described: list = []

    def prepare() -> str:
        check(args.seed >= 0, "-s", f"must be >= 0, got {args.seed}")
        described.extend(descriptors(args))
        return f", {described[0].dtype.value}"

    def body(handle: Handle) -> bool:
        x_desc, w_desc, conv = described
        return all([run_direction(handle, d, x_desc, w_desc, conv, args) for d in directions(args.forw)
                    if _claimed(args, d, x_desc, w_desc, conv)])

    return common.guarded(body, args, prepare)


def problems(args: argparse.Namespace) -> list[ConvProblem]:
    """The problems the flags describe (miopy-tune, --file lines): the directions -F asks for."""
    x_desc, w_desc, conv = descriptors(args)
    return [map_problem(d, x_desc, w_desc, conv).problem for d in directions(args.forw)]
