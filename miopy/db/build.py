"""Building a DB file to ship as the system DB (miopy.cli.build_system_db): BuildDb, written problem by
problem, and write_perf_file, a whole file at once. Both use a rollback journal so the file can be opened
read-only, and raise on errors (a build step, not a convolution call)."""
from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..version import __version__
from .records import FindDb, FindRecord
from .schema import SCHEMA_VERSION, Statement, _connect, _create_schema, _schema_state, _transaction


class BuildDb:
    """A DB file being built to ship as a system DB (miopy.cli.build_system_db): a rollback journal so it
    can be opened read-only, each problem's records one transaction so an interrupted build keeps what it
    finished and resumes. Errors raise (a build step, not a convolution call)."""

    def __init__(self, path: Path):
        self.path = path
        self.conn = _connect(str(path))
        self.conn.execute("PRAGMA journal_mode=DELETE")
        _create_schema(self.conn)
        state = _schema_state(self.conn)
        if state != "ok":
            raise ValueError(f"{path} is not a miopy DB of format {SCHEMA_VERSION}: {state}")

    def find_problems(self, device: str) -> set[str]:
        """Problem keys with find records of device made by this miopy version."""
        rows = self.conn.execute("SELECT DISTINCT problem FROM find WHERE device = ? AND miopy_version = ?",
                                 (device, __version__)).fetchall()
        return {row[0] for row in rows}

    def find_solvers(self, device: str) -> dict[str, set[str]]:
        """Problem key -> the solvers its find record ranks, for device's records of this miopy version."""
        out: dict[str, set[str]] = {}
        for problem, solver in self.conn.execute("SELECT problem, solver FROM find WHERE device = ? AND "
                                                 "miopy_version = ?", (device, __version__)):
            out.setdefault(problem, set()).add(solver)
        return out

    def put_find(self, device: str, problem: str, records: Iterable[FindRecord]) -> None:
        FindDb(self).put(device, problem, records)  # type: ignore[arg-type]

    def put_perf(self, rows: Iterable[Sequence[Any]]) -> None:
        """Raw perf rows (device, problem, solver, params, time_ms, miopy_version, date)."""
        self.write([("INSERT OR REPLACE INTO perf VALUES (?, ?, ?, ?, ?, ?, ?)", tuple(row)) for row in rows])

    def write(self, statements: Sequence[Statement]) -> bool:   # the Store interface FindDb writes through
        return _transaction(self.conn, statements)

    def query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        return self.conn.execute(sql, args).fetchall()

    def close(self) -> None:
        self.conn.execute("VACUUM")
        self.conn.close()


def write_perf_file(path: Path, rows: Iterable[Sequence[Any]], find_rows: Iterable[Sequence[Any]] = ()) -> None:
    """Write a new DB file at path (replacing any) holding these raw perf rows (and raw find rows: the file's
    own, which a perf rebuild must keep).

    It uses a rollback journal, not WAL, so it can be shipped and opened read-only. Used to build the
    system DB; errors raise (this is a build step, not a convolution call).
    """
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    conn = _connect(str(tmp))
    try:
        _create_schema(conn)
        _transaction(conn, [("INSERT OR REPLACE INTO perf VALUES (?, ?, ?, ?, ?, ?, ?)", tuple(row)) for row in rows]
                     + [(f"INSERT OR REPLACE INTO find VALUES ({', '.join('?' * len(row))})", tuple(row))
                        for row in find_rows])
        conn.execute("VACUUM")
    finally:
        conn.close()
    os.replace(tmp, path)
