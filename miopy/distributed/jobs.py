"""Work units of distributed tuning and find, and what a worker sends back.

A job is pure data (it pickles): a tuning job tunes one solver on one problem, a find job ranks every
applicable solver of one problem. Jobs are done per device id: on a mixed cluster (H100 and H200 workers)
each job runs once on each kind of device, and every record a worker returns is keyed by its device id.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..db import FindRecord, TuningPoint
from ..solver import Problem
from ..tuning import TuneOptions

TUNE, FIND = "tune", "find"


@dataclass(frozen=True)
class Job:
    """One unit of work: kind TUNE (solver_id set) or FIND (every solver), on problem.

    timer optionally replaces the device timer (it must pickle: a module-level function or a picklable
    object); tests inject deterministic timers and faults through it.
    """

    kind: str
    problem: Problem
    solver_id: str | None = None
    strategy: str = "local"
    options: TuneOptions = TuneOptions(budget=32)
    timer: Callable[..., float] | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        """Readable and unique per work unit (not per device)."""
        return f"{self.kind}:{self.problem.key()}:{self.solver_id or '*'}"


@dataclass(frozen=True)
class PerfRow:
    """A tuned record as it travels back from a worker."""

    solver_id: str
    params: dict
    time_ms: float


@dataclass
class JobResult:
    """What a worker sends back: every record of the job, keyed by the device it ran on, or the error."""

    job: Job
    device_id: str
    worker: str
    seconds: float
    perf: list[PerfRow] = field(default_factory=list)
    tuning: dict[str, list[TuningPoint]] = field(default_factory=dict)   # solver id -> measured points
    find: list[FindRecord] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    not_applicable: str | None = None   # the solver does not apply to the problem on this device: why

    @property
    def ok(self) -> bool:
        return self.error is None and self.not_applicable is None
