"""The record APIs over the stores: the perf DB (tuned params per device, problem and solver), the find DB
(a problem's last complete ranking) and the tuning log (every point a tuning run measured), for the user DB
and the read-only system DB."""
from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..log import warn_once
from ..version import __version__
from .rows import _finite_or_none, _Malformed, _parsed_params, _parsed_time, _stamp, _typed, params_key
from .schema import Statement
from .store import Store, system_store, user_store

logger = logging.getLogger(__name__)

USER_PERF, SYSTEM_PERF = "user perf DB", "system perf DB"


@dataclass(frozen=True)
class PerfRecord:
    """Tuned params of one solver on one problem and device, with their time and provenance."""

    params: dict
    time_ms: float
    miopy_version: str
    date: str


class PerfDb:
    """(device id, problem key, solver id) -> tuned params."""

    def __init__(self, store: Store, label: str):
        self.store, self.label = store, label

    def get(self, device: str, problem: str, solver: str) -> PerfRecord | None:
        rows = self.store.query("SELECT params, time_ms, miopy_version, date FROM perf "
                                "WHERE device = ? AND problem = ? AND solver = ?", (device, problem, solver))
        if not rows:
            return None
        params, time_ms, version, date = rows[0]
        try:
            return PerfRecord(_parsed_params(params), _parsed_time(time_ms, math.nan), version, date)
        except _Malformed as exc:
            warn_once(logger, f"{self.label}: the record of {solver} on {problem} is malformed ({exc}); ignoring it")
            return None

    def put(self, device: str, problem: str, solver: str, params: Mapping, time_ms: float) -> bool:
        return self.store.write([("INSERT OR REPLACE INTO perf VALUES (?, ?, ?, ?, ?, ?, ?)",
                                  (device, problem, solver, params_key(params), _finite_or_none(time_ms),
                                   *_stamp()))])

    def of_solver(self, solver: str) -> list[tuple[str, str, dict]]:
        """(device, problem, params) of every well-formed record of solver, in (device, problem) order."""
        out = []
        for device, problem, params in self.store.query("SELECT device, problem, params FROM perf WHERE solver = ? "
                                                        "ORDER BY device, problem", (solver,)):
            try:
                out.append((_typed(device, str, "device"), _typed(problem, str, "problem"), _parsed_params(params)))
            except _Malformed:
                continue
        return out

    def rows(self) -> list[tuple]:
        """Every record as a raw row (device, problem, solver, params, time_ms, miopy_version, date)."""
        return self.store.query("SELECT device, problem, solver, params, time_ms, miopy_version, date FROM perf "
                                "ORDER BY device, problem, solver")


@dataclass(frozen=True)
class FindRecord:
    """One ranked entry of a stored find."""

    solver_id: str
    algorithm: str
    time_ms: float
    workspace_bytes: int
    params: dict
    miopy_version: str = __version__


class FindDb:
    """(device id, problem key) -> the ranked records of the last complete find."""

    def __init__(self, store: Store):
        self.store = store

    def get(self, device: str, problem: str) -> list[FindRecord]:
        """The stored ranking, or [] when there is none or any of its rows is malformed (logged once)."""
        rows = self.store.query("SELECT rank, solver, algorithm, time_ms, workspace, params, miopy_version FROM find "
                                "WHERE device = ? AND problem = ? ORDER BY rank", (device, problem))
        try:
            return [_find_record(i, row) for i, row in enumerate(rows)]
        except _Malformed as exc:
            warn_once(logger, f"user DB: the find record of {problem} is malformed ({exc}); ignoring it")
            return []

    def put(self, device: str, problem: str, records: Iterable[FindRecord]) -> bool:
        """Replace the stored ranking of (device, problem) by records, in their order."""
        version, date = _stamp()
        statements: list[Statement] = [("DELETE FROM find WHERE device = ? AND problem = ?", (device, problem))]
        for rank, r in enumerate(records):
            statements.append(("INSERT INTO find VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               (device, problem, rank, r.solver_id, r.algorithm, _finite_or_none(r.time_ms),
                                r.workspace_bytes, params_key(r.params), version, date)))
        return self.store.write(statements)


def _find_record(position: int, row: Sequence[Any]) -> FindRecord:
    """The FindRecord of one row, which must hold rank position; _Malformed when a field is wrong."""
    rank, solver, algorithm, time_ms, workspace, params, version = row
    if rank != position:
        raise _Malformed(f"rank {rank!r} where {position} belongs")
    if _typed(workspace, int, "workspace") < 0:
        raise _Malformed(f"workspace {workspace} < 0")
    return FindRecord(_typed(solver, str, "solver"), _typed(algorithm, str, "algorithm"),
                      _parsed_time(time_ms, math.inf), workspace, _parsed_params(params),
                      _typed(version, str, "miopy_version"))


@dataclass(frozen=True)
class TuningPoint:
    """One measured grid point: its time (inf when it failed) and why it failed."""

    params: dict
    time_ms: float
    error: str | None


class TuningLog:
    """Every point a tuning run measured, keyed by (device, problem, solver, params), so runs resume."""

    def __init__(self, store: Store):
        self.store = store

    def get(self, device: str, problem: str, solver: str) -> dict[str, TuningPoint]:
        """The points recorded by this miopy version (another version's kernels may time differently);
        malformed rows are left out, with one warning."""
        rows = self.store.query("SELECT params, time_ms, error FROM tuning WHERE device = ? AND problem = ? "
                                "AND solver = ? AND miopy_version = ?", (device, problem, solver, __version__))
        out, malformed = {}, []
        for params, time_ms, error in rows:
            try:
                point = TuningPoint(_parsed_params(params), _parsed_time(time_ms, math.inf),
                                    None if error is None else _typed(error, str, "error"))
            except _Malformed as exc:
                malformed.append(str(exc))
                continue
            out[params_key(point.params)] = point
        if malformed:
            warn_once(logger, f"user DB: {len(malformed)} malformed tuning point(s) of {solver} on {problem} "
                              f"ignored (first: {malformed[0]})")
        return out

    def of_solver(self, device: str, solver: str, limit: int = 20000) -> dict[str, list[TuningPoint]]:
        """This version's points of solver on device, by problem (at most limit rows; malformed ones left out
        silently): the measured predecessors a new problem's search is ordered by (miopy.tuning.priors)."""
        rows = self.store.query("SELECT problem, params, time_ms, error FROM tuning WHERE device = ? AND solver = ? "
                                "AND miopy_version = ? ORDER BY problem, params LIMIT ?",
                                (device, solver, __version__, limit))
        out: dict[str, list[TuningPoint]] = {}
        for problem, params, time_ms, error in rows:
            try:
                point = TuningPoint(_parsed_params(params), _parsed_time(time_ms, math.inf), error)
            except _Malformed:
                continue
            out.setdefault(str(problem), []).append(point)
        return out

    def put(self, device: str, problem: str, solver: str, point: TuningPoint) -> bool:
        return self.store.write([("INSERT OR REPLACE INTO tuning VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                  (device, problem, solver, params_key(point.params),
                                   _finite_or_none(point.time_ms), point.error, *_stamp()))])


def user_perf_db() -> PerfDb:
    return PerfDb(user_store(), USER_PERF)


def system_perf_db() -> PerfDb:
    return PerfDb(system_store(), SYSTEM_PERF)


def find_db() -> FindDb:
    return FindDb(user_store())


def system_find_db() -> FindDb:
    """The find records shipped in the system DB (read-only): rankings measured on the project's machines."""
    return FindDb(system_store())


def tuning_log() -> TuningLog:
    return TuningLog(user_store())


def forget_problem(device: str, problem: str) -> bool:
    """Drop the user perf records and the find record of (device, problem), in one transaction."""
    return user_store().write([(f"DELETE FROM {table} WHERE device = ? AND problem = ?", (device, problem))
                               for table in ("perf", "find")])
