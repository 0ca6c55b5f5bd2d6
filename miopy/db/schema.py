"""The DB file format and its connections: the versioned schema (TABLES, SCHEMA_VERSION), opening a file
(read-write, read-only, or a private in-memory copy), checking that a file is whole and of this schema, one
transaction, and telling SQLite's faults apart (locked, corrupt, damaged pages). The robust Store (store.py),
salvage (recovery.py), the record APIs (records.py) and building a system DB (build.py) sit on it.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 10.0

TABLES = {
    "meta": "key TEXT PRIMARY KEY, value TEXT NOT NULL",
    "perf": "device TEXT NOT NULL, problem TEXT NOT NULL, solver TEXT NOT NULL, params TEXT NOT NULL, "
            "time_ms REAL, miopy_version TEXT NOT NULL, date TEXT NOT NULL, "
            "PRIMARY KEY (device, problem, solver)",
    "find": "device TEXT NOT NULL, problem TEXT NOT NULL, rank INTEGER NOT NULL, solver TEXT NOT NULL, "
            "algorithm TEXT NOT NULL, time_ms REAL, workspace INTEGER NOT NULL, params TEXT NOT NULL, "
            "miopy_version TEXT NOT NULL, date TEXT NOT NULL, PRIMARY KEY (device, problem, rank)",
    "tuning": "device TEXT NOT NULL, problem TEXT NOT NULL, solver TEXT NOT NULL, params TEXT NOT NULL, "
              "time_ms REAL, error TEXT, miopy_version TEXT NOT NULL, date TEXT NOT NULL, "
              "PRIMARY KEY (device, problem, solver, params)",
}
Statement = tuple[str, Sequence[Any]]


class _Unusable(Exception):
    """The file is a SQLite DB, but not a whole one of this schema version."""


def _is_damage(exc: Exception) -> bool:
    """Whether exc says the file is one of this schema with damaged pages (worth salvaging), not a file of
    another program or schema version."""
    if isinstance(exc, _Unusable):
        return str(exc).startswith("quick_check")
    return _error_name(exc).startswith("SQLITE_CORRUPT") or "malformed" in str(exc)


def _connect(target: str, uri: bool = False) -> sqlite3.Connection:
    return sqlite3.connect(target, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False,
                           uri=uri)


def _connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection. A WAL file in a read-only directory cannot get its shared-memory file, so
    SQLite refuses it; it is then opened as immutable (what is checkpointed into the main file)."""
    uri = path.resolve().as_uri() + "?mode=ro"
    try:
        conn = _connect(uri, uri=True)
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return conn
    except sqlite3.Error as exc:
        if not _error_name(exc).startswith("SQLITE_CANTOPEN"):
            raise
    return _connect(uri + "&immutable=1", uri=True)


def _memory_copy(path: Path | None) -> sqlite3.Connection:
    """A private in-memory DB holding a copy of path's records when path is a whole DB of this schema,
    else empty: a store that cannot be written still serves what it holds."""
    conn = _connect(":memory:")
    if path is not None and path.is_file():
        try:
            source = _connect_readonly(path)
            try:
                if _schema_state(source) == "ok":
                    source.backup(conn)
            finally:
                source.close()
        except (sqlite3.Error, _Unusable) as exc:
            logger.debug("no copy of %s in memory: %s", path, exc)
            conn.close()
            conn = _connect(":memory:")
    _create_schema(conn)
    return conn


def _aside_name(path: Path) -> Path:
    """A new name beside path for a corrupt file: <name>.corrupt-<timestamp>-<pid>[-<n>]."""
    base = f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    dest, n = path.with_name(base), 1
    while dest.exists():
        dest, n = path.with_name(f"{base}-{n}"), n + 1
    return dest


def _schema_state(conn: sqlite3.Connection) -> str:
    """'empty' for a new file, 'ok' for this schema version; raises for anything else."""
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not names:
        return "empty"
    if "meta" not in names:
        raise _Unusable("no meta table")
    row = conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
    if row is None or row[0] != str(SCHEMA_VERSION):
        raise _Unusable(f"format version {row[0] if row else None}, expected {SCHEMA_VERSION}")
    if not set(TABLES) <= names:
        raise _Unusable(f"tables {sorted(set(TABLES) - names)} missing")
    wrong = sorted(t for t in TABLES if _columns(conn, t) != _expected_columns()[t])
    if wrong:
        raise _Unusable(f"tables {wrong} have other columns")
    check = [row[0] for row in conn.execute("PRAGMA quick_check(3)")]
    if check != ["ok"]:
        raise _Unusable(f"quick_check: {'; '.join(map(str, check))}")
    return "ok"


def _columns(conn: sqlite3.Connection, table: str) -> list[tuple]:
    return [(name, kind, pk) for _, name, kind, _, _, pk in conn.execute(f"PRAGMA table_info({table})")]


@functools.cache
def _expected_columns() -> dict[str, list[tuple]]:
    """(name, type, primary-key position) of each table's columns, as this version creates them."""
    conn = _connect(":memory:")
    try:
        _create_schema(conn)
        return {t: _columns(conn, t) for t in TABLES}
    finally:
        conn.close()


def _create_schema(conn: sqlite3.Connection) -> None:
    statements: list[Statement] = [(f"CREATE TABLE IF NOT EXISTS {t} ({cols})", ()) for t, cols in TABLES.items()]
    statements.append(("INSERT OR IGNORE INTO meta VALUES ('format_version', ?)", (str(SCHEMA_VERSION),)))
    _transaction(conn, statements)


def file_fault(path: Path) -> str | None:
    """Why the file at path is not a readable DB of this schema, or None when it is (opened read-only: the
    file is left as it is, never moved aside)."""
    try:
        conn = _connect_readonly(path)
        try:
            state = _schema_state(conn)
        finally:
            conn.close()
    except (sqlite3.Error, _Unusable) as exc:
        return str(exc)
    return "it holds no tables" if state == "empty" else None


def _unusable(path: Path) -> bool:
    """Whether the file at path is (still) not a DB of this schema; an absent or new file is usable."""
    if not path.exists():
        return False
    try:
        conn = _connect(str(path))
    except sqlite3.Error:
        return True
    try:
        _schema_state(conn)
        return False
    except (sqlite3.Error, _Unusable) as exc:
        return not _is_locked(exc)
    finally:
        conn.close()


def _transaction(conn: sqlite3.Connection, statements: Sequence[Statement]) -> bool:
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql, args in statements:
            conn.execute(sql, args)
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    return True


def _error_name(exc: Exception) -> str:
    return getattr(exc, "sqlite_errorname", "") or ""


def _is_locked(exc: Exception) -> bool:
    text = str(exc).lower()
    return _error_name(exc).startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text or "busy" in text


def _is_corrupt(exc: Exception) -> bool:
    if isinstance(exc, _Unusable):
        return True
    name = _error_name(exc)
    return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or (not name and type(exc) is sqlite3.DatabaseError)
