"""What the families' miopy-driver sub-commands share: MIOpenDriver's common flags, timing, verification lines and
the error guard. A family's ``driver`` module exposes add_parsers(subparsers); each command sets run(args) -> int."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyopencl as cl

from .accuracy import max_error
from .errors import BadParam, MiopyError, check
from .handle import Handle
from .plan import check_fits
from .tensor import TensorDesc, packed_strides


def add_common(parser: argparse.ArgumentParser, what: str) -> None:
    """MIOpenDriver's flags every primitive driver takes: input dims, -F, -i, -V, -t, -w (and a seed)."""
    add = parser.add_argument
    add("-n", "--batchsize", type=int, default=100, help="mini-batch size")
    add("-c", "--in_channels", type=int, default=3, help="input channels")
    add("-H", "--in_h", type=int, default=32, help="input height")
    add("-W", "--in_w", type=int, default=32, help="input width")
    add("-F", "--forw", type=int, default=0, choices=(0, 1, 2),
        help=f"0: forward and backward {what}, 1: forward only, 2: backward only")
    add("-i", "--iter", type=int, default=10, help="timed iterations")
    add("-V", "--verify", type=int, default=1, help="verify against the float64 reference")
    add("-t", "--time", type=int, default=1, help="time each direction (profiling events)")
    add("-w", "--wall", type=int, default=0, help="accepted for MIOpenDriver's sake; kernel times are reported")
    add("-s", "--seed", type=int, default=0, help="random seed of the inputs")


def dims(args: argparse.Namespace) -> tuple[int, int, int, int]:
    return (args.batchsize, args.in_channels, args.in_h, args.in_w)


def directions(args: argparse.Namespace) -> tuple[str, ...]:
    """The directions -F asks for ("forward", "backward")."""
    return {0: ("forward", "backward"), 1: ("forward",), 2: ("backward",)}[args.forw]


def random(shape: Sequence[int], seed: int, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(tuple(shape)).astype(dtype)


def report_time(handle: Handle, args: argparse.Namespace, name: str, call: Callable[[], list[cl.Event]],
                nbytes: int) -> None:
    """Time call (median of -i runs after a warm-up) and print MIOpenDriver's kernel-time line with the
    effective bandwidth of nbytes moved."""
    if not args.time:
        return
    ms = handle.time_ms(call, warmup=1, iters=args.iter)
    print(f"GPU Kernel Time {name} Elapsed: {ms:.4f} ms ({nbytes / ms / 1e6:.1f} GB/s effective)")


def verify(name: str, got: np.ndarray, expected: np.ndarray, tolerance: float) -> bool:
    """Print whether got matches the float64 expected within the hybrid tolerance."""
    err = max_error(got, expected)
    ok = err <= tolerance
    print(f"{name} {'Verifies OK' if ok else 'FAILED'} (max error {err:.2e}, tolerance {tolerance:.0e})")
    return ok


def check_counts(args: argparse.Namespace) -> None:
    """-i and the seeds: BadParam naming the flag, before any device work."""
    iters = getattr(args, "iter", 1)
    check(iters >= 1, "-i", f"must be >= 1 timed iteration, got {iters}")
    for name, flag, limit in (("seed", "--seed", 2**32), ("seed_low", "-l", 2**32), ("seed_high", "-m", 2**32)):
        value = getattr(args, name, 0)
        check(0 <= value < limit, flag, f"must be in [0, 2^32), got {value}")


def fits(handle: Handle, tensors: Mapping[str, TensorDesc]) -> None:
    """OutOfResources unless these tensors fit the device (each under its largest allocation, all under its
    memory): checked before any host data is made, which for such sizes takes minutes and host memory."""
    check_fits(handle, {name: desc.nbytes for name, desc in tensors.items()})


def guarded(body: Callable[[Handle], bool], args: argparse.Namespace | None = None,
            prepare: Callable[[], str] | None = None) -> int:
    """Run body on a fresh handle: 0 when it verifies, 1 when it fails or raises a MiopyError (or the host runs
    out of memory for the problem's data). prepare() (which validates the flags before any device work and
    returns text for the device line) and args' counts are checked first."""
    try:
        what = prepare() if prepare is not None else ""
        if args is not None:
            check_counts(args)
        handle = Handle()
        print(f"miopy-driver: device {handle.info.name} ({handle.info.platform}){what}")
        ok = body(handle)
    except MiopyError as exc:
        print(f"miopy-driver: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except MemoryError:
        print("miopy-driver: error: out of host memory for the problem's tensors", file=sys.stderr)
        return 1
    s = handle.cache_stats()
    print(f"kernel cache: compiled={s['compiled']} disk_hits={s['disk_hits']} memory_hits={s['memory_hits']}")
    return 0 if ok else 1


# -- for sub-commands whose -F / -s differ from add_common's (bnorm, tensorop, dropout) ------------------------
LAYOUTS = ("NCHW", "NHWC")


def add_dims(parser: argparse.ArgumentParser, batch: int) -> None:
    """-n -c -H -W alone."""
    add = parser.add_argument
    add("-n", "--batchsize", type=int, default=batch, help="mini-batch size")
    add("-c", "--in_channels", type=int, default=3, help="input channels")
    add("-H", "--in_h", type=int, default=32, help="input height")
    add("-W", "--in_w", type=int, default=32, help="input width")


def add_timing(parser: argparse.ArgumentParser, iters: int, time: int = 0) -> None:
    """-i -V -t -w alone."""
    add = parser.add_argument
    add("-i", "--iter", type=int, default=iters, help="timed iterations")
    add("-V", "--verify", type=int, default=1, help="verify against the float64 reference")
    add("-t", "--time", type=int, default=time, help="time the kernels (profiling events)")
    add("-w", "--wall", type=int, default=0, help="accepted for MIOpenDriver's sake; kernel times are reported")


def data_desc(dtype: str, shape: Sequence[int], layout: str = "NCHW") -> TensorDesc:
    """A descriptor of shape (N, C, H, W) stored in layout (NCHW packed, or NHWC through strides)."""
    if layout not in LAYOUTS:
        raise BadParam("layout", f"must be one of {LAYOUTS}, got {layout!r}")
    if layout == "NCHW":
        return TensorDesc(dtype, shape)
    n, c, h, w = shape
    s_n, s_h, s_w, s_c = packed_strides((n, h, w, c))
    return TensorDesc(dtype, shape, (s_n, s_c, s_h, s_w))


def to_device(handle: Handle, host: np.ndarray) -> cl.Buffer:
    mf = cl.mem_flags
    return cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(host))


def from_device(handle: Handle, buf: cl.Buffer, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    cl.enqueue_copy(handle.queue, out, buf)
    handle.finish()
    return out


def verify_outputs(name: str, got: dict[str, np.ndarray], expected: dict[str, np.ndarray], tolerance: float) -> bool:
    """verify() over several outputs: the verdict line names the worst one."""
    errors = {role: max_error(got[role], want) for role, want in expected.items()}
    worst = max(errors, key=lambda r: errors[r])
    ok = errors[worst] <= tolerance
    print(f"{name} {'Verifies OK' if ok else 'FAILED'} (max error {errors[worst]:.2e} in {worst}, "
          f"tolerance {tolerance:.0e})")
    return ok
