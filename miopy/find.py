"""The find step: benchmark every applicable solver on a problem and rank them.

Failures are data: a solver that does not apply, needs too much workspace, fails to build or to launch
is recorded in ``FindResult.skipped`` with its reason and the search goes on. The timer is injectable:
``timer(handle, prepared, buffers) -> ms``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import pyopencl as cl

from .convolution import ConvProblem
from .errors import MiopyError, NotSupported
from .execute import Prepared, prepared_solution
from .handle import Handle
from .solvers import registry
from .solvers.base import Params, Solver

logger = logging.getLogger(__name__)

Timer = Callable[[Handle, Prepared, Mapping[str, cl.Buffer]], float]


@dataclass(frozen=True)
class ConvAlgoPerf:
    """One find record: a solver with its params, its measured time and workspace."""

    solver_id: str
    algorithm: str
    time_ms: float
    workspace_bytes: int
    params: Params = field(hash=False)
    problem_key: str = ""
    params_source: str = "default"

    def as_dict(self) -> dict:
        return {"solver_id": self.solver_id, "algorithm": self.algorithm, "time_ms": self.time_ms,
                "workspace_bytes": self.workspace_bytes, "params": self.params,
                "params_source": self.params_source}


class FindResult(list):
    """Records fastest first; ``skipped`` maps solver id -> why it is not among them."""

    def __init__(self, records=(), skipped: dict[str, str] | None = None, from_db: bool = False):
        super().__init__(records)
        self.skipped = dict(skipped or {})
        self.from_db = from_db


def default_timer(handle: Handle, prepared: Prepared, buffers: Mapping[str, cl.Buffer]) -> float:
    """Median of 5 profiled runs after 2 warm-ups."""
    return handle.time_ms(lambda: prepared.enqueue(handle, buffers))


def random_buffers(handle: Handle, problem: ConvProblem, workspace_bytes: int, seed: int = 0) -> dict:
    """Device buffers for x, w, y (random normal values) and a workspace of workspace_bytes."""
    rng = np.random.default_rng(seed)
    out = {}
    for role, desc in (("x", problem.x), ("w", problem.w), ("y", problem.y)):
        host = rng.standard_normal(desc.element_span, dtype=np.float32)
        out[role] = cl.Buffer(handle.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
    out["workspace"] = handle.alloc(workspace_bytes)
    return out


def params_for(solver: Solver, problem: ConvProblem, handle: Handle) -> tuple[Params, str]:
    """The params find uses for solver: (params, source). The perf DB plugs in here."""
    return solver.default_params(problem, handle.info), "default"


def find_problem(handle: Handle, problem: ConvProblem, *, buffers: Mapping[str, cl.Buffer] | None = None,
                     workspace_limit: int | None = None, timer: Timer | None = None,
                     solvers: Sequence[Solver] | None = None) -> FindResult:
    """Benchmark every applicable solver on problem; records fastest first.

    buffers maps roles x, w, y, workspace to device buffers; random ones are made when omitted.
    solvers defaults to the (environment-filtered) registry. Raises NotSupported when no solver succeeds.
    """
    timer = timer or default_timer
    candidates, skipped = [], {}
    for solver in (registry.solvers() if solvers is None else solvers):
        reason = _skip_reason(solver, problem, handle, workspace_limit)
        if reason:
            skipped[solver.id] = reason
        else:
            candidates.append(solver)
    if buffers is None:
        ws = max((s.workspace_bytes(problem) for s in candidates), default=0)
        buffers = random_buffers(handle, problem, ws)
    records = []
    for solver in candidates:
        record = _measure(solver, problem, handle, buffers, timer, skipped)
        if record is not None:
            records.append(record)
    for sid, why in skipped.items():
        logger.info("find %s: skipped %s: %s", problem.key(), sid, why)
    if not records:
        raise NotSupported(f"no solver ran {problem.key()}: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    records.sort(key=lambda r: r.time_ms)
    return FindResult(records, skipped)


def _skip_reason(solver: Solver, problem: ConvProblem, handle: Handle, workspace_limit: int | None) -> str | None:
    reason = solver.not_applicable_reason(problem, handle.info)
    if reason is None and workspace_limit is not None and solver.workspace_bytes(problem) > workspace_limit:
        reason = f"needs {solver.workspace_bytes(problem)} bytes of workspace, limit is {workspace_limit}"
    return reason


def _measure(solver: Solver, problem: ConvProblem, handle: Handle, buffers, timer: Timer,
             skipped: dict[str, str]) -> ConvAlgoPerf | None:
    params, source = params_for(solver, problem, handle)
    try:
        prepared = prepared_solution(handle, problem, solver.id, params)
        time_ms = timer(handle, prepared, buffers)
    except MiopyError as exc:
        skipped[solver.id] = f"{type(exc).__name__}: {exc}"
        return None
    return ConvAlgoPerf(solver.id, solver.algorithm, float(time_ms), solver.workspace_bytes(problem),
                        dict(params), problem.key(), source)
