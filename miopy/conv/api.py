"""The descriptor API of convolution: find_convolution and the three directions, running on plans.

A call is a memo lookup of a plan by a tuple of descriptors (whose hashes are computed once) and the
find record's identity, then ``Plan.run_values``. The first call with new descriptors (or a new record)
validates them, maps the call onto a ConvProblem, picks the solution (the record's, else the find DB's
through immediate mode, else find's) and builds the plan; every later call only checks buffers and
enqueues: it compiles nothing, reads no DB, allocates nothing and formats no string.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyopencl as cl

from .. import config
from ..errors import BadParam, check
from ..find import AlgoPerf, FindResult, Timer, get_solutions
from ..handle import Handle
from ..plan import Operand, Plan, buffer_of, checked_solution, memo_plan, overlap_reason
from ..solver import Solver
from ..tensor import TensorDesc
from ..tuning import find_after_search
from .problem import FIELDS, ConvDesc, ConvProblem, Direction, ProblemMapping, map_problem

ConvAlgoPerf = AlgoPerf   # MIOpen's miopenConvAlgoPerf_t: a find record of a convolution
MAX_RECORDS_PER_CALL = 8  # plans kept per descriptor tuple for different find records


def find(handle: Handle, problem: ConvProblem, **kwargs: Any) -> FindResult:
    """find_problem for a convolution, tuning every applicable solver first under MIOPY_FIND_ENFORCE=search
    (miopy.tuning.find_after_search)."""
    return find_after_search(handle, problem, **kwargs)


def find_convolution(handle: Handle, x_desc: TensorDesc, w_desc: TensorDesc, conv_desc: ConvDesc,
                     direction: Direction | int = Direction.FORWARD, *, y_desc: TensorDesc | None = None,
                     tensors: dict | None = None, workspace_limit: int | None = None,
                     timer: Timer | None = None, mode: str | None = None,
                     solvers: Sequence[Solver] | None = None, verify: bool | None = None) -> FindResult:
    """Benchmark every applicable solver for this convolution; ConvAlgoPerf records, fastest first.

    x_desc / y_desc describe the forward input / output whatever the direction. tensors optionally maps
    "x", "w", "y" (and "workspace") to device arrays to benchmark on; random buffers are used otherwise.
    mode is the find mode (normal, fast, hybrid; default MIOPY_FIND_MODE, else hybrid): see miopy.find.
    solvers optionally restricts find to these Solver objects (default: the registry). verify turns find's
    accuracy check of each candidate on or off (None: MIOPY_FIND_VERIFY, default on; see miopy.find).
    """
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    mapping = map_problem(direction, x_desc, w_desc, conv_desc, y_desc, handle.math_mode)
    buffers = None if tensors is None else _find_buffers(handle, mapping, tensors)
    result = find(handle, mapping.problem, buffers=buffers, workspace_limit=workspace_limit, timer=timer,
                  mode=mode, solvers=solvers, verify=verify)
    _choose_record(handle, mapping.problem, result[0])
    return result


def _find_buffers(handle: Handle, mapping: ProblemMapping, tensors) -> dict:
    """find_convolution's tensors (x, w, y and optionally workspace, by forward role) as the problem's
    buffers, each checked against its descriptor; the output may share no memory with another."""
    check(isinstance(tensors, dict), "tensors",
          f"must be a dict of x, w, y (and workspace), got {type(tensors).__name__}")
    extra = sorted(set(tensors) - {"x", "w", "y", "workspace"}, key=str)
    missing = [role for role in "xwy" if role not in tensors]
    check(not extra and not missing, "tensors", f"takes x, w, y and workspace; missing {missing}, unexpected {extra}")
    problem = mapping.problem
    descs = problem.tensors()
    buffers = {prole: buffer_of(tensors[urole], f"tensors[{urole!r}]", descs[prole], context=handle.context)
               for prole, urole in mapping.roles.items()}
    spans = {f"tensors[{mapping.roles[r]!r}]": (buffers[r], descs[r].nbytes) for r in descs}
    if "workspace" in tensors:
        buffers["workspace"] = buffer_of(tensors["workspace"], "tensors['workspace']", context=handle.context)
        spans["tensors['workspace']"] = (buffers["workspace"], buffers["workspace"].size)
    written = [f"tensors[{mapping.roles[r]!r}]" for r in problem.outputs()] + [s for s in spans if "workspace" in s]
    pair = overlap_reason(spans, written)
    if pair is not None:
        raise BadParam(pair[0], f"{pair[0]} and {pair[1]} share memory: find writes {pair[0]}")
    return buffers


def convolution_forward(handle: Handle, x_desc: TensorDesc, x, w_desc: TensorDesc, w, conv_desc: ConvDesc,
                        y_desc: TensorDesc, y, *, algo: AlgoPerf | None = None, alpha: float = 1.0,
                        beta: float = 0.0, workspace=None) -> list[cl.Event]:
    """y = alpha * conv(x, w) + beta * y. algo is a find record; without one, find runs once per problem."""
    plan = _plan(handle, Direction.FORWARD, x_desc, w_desc, conv_desc, y_desc, algo)
    return plan.run_values((x, w, y), alpha, beta, workspace)


def convolution_backward_data(handle: Handle, dy_desc: TensorDesc, dy, w_desc: TensorDesc, w,
                              conv_desc: ConvDesc, dx_desc: TensorDesc, dx, *, algo: AlgoPerf | None = None,
                              alpha: float = 1.0, beta: float = 0.0, workspace=None) -> list[cl.Event]:
    """dx = alpha * (gradient of the input from dy and w) + beta * dx."""
    plan = _plan(handle, Direction.BACKWARD_DATA, dx_desc, w_desc, conv_desc, dy_desc, algo)
    return plan.run_values((dx, w, dy), alpha, beta, workspace)


def convolution_backward_weights(handle: Handle, dy_desc: TensorDesc, dy, x_desc: TensorDesc, x,
                                 conv_desc: ConvDesc, dw_desc: TensorDesc, dw, *,
                                 algo: AlgoPerf | None = None, alpha: float = 1.0, beta: float = 0.0,
                                 workspace=None) -> list[cl.Event]:
    """dw = alpha * (gradient of the weights from x and dy) + beta * dw."""
    plan = _plan(handle, Direction.BACKWARD_WEIGHTS, x_desc, dw_desc, conv_desc, dy_desc, algo)
    return plan.run_values((x, dw, dy), alpha, beta, workspace)


def convolution_plan(handle: Handle, direction: Direction | int, x_desc: TensorDesc, w_desc: TensorDesc,
                     conv_desc: ConvDesc, y_desc: TensorDesc | None = None, *, algo: AlgoPerf | None = None,
                     workspace=None) -> Plan:
    """A plan for one convolution call, built now: run it with plan.run(x=..., w=..., y=...) (names as the
    direction's call: dy, dx, dw in the backward directions). Not memoised: the caller keeps it."""
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    mapping = map_problem(direction, x_desc, w_desc, conv_desc, y_desc, handle.math_mode)
    record = _checked_record(handle, mapping.problem, algo)
    return _build(handle, mapping, record, workspace)


# -- the memo ---------------------------------------------------------------------------------------------
@dataclass
class _Call:
    """One memoised call: the record it was built for (by identity) and its plan."""

    algo: AlgoPerf | None
    plan: Plan
    log: str | None   # the miopy-driver command printed per call under MIOPY_LOG_CMD (read at build time)


class _CallShape:
    """The plans of one call shape (direction, descriptors, math mode), by the find record each was built for:
    the most recent MAX_RECORDS_PER_CALL records."""

    def __init__(self) -> None:
        self.calls: list[_Call] = []

    def get(self, algo: AlgoPerf | None) -> _Call | None:
        for call in self.calls:
            if call.algo is algo:
                return call
        return None

    def add(self, call: _Call) -> None:
        self.calls[:] = [c for c in self.calls if c.algo is not call.algo][-(MAX_RECORDS_PER_CALL - 1):] + [call]

    def forget_choice(self, problem_key: str) -> None:
        """Drop the plans built for calls without an algo on problem_key (the choice changed)."""
        self.calls[:] = [c for c in self.calls if not (c.algo is None and c.plan.problem.key() == problem_key)]


def _plan(handle: Handle, direction: Direction, x_desc, w_desc, conv_desc, y_desc, algo) -> Plan:
    """The warm path: a memo lookup and an identity comparison; the cold path builds and memoises."""
    try:
        key = ("conv.call", direction, x_desc, w_desc, conv_desc, y_desc, handle.math_mode)
    except AttributeError:   # not a Handle: the cold path says so
        key = None
    shape = memo_plan(handle, key, _CallShape) if key is not None else _CallShape()
    call = shape.get(algo)
    if call is None:
        call = _cold_call(handle, shape, direction, x_desc, w_desc, conv_desc, y_desc, algo)
    elif call.log is not None:
        print(call.log, file=sys.stderr)
    return call.plan


def _cold_call(handle: Handle, shape: _CallShape, direction: Direction, x_desc, w_desc, conv_desc, y_desc,
               algo) -> _Call:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    for field, desc in zip((_role_field(direction, r) + "_desc" for r in "xwy"), (x_desc, w_desc, y_desc)):
        check(isinstance(desc, TensorDesc), field, "must be a TensorDesc")
    mapping = map_problem(direction, x_desc, w_desc, conv_desc, y_desc, handle.math_mode)
    record = _checked_record(handle, mapping.problem, algo)
    plan = next((c.plan for c in shape.calls if c.algo is not None and algo is not None
                 and (c.algo.solver_id, c.algo.params) == (record.solver_id, record.params)), None)
    plan = plan or _build(handle, mapping, record, None)
    log = None
    if config.log_cmd():
        trans = " -m trans" if conv_desc.mode == "transpose" else ""
        log = f"miopy: command: miopy-driver {mapping.problem.driver_command()}{trans}"
        print(log, file=sys.stderr)
    call = _Call(algo, plan, log)
    shape.add(call)
    return call


def _checked_record(handle: Handle, problem: ConvProblem, algo: AlgoPerf | None) -> AlgoPerf:
    record = algo if algo is not None else choose(handle, problem)
    check(isinstance(record, AlgoPerf), "algo", "must be a ConvAlgoPerf from find_convolution")
    check(record.problem_key in ("", problem.key()), "algo",
          f"record is for problem {record.problem_key}, this call is {problem.key()}")
    return record


def _build(handle: Handle, mapping: ProblemMapping, record: AlgoPerf, workspace) -> Plan:
    """The plan of record's solution, its operands in the call's (x, w, y) order with the call's names."""
    problem = mapping.problem
    solution = checked_solution(handle, problem, record.solver_id, record.params)
    direction = _user_direction(mapping)
    to_problem = {urole: prole for prole, urole in mapping.roles.items()}
    tensors, outputs = problem.tensors(), problem.outputs()
    ops = [Operand(to_problem[u], FIELDS[direction][u], tensors[to_problem[u]], to_problem[u] in outputs)
           for u in "xwy"]
    return Plan(handle, solution, ops, workspace=workspace, blend_output=outputs[0], problem=problem)


def _user_direction(mapping: ProblemMapping) -> Direction:
    """The direction of the user's call (a transpose's forward is its problem's backward-data)."""
    d = mapping.problem.direction
    if mapping.roles["x"] == "x" or d is Direction.BACKWARD_WEIGHTS:
        return d
    return Direction.FORWARD if d is Direction.BACKWARD_DATA else Direction.BACKWARD_DATA


def _role_field(direction: Direction, role: str) -> str:
    return FIELDS[direction][role]


def choose(handle: Handle, problem: ConvProblem) -> AlgoPerf:
    """The record used when a call names no algo, chosen once per problem and handle, then reused: the
    find DB's best through immediate mode when there is a record (and no MIOPY_FIND_ENFORCE), else find's."""
    record = handle.chosen.get(problem.key())
    if record is None:
        solutions = get_solutions(handle, problem) if config.find_enforce() is None else None
        record = solutions[0] if solutions and solutions.from_db else find(handle, problem)[0]
        handle.chosen[problem.key()] = record
    return record


def _choose_record(handle: Handle, problem: ConvProblem, record: AlgoPerf) -> None:
    """Make record the one calls without an algo use, dropping plans built for the previous choice."""
    key = problem.key()
    handle.chosen[key] = record
    for _, shape in handle.plans.entries("conv.call"):
        shape.forget_choice(key)
    for memo_key, (plan, _) in handle.plans.entries("conv.conv2d"):
        if plan.problem.key() == key:
            handle.plans.pop(memo_key)   # the functional layer's plan for the previous choice
