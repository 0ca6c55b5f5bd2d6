"""The public convolution calls: find, forward, backward-data, backward-weights, and the functional layer."""
from __future__ import annotations

import math
import numbers

import pyopencl as cl
import pyopencl.array as cl_array

from . import config
from .convolution import ConvDesc, ConvProblem, Direction
from .errors import BadParam, check
from .execute import OUTPUT_ROLE, blend, buffer_of, log_command, map_problem, prepared_solution
from .find import ConvAlgoPerf, FindResult, Timer, find_problem, get_solutions
from .handle import Handle
from .tensor import TensorDesc

# User-facing field names of the forward roles x, w, y, per direction.
_FIELDS = {Direction.FORWARD: {"x": "x", "w": "w", "y": "y"},
           Direction.BACKWARD_DATA: {"x": "dx", "w": "w", "y": "dy"},
           Direction.BACKWARD_WEIGHTS: {"x": "x", "w": "dw", "y": "dy"}}


def find_convolution(handle: Handle, x_desc: TensorDesc, w_desc: TensorDesc, conv_desc: ConvDesc,
                     direction: Direction | int = Direction.FORWARD, *, y_desc: TensorDesc | None = None,
                     tensors: dict | None = None, workspace_limit: int | None = None,
                     timer: Timer | None = None, mode: str | None = None, solvers=None) -> FindResult:
    """Benchmark every applicable solver for this convolution; ConvAlgoPerf records, fastest first.

    x_desc / y_desc describe the forward input / output whatever the direction. tensors optionally maps
    "x", "w", "y" (and "workspace") to device arrays to benchmark on; random buffers are used otherwise.
    mode is the find mode (normal, fast, hybrid; default MIOPY_FIND_MODE, else hybrid): see find.py.
    solvers optionally restricts find to these Solver objects (default: the registry).
    """
    mapping = map_problem(direction, x_desc, w_desc, conv_desc, y_desc)
    buffers = None
    if tensors is not None:
        user = {"x": x_desc, "w": w_desc, "y": y_desc or conv_desc.output_desc(x_desc, w_desc)}
        buffers = {prole: buffer_of(tensors[urole], urole, user[urole]) for prole, urole in mapping.roles.items()}
        if "workspace" in tensors:
            buffers["workspace"] = buffer_of(tensors["workspace"], "workspace")
    result = find_problem(handle, mapping.problem, buffers=buffers, workspace_limit=workspace_limit, timer=timer,
                          mode=mode, solvers=solvers)
    handle.chosen[mapping.problem.key()] = result[0]
    return result


def convolution_forward(handle: Handle, x_desc: TensorDesc, x, w_desc: TensorDesc, w, conv_desc: ConvDesc,
                        y_desc: TensorDesc, y, *, algo: ConvAlgoPerf | None = None, alpha: float = 1.0,
                        beta: float = 0.0, workspace=None) -> list[cl.Event]:
    """y = alpha * conv(x, w) + beta * y. algo is a find record; without one, find runs once per problem."""
    return _run(handle, Direction.FORWARD, (x_desc, x), (w_desc, w), (y_desc, y), conv_desc, algo, alpha, beta,
                workspace)


def convolution_backward_data(handle: Handle, dy_desc: TensorDesc, dy, w_desc: TensorDesc, w,
                              conv_desc: ConvDesc, dx_desc: TensorDesc, dx, *, algo: ConvAlgoPerf | None = None,
                              alpha: float = 1.0, beta: float = 0.0, workspace=None) -> list[cl.Event]:
    """dx = alpha * (gradient of the input from dy and w) + beta * dx."""
    return _run(handle, Direction.BACKWARD_DATA, (dx_desc, dx), (w_desc, w), (dy_desc, dy), conv_desc, algo,
                alpha, beta, workspace)


def convolution_backward_weights(handle: Handle, dy_desc: TensorDesc, dy, x_desc: TensorDesc, x,
                                 conv_desc: ConvDesc, dw_desc: TensorDesc, dw, *,
                                 algo: ConvAlgoPerf | None = None, alpha: float = 1.0, beta: float = 0.0,
                                 workspace=None) -> list[cl.Event]:
    """dw = alpha * (gradient of the weights from x and dy) + beta * dw."""
    return _run(handle, Direction.BACKWARD_WEIGHTS, (x_desc, x), (dw_desc, dw), (dy_desc, dy), conv_desc, algo,
                alpha, beta, workspace)


def _run(handle, direction, x, w, y, conv_desc, algo, alpha, beta, workspace) -> list[cl.Event]:
    fields = _FIELDS[direction]
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    for role, (desc, _) in zip("xwy", (x, w, y)):
        check(isinstance(desc, TensorDesc), f"{fields[role]}_desc", "must be a TensorDesc")
    for name, value in (("alpha", alpha), ("beta", beta)):
        check(isinstance(value, numbers.Real) and math.isfinite(value), name,
              f"must be a finite real number, got {value!r}")
    mapping = map_problem(direction, x[0], w[0], conv_desc, y[0])
    problem = mapping.problem
    user = {"x": x, "w": w, "y": y}
    buffers = {prole: buffer_of(user[urole][1], fields[urole], user[urole][0])
               for prole, urole in mapping.roles.items()}
    choice = algo if algo is not None else choose(handle, problem)
    check(isinstance(choice, ConvAlgoPerf), "algo", "must be a ConvAlgoPerf from find_convolution")
    check(choice.problem_key in ("", problem.key()), "algo",
          f"record is for problem {choice.problem_key}, this call is {problem.key()}")
    prepared = prepared_solution(handle, problem, choice.solver_id, choice.params)
    need = prepared.solution.workspace_bytes
    if need:
        buffers["workspace"] = (handle.scratch("workspace", need) if workspace is None
                                else buffer_of(workspace, "workspace", nbytes=need))
    log_command(problem, conv_desc.mode)
    return _enqueue_blended(handle, prepared, buffers, OUTPUT_ROLE[problem.direction], problem, alpha, beta)


def _enqueue_blended(handle, prepared, buffers, out_role, problem: ConvProblem, alpha, beta):
    if alpha == 1.0 and beta == 0.0:
        return prepared.enqueue(handle, buffers)
    desc = {"x": problem.x, "w": problem.w, "y": problem.y}[out_role]
    check(desc.is_packed, "beta", "alpha/beta blending needs a packed output")
    out = buffers[out_role]
    tmp = handle.scratch("blend", desc.nbytes)
    events = prepared.enqueue(handle, {**buffers, out_role: tmp})
    return events + [blend(handle, out, tmp, desc.element_count, alpha, beta)]


def choose(handle: Handle, problem: ConvProblem) -> ConvAlgoPerf:
    """The record used when a call names no algo, chosen once per problem and handle, then reused: the
    find DB's best through immediate mode when there is a record (and no MIOPY_FIND_ENFORCE), else find's."""
    record = handle.chosen.get(problem.key())
    if record is None:
        solutions = get_solutions(handle, problem) if config.find_enforce() is None else None
        record = solutions[0] if solutions and solutions.from_db else find_problem(handle, problem)[0]
        handle.chosen[problem.key()] = record
    return record


# -- functional layer ----------------------------------------------------------------------------------
_HANDLES: dict = {}


def handle_for(array: cl_array.Array) -> Handle:
    """A Handle on the array's context (one per context per process)."""
    ctx = array.context
    if ctx not in _HANDLES:
        _HANDLES[ctx] = Handle(context=ctx)
    return _HANDLES[ctx]


def _desc_of(array, field: str) -> TensorDesc:
    if not isinstance(array, cl_array.Array):
        raise BadParam(field, f"expected a pyopencl Array, got {type(array).__name__}")
    check(array.ndim == 4, field, f"expected a 4-D array, got shape {array.shape}")
    check(array.flags.c_contiguous, field, "must be C-contiguous")
    return TensorDesc(array.dtype, array.shape)


def conv2d(x: cl_array.Array, w: cl_array.Array, stride=1, padding=0, dilation=1, groups: int = 1,
           handle: Handle | None = None) -> cl_array.Array:
    """PyTorch-style conv2d on pyopencl arrays (no bias). Finds once per problem, then reuses the answer."""
    x_desc, w_desc = _desc_of(x, "x"), _desc_of(w, "w")
    conv = ConvDesc(padding, stride, dilation, groups)
    handle = handle or handle_for(x)
    y_desc = conv.output_desc(x_desc, w_desc)
    y = cl_array.empty(handle.queue, y_desc.dims, x.dtype)
    convolution_forward(handle, x_desc, x, w_desc, w, conv, y_desc, y)
    return y


def conv_transpose2d(x: cl_array.Array, w: cl_array.Array, stride=1, padding=0, output_padding=0,
                     groups: int = 1, dilation=1, handle: Handle | None = None) -> cl_array.Array:
    """PyTorch-style conv_transpose2d on pyopencl arrays (no bias); w is (C_in, C_out/groups, R, S)."""
    x_desc, w_desc = _desc_of(x, "x"), _desc_of(w, "w")
    conv = ConvDesc(padding, stride, dilation, groups, "transpose", output_padding)
    handle = handle or handle_for(x)
    y_desc = conv.output_desc(x_desc, w_desc)
    y = cl_array.empty(handle.queue, y_desc.dims, x.dtype)
    convolution_forward(handle, x_desc, x, w_desc, w, conv, y_desc, y)
    return y
