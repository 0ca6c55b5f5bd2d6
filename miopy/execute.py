"""Running solutions: binding buffers to roles, validating them, and the convolution calls.

The hot path (a call with a ConvAlgoPerf from find) validates its arguments, takes a prepared solution
from the handle's memo and enqueues: it compiles nothing, reads no DB and touches no disk.
"""
from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import config
from .convolution import ConvDesc, ConvProblem, Direction
from .errors import BadParam, NotApplicable, check
from .handle import Handle
from .kernel_cache import KernelSpec
from .solvers import registry
from .solvers.base import Solution, round_up
from .tensor import TensorDesc

logger = logging.getLogger(__name__)

# Which problem tensor each direction writes.
OUTPUT_ROLE = {Direction.FORWARD: "y", Direction.BACKWARD_DATA: "x", Direction.BACKWARD_WEIGHTS: "w"}


@dataclass(frozen=True)
class ProblemMapping:
    """A user-level call mapped onto a ConvProblem; roles[problem_role] = the user's tensor name."""

    problem: ConvProblem
    roles: Mapping[str, str]


def map_problem(direction, x_desc: TensorDesc, w_desc: TensorDesc, conv: ConvDesc,
                y_desc: TensorDesc | None = None) -> ProblemMapping:
    """Map (direction, user descriptors) to a ConvProblem. x is the op's input, y its output.

    A transpose convolution's forward is the backward-data of the convolution whose input is the
    transpose's output; its backward-data is that convolution's forward; backward-weights swaps x and y.
    """
    check(isinstance(conv, ConvDesc), "conv_desc", "must be a ConvDesc")
    try:
        direction = Direction(direction)
    except ValueError as exc:
        raise BadParam("direction", f"must be 1, 2 or 4, got {direction!r}") from exc
    if conv.mode == "conv":
        return ProblemMapping(ConvProblem.create(direction, x_desc, w_desc, conv, y_desc),
                              {"x": "x", "w": "w", "y": "y"})
    expected = conv.output_desc(x_desc, w_desc)
    if y_desc is not None:
        check(y_desc.dims == expected.dims, "y_desc.dims", f"expected {expected.dims}, got {y_desc.dims}")
    conv_as_conv = ConvDesc(conv.pad, conv.stride, conv.dilation, conv.groups, "conv")
    out = y_desc or expected
    problem = ConvProblem.create(_TRANSPOSE_DIRECTION[direction], out, w_desc, conv_as_conv, x_desc)
    return ProblemMapping(problem, {"x": "y", "w": "w", "y": "x"})


_TRANSPOSE_DIRECTION = {Direction.FORWARD: Direction.BACKWARD_DATA, Direction.BACKWARD_DATA: Direction.FORWARD,
                        Direction.BACKWARD_WEIGHTS: Direction.BACKWARD_WEIGHTS}


def buffer_of(value, field: str, desc: TensorDesc | None = None, nbytes: int | None = None) -> cl.Buffer:
    """The cl.Buffer behind value (a pyopencl Array or Buffer), checked against desc / nbytes."""
    if isinstance(value, cl_array.Array):
        if desc is not None:
            check(value.dtype == desc.dtype.numpy, field, f"dtype {value.dtype} != descriptor {desc.dtype.value}")
        size, buf = value.nbytes, value.base_data
        check(value.offset == 0, field, "arrays with an offset are not supported")
    elif isinstance(value, cl.MemoryObjectHolder):
        size, buf = value.size, value
    else:
        raise BadParam(field, f"expected a pyopencl Array or Buffer, got {type(value).__name__}")
    need = desc.nbytes if desc is not None else (nbytes or 0)
    check(size >= need, field, f"buffer holds {size} bytes, descriptor needs {need}")
    return buf


@dataclass
class Prepared:
    """A solution with its kernels built: ready to enqueue on the handle's queue."""

    solution: Solution
    kernels: tuple[cl.Kernel, ...]

    def enqueue(self, handle: Handle, buffers: Mapping[str, cl.Buffer]) -> list[cl.Event]:
        events = []
        for launch, kernel in zip(self.solution.launches, self.kernels):
            args = [buffers[a] if isinstance(a, str) else a for a in launch.args]
            events.append(handle.launch(kernel, launch.global_size, launch.local_size, args))
        return events


def prepare(handle: Handle, solution: Solution) -> Prepared:
    """Build (or fetch from the kernel cache) every kernel of solution."""
    return Prepared(solution, tuple(handle.kernels.kernel(l.spec) for l in solution.launches))


def prepared_solution(handle: Handle, problem: ConvProblem, solver_id: str, params: dict,
                      epilogue=None) -> Prepared:
    """Memoised per handle: the solution of solver_id with params on problem, built.

    Raises NotApplicable, or BadParam("params") for tuning values outside the solver's valid space.
    """
    check(isinstance(params, dict), "params", f"must be a dict, got {type(params).__name__}")
    key = (problem.key(), solver_id, json.dumps(params, sort_keys=True, default=repr),
           epilogue.key() if epilogue else None)
    ready = handle.prepared.get(key)
    if ready is None:
        solver = registry.get(solver_id)
        reason = solver.not_applicable_reason(problem, handle.info)
        if reason is not None:
            raise NotApplicable(f"{solver_id}: {reason}")
        invalid = solver.invalid_reason(problem, params, handle.info)
        if invalid is not None:
            raise BadParam("params", f"{solver_id}: {invalid}")
        ready = prepare(handle, solver.solution(problem, params, epilogue))
        handle.prepared[key] = ready
    return ready


def blend(handle: Handle, out: cl.Buffer, result: cl.Buffer, count: int, alpha: float, beta: float) -> cl.Event:
    """out = alpha * result + beta * out on the device."""
    kernel = handle.kernels.kernel(KernelSpec.make("scale.cl", "blend"))
    return handle.launch(kernel, (round_up(count, 64),), (64,),
                         [out, result, np.float32(alpha), np.float32(beta), np.int32(count)])


def fill(handle: Handle, out: cl.Buffer, count: int, value: float = 0.0) -> cl.Event:
    kernel = handle.kernels.kernel(KernelSpec.make("scale.cl", "fill"))
    return handle.launch(kernel, (round_up(count, 64),), (64,), [out, np.float32(value), np.int32(count)])


def log_command(problem: ConvProblem, mode: str) -> None:
    """MIOPY_LOG_CMD=1: print the miopy-driver command equivalent to this call."""
    if config.log_cmd():
        trans = " -m trans" if mode == "transpose" else ""
        print(f"miopy: command: miopy-driver conv {problem.driver_args()}{trans}", file=sys.stderr)

