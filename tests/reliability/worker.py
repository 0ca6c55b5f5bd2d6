"""Child processes of the reliability suite: `python -m tests.reliability.worker COMMAND 'JSON'`.

Commands:
  workload  build the given tagged specs, then find and run convolutions (all given directions) on the
            given problems, checking each result against the float64 reference; both lists are visited
            from a rotated start so processes overlap.
  compile   build scale.cl specs tagged with the given numbers (cheap, distinct programs).
  hang      build one tagged spec and stop dead at a point of the cache write ("compiling", "mid-write",
            "before-rename"), printing HANG, so the parent can SIGKILL the process there.

Progress lines go to stdout (READY after the handle exists, DONE <tag> per compile); the last line is
``RESULT {json}``: cache counts, calls made, failures and every warning miopy logged. With "barrier" set,
work starts only once that file exists, so several processes start together; with "list_dir" set, the
result lists the files under that directory at the end (for stores that vanish with the child's mount
namespace).
"""
from __future__ import annotations

import json
import logging
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import miopy
from miopy import api, reference
from miopy.convolution import Direction
from miopy.kernel_cache import KernelCache, KernelSpec

TOLERANCE = 1e-3


class WarningLog(logging.Handler):
    """Keeps the message of every WARNING or worse that miopy logs."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def tagged_spec(tag: int) -> KernelSpec:
    return KernelSpec.make("scale.cl", "fill", {"MIOPY_TEST_TAG": tag})


def say(line: str) -> None:
    print(line, flush=True)


def wait_for(barrier: str | None) -> None:
    while barrier and not Path(barrier).exists():
        time.sleep(0.005)


def descriptors(problem: list[int]):
    n, c, h, w, k, r, s, pad, stride, dil, groups = problem
    x = miopy.TensorDesc("FP32", (n, c, h, w))
    wd = miopy.TensorDesc("FP32", (k, c // groups, r, s))
    conv = miopy.ConvDesc(pad, stride, dil, groups)
    return x, wd, conv, conv.output_desc(x, wd)


def run_checked(handle, problem: list[int], direction: Direction, seed: int, mode: str | None = None) -> miopy.FindResult:
    """Find (in mode), run the fastest record once, and compare with the reference (AssertionError if wrong)."""
    xd, wd, conv, yd = descriptors(problem)
    rng = np.random.default_rng(seed)
    x, w, y = (rng.standard_normal(d.dims).astype(np.float32) for d in (xd, wd, yd))
    found = api.find_convolution(handle, xd, wd, conv, direction, mode=mode)
    geo = dict(pad=conv.pad, stride=conv.stride, dilation=conv.dilation, groups=conv.groups)
    dev = {name: handle.to_device(a) for name, a in (("x", x), ("w", w), ("y", y))}
    if direction is Direction.FORWARD:
        api.convolution_forward(handle, xd, dev["x"], wd, dev["w"], conv, yd, dev["y"], algo=found[0])
        got, want = dev["y"], reference.conv_forward(x, w, **geo)
    elif direction is Direction.BACKWARD_DATA:
        api.convolution_backward_data(handle, yd, dev["y"], wd, dev["w"], conv, xd, dev["x"], algo=found[0])
        got, want = dev["x"], reference.conv_backward_data(y, w, xd.dims, **geo)
    else:
        api.convolution_backward_weights(handle, yd, dev["y"], xd, dev["x"], conv, wd, dev["w"], algo=found[0])
        got, want = dev["w"], reference.conv_backward_weights(x, y, wd.dims, **geo)
    err = reference.max_error(handle.to_host(got), want)
    assert err <= TOLERANCE, f"{found[0].solver_id} error {err:.2e}"
    return found


def rotated(items: list, start: int) -> list:
    start = start % len(items) if items else 0
    return items[start:] + items[:start]


def workload(handle, args: dict) -> dict:
    built = compile_tags(handle, {"tags": rotated(args.get("tags", []), args.get("rotate", 0))})
    failures, calls = built["failures"], built["calls"]
    for i, problem in enumerate(rotated(args["problems"], args.get("rotate", 0))):
        for direction in map(Direction, args.get("directions", [1, 2, 4])):
            calls += 1
            try:
                run_checked(handle, problem, direction, seed=i)
            except Exception as exc:  # every failure is data for the parent
                failures.append(f"{problem} {direction.name}: {type(exc).__name__}: {exc}")
    return {"calls": calls, "failures": failures}


def compile_tags(handle, args: dict) -> dict:
    failures = []
    for tag in args["tags"]:
        try:
            handle.kernels.kernel(tagged_spec(tag))
        except Exception as exc:
            failures.append(f"tag {tag}: {type(exc).__name__}: {exc}")
        say(f"DONE {tag}")
    return {"calls": len(args["tags"]), "failures": failures}


def hang(handle, args: dict) -> dict:
    """Stop forever at args["at"] while building one spec (under its entry lock)."""
    def stop(*_, **__):
        say("HANG")
        time.sleep(600)

    at = args["at"]
    if at == "compiling":
        KernelCache._compile = stop
    elif at == "before-rename":
        os.replace = stop
    elif at == "mid-write":
        real_fdopen = os.fdopen
        os.fdopen = lambda fd, mode: _HalfWriter(real_fdopen(fd, mode), stop)
    handle.kernels.kernel(tagged_spec(args["tag"]))
    return {"calls": 1, "failures": ["did not hang"]}


class _HalfWriter:
    """A file that writes the first half of what it is given, flushes it to disk, then stops."""

    def __init__(self, file, stop):
        self.file, self.stop = file, stop

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    def write(self, data: bytes) -> None:
        self.file.write(data[:len(data) // 2])
        self.file.flush()
        os.fsync(self.file.fileno())
        self.stop()


COMMANDS = {"workload": workload, "compile": compile_tags, "hang": hang}


def main(argv: list[str]) -> int:
    command, args = argv[0], json.loads(argv[1]) if len(argv) > 1 else {}
    warnings = WarningLog()
    logging.getLogger("miopy").addHandler(warnings)
    try:
        handle = miopy.Handle()
        say("READY")
        wait_for(args.get("barrier"))
        result = COMMANDS[command](handle, args)
        result.update(handle.cache_stats())
    except Exception:
        result = {"calls": 0, "failures": [traceback.format_exc()]}
    result["warnings"] = warnings.messages
    if args.get("list_dir"):
        root = Path(args["list_dir"])
        found = root.rglob("*") if root.is_dir() else ()
        result["files"] = sorted(str(p.relative_to(root)) for p in found if p.is_file())
    say("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
