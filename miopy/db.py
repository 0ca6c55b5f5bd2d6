"""Perf DB, find DB and tuning log: SQLite files sharing one versioned schema.

Two files. The *system* DB ships inside the package (``miopy/data/system_perf.db``), is opened read-only
and holds perf and find records measured on the project's machines (miopy.cli.build_system_db). The *user*
DB (``config.user_db_path()``) holds perf records, find records and the tuning log. Perf lookups go user,
then system, then the solver's default (see find.params_for); find lookups go user, then system.

A DB fault must never break a convolution (DESIGN invariant 6), so:
- a connection opens lazily, once per process and path, in WAL mode with a busy timeout; a locked DB is
  retried with backoff and then is a miss;
- a file that is not a SQLite DB, fails SQLite's quick_check, or has another schema version or other
  columns, is moved aside as ``<name>.corrupt-<timestamp>-<pid>`` with one warning and a new one is created;
- a user DB that cannot be created or written (read-only, full, no home directory) is replaced by an
  in-memory copy of what it holds for the process, with one warning; a missing system DB is simply empty;
- a row whose fields do not have the types this module writes (garbage JSON, a time that is not a number)
  is logged once and is a miss;
- every write is one transaction, and any other SQLite error is logged once and becomes a miss.
The hot path (a convolution call after find) reads no DB: only find, tuning and the CLIs call in here.
"""
from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import filelock

from . import config, sqlite_pages
from .log import warn_once
from .version import __version__

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 10.0
ATTEMPTS = 6
USER_PERF, SYSTEM_PERF = "user perf DB", "system perf DB"

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


class _Malformed(ValueError):
    """A stored row whose fields do not have the types this module writes (damaged or edited by hand)."""


# -- one file -----------------------------------------------------------------------------------------
class Store:
    """One DB file, opened lazily once per process; every fault is logged once and becomes a miss."""

    def __init__(self, path: Path | None, readonly: bool):
        self.path, self.readonly = path, readonly
        self.in_memory = False
        self._disabled = False
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._lock = threading.RLock()

    @property
    def label(self) -> str:
        return "system perf DB" if self.readonly else "user DB"

    def query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        """Rows of one SELECT; [] when the DB is missing, locked or broken."""
        return self._attempt(lambda conn: conn.execute(sql, args).fetchall(), [])

    def write(self, statements: Sequence[Statement]) -> bool:
        """Run statements as one transaction; False (logged once) when they could not be written."""
        assert not self.readonly, "the system perf DB is read-only"
        return self._attempt(lambda conn: _transaction(conn, statements), False)

    def _attempt(self, operation: Callable[[sqlite3.Connection], Any], miss: Any) -> Any:
        with self._lock:
            for attempt in range(ATTEMPTS):
                try:
                    conn = self._connection()
                    return miss if conn is None else operation(conn)
                except (sqlite3.Error, _Unusable) as exc:
                    if not self._recover(exc, attempt):
                        return miss
            warn_once(logger, f"{self.label} {self.path} stayed locked; going on without it")
            return miss

    def _recover(self, exc: Exception, attempt: int) -> bool:
        """Deal with exc; True when the operation should be tried again."""
        if _is_locked(exc):
            time.sleep(0.02 * 2 ** attempt * (1 + random.random()))
            return True
        if self.readonly:
            warn_once(logger, f"system perf DB {self.path} is unusable ({exc}); ignoring it")
            self._close()
            self._disabled = True
            return False
        if _is_corrupt(exc) and not self.in_memory:
            return self._move_aside(exc)
        warn_once(logger, f"user DB {self.path} failed ({exc}); keeping records in memory for this process")
        self._use_memory()
        return True

    # -- opening ------------------------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection | None:
        if self._disabled:
            return None
        if self._conn is None or self._pid != os.getpid():
            self._conn = None  # never reuse a connection inherited across fork
            self._conn, self._pid = self._open(), os.getpid()
        return self._conn

    def _open(self) -> sqlite3.Connection | None:
        if self.in_memory:
            return _memory_copy(self.path)
        if self.readonly:
            return self._open_readonly()
        if not self._location_writable():
            self.in_memory = True
            return _memory_copy(self.path)
        conn = _connect(str(self.path))
        try:
            if _schema_state(conn) == "empty":
                _create_schema(conn)
            conn.execute("PRAGMA journal_mode=WAL")
        except BaseException:
            conn.close()
            raise
        return conn

    def _open_readonly(self) -> sqlite3.Connection | None:
        if self.path is None or not self.path.is_file():
            return None  # no system DB shipped: every lookup misses
        conn = _connect_readonly(self.path)
        try:
            if _schema_state(conn) == "empty":
                raise _Unusable("the file holds no tables")
        except BaseException:
            conn.close()
            raise
        return conn

    def _location_writable(self) -> bool:
        if self.path is None:
            warn_once(logger, "no user DB: MIOPY_USER_DB_PATH is unset and there is no home directory; keeping "
                              "perf and find records in memory for this process")
            return False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            warn_once(logger, f"cannot create the user DB directory {self.path.parent} ({exc}); "
                              "keeping perf and find records in memory for this process")
            return False
        targets = [self.path.parent] + ([self.path] if self.path.exists() else [])
        if all(os.access(t, os.W_OK) for t in targets):
            return True
        warn_once(logger, f"user DB {self.path} is read-only; working on a copy of it in memory for this process "
                          "(records written now are not kept)")
        return False

    def _use_memory(self) -> None:
        self._close()
        self.in_memory = True

    def _close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
        self._conn = None

    def _move_aside(self, exc: Exception) -> bool:
        """Rename a corrupt file (under a file lock, unless another process already replaced it)."""
        self._close()
        assert self.path is not None   # a path-less store lives in memory and is never moved aside
        try:
            with filelock.FileLock(str(self.path) + ".lock", timeout=BUSY_TIMEOUT_S):
                if _unusable(self.path):
                    saved = salvage(self.path) if _is_damage(exc) else None   # while its WAL is beside it
                    dest = _aside_name(self.path)
                    os.replace(self.path, dest)
                    for suffix in ("-wal", "-shm"):
                        Path(str(self.path) + suffix).unlink(missing_ok=True)
                    kept = "" if saved is None else f"; {_restore(self.path, saved)}"
                    warn_once(logger, f"user DB {self.path} was unusable ({exc}); moved it to {dest.name} "
                                      f"and started a new one{kept}")
        except (OSError, filelock.Timeout) as err:
            warn_once(logger, f"user DB {self.path} is unusable ({exc}) and could not be moved aside ({err}); "
                              "keeping records in memory for this process")
            self._use_memory()
        return True


# -- salvage: the records a damaged user DB still holds -----------------------------------------------------
# Each table's columns in order, its primary key's positions, and the Python types of a whole row's values.
_TEXT, _TIME, _INT, _ERROR = (str,), (int, float, type(None)), (int,), (str, type(None))
SHAPES = {
    "perf": ((0, 1, 2), (_TEXT, _TEXT, _TEXT, _TEXT, _TIME, _TEXT, _TEXT)),
    "find": ((0, 1, 2), (_TEXT, _TEXT, _INT, _TEXT, _TEXT, _TIME, _INT, _TEXT, _TEXT, _TEXT)),
    "tuning": ((0, 1, 2, 3), (_TEXT, _TEXT, _TEXT, _TEXT, _TIME, _ERROR, _TEXT, _TEXT)),
}


@dataclass
class Salvage:
    """The whole records read from a damaged user DB, by table, and how many rows of it were lost."""

    rows: dict[str, list[tuple]]
    lost: int
    unreadable_pages: int

    def summary(self, kept: int) -> str:
        rankings = len({row[:2] for row in self.rows["find"]})
        return (f"kept the {kept} rows it could read and check ({len(self.rows['perf'])} perf records, "
                f"{rankings} find rankings of {len(self.rows['find'])} rows, {len(self.rows['tuning'])} tuning "
                f"points), lost at least {self.lost} rows"
                + (f" ({self.unreadable_pages} pages could not be read)" if self.unreadable_pages else ""))


def salvage(path: Path) -> Salvage:
    """Every whole record of a damaged user DB file: rows SQLite still reads (the WAL's included), then rows
    on the file's readable leaf pages (miopy.sqlite_pages), each checked as the readers check it; a find
    ranking only whole. Lost counts the rows the file's indexes name that were not kept."""
    by_key: dict[str, dict[tuple, tuple]] = {table: {} for table in SHAPES}
    seen_rowids: dict[str, set[int]] = {table: set() for table in SHAPES}
    try:
        scan = sqlite_pages.scan(path.read_bytes())
    except (OSError, sqlite_pages.PageError):
        scan = sqlite_pages.Scan()
    pages = ((_table_of(values), rowid, values) for rowid, values in scan.rows)
    for table, rowid, row in [*_rows_sqlite_reads(path), *pages]:   # SQLite's first: it sees the WAL
        if table is not None:
            by_key[table].setdefault(_key(table, row), row)
            seen_rowids[table].add(rowid)
    rows = {table: [row for row in found.values() if _whole(table, row)] for table, found in by_key.items()}
    ranks = _known_ranks(scan.index_keys, by_key["find"].values())
    rows["find"] = _whole_rankings(rows["find"], ranks)
    kept = {table: {_key(table, row) for row in table_rows} for table, table_rows in rows.items()}
    lost = sum(_key(table, values) not in kept[table] for table, found in by_key.items() for values in found.values())
    lost += _unseen_indexed_rows(scan.index_keys, seen_rowids)
    return Salvage(rows, lost, scan.unreadable)


def _rows_sqlite_reads(path: Path) -> list[tuple[str | None, int, tuple]]:
    """(table, rowid, row) of every row SQLite yields before it meets damage, table by table."""
    out: list[tuple[str | None, int, tuple]] = []
    try:
        conn = _connect_readonly(path)
    except sqlite3.Error:
        return out
    try:
        for table in SHAPES:
            try:
                for rowid, *row in conn.execute(f"SELECT rowid, * FROM {table}"):
                    out.append((table, rowid, tuple(row)))
            except sqlite3.Error as exc:
                logger.debug("salvage of %s: %s stops at %s", path, table, exc)
    finally:
        conn.close()
    return out


def _table_of(values: tuple) -> str | None:
    """The table whose row shape (column count and value types) values has, if any."""
    for table, (_, kinds) in SHAPES.items():
        if len(values) == len(kinds) and all(type(v) in k for v, k in zip(values, kinds)):
            return table
    return None


def _key(table: str, row: tuple) -> tuple:
    return tuple(row[i] for i in SHAPES[table][0])


def _whole(table: str, row: tuple) -> bool:
    """Whether row is a record miopy's readers would accept (types, params JSON, times)."""
    if _table_of(row) != table:
        return False
    params = {"perf": 3, "find": 7, "tuning": 3}[table]
    try:
        _parsed_params(row[params])
        _parsed_time(row[params + 1] if table != "find" else row[5], math.nan)
    except _Malformed:
        return False
    return table != "find" or (row[2] >= 0 and row[6] >= 0)


def _known_ranks(index_keys: list[tuple], rows: Iterable[tuple]) -> dict[tuple, set]:
    """(device, problem) -> every rank the file shows a find row of (rows read, and the find index's keys)."""
    known: dict[tuple, set] = {}
    for key in [*index_keys, *rows]:
        if len(key) in (4, 10) and type(key[2]) is int and type(key[0]) is str:
            known.setdefault(key[:2], set()).add(key[2])
    return known


def _whole_rankings(rows: list[tuple], known_ranks: dict[tuple, set]) -> list[tuple]:
    """The rows of the find rankings that are whole: ranks 0..n-1 all kept, and no other rank of the same
    problem named anywhere in the file (a ranking whose tail was on a lost page is dropped)."""
    rankings: dict[tuple, list[tuple]] = {}
    for row in rows:
        rankings.setdefault(row[:2], []).append(row)
    return [row for key, ranking in rankings.items()
            if sorted(r[2] for r in ranking) == list(range(len(ranking))) == sorted(known_ranks.get(key, ()))
            for row in ranking]


def _unseen_indexed_rows(index_keys: list[tuple], seen_rowids: dict[str, set[int]]) -> int:
    """Rows a primary-key index names (its key's last value is the rowid) whose table page was not read:
    perf keys (device, problem, solver, rowid), find (device, problem, rank, rowid), tuning 4 + rowid."""
    unseen: set[tuple[str, int]] = set()
    for key in index_keys:
        if not key or type(key[-1]) is not int:
            continue
        table = ("tuning" if len(key) == 5 else "find" if len(key) == 4 and type(key[2]) is int
                 else "perf" if len(key) == 4 else None)
        if table is not None and key[-1] not in seen_rowids[table]:
            unseen.add((table, key[-1]))
    return len(unseen)


def _restore(path: Path, saved: Salvage) -> str:
    """Write saved's records into the new DB at path (kept alongside anything written meanwhile); the
    warning's account of what was kept and lost."""
    statements: list[Statement] = [
        (f"INSERT OR IGNORE INTO {table} VALUES ({', '.join('?' * len(row))})", row)
        for table, rows in saved.rows.items() for row in rows]
    kept = len(statements)
    if statements:
        try:
            conn = _connect(str(path))
            try:
                _create_schema(conn)
                _transaction(conn, statements)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            return f"could not keep the {kept} records it could read ({exc})"
    return saved.summary(kept)


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


_STORES: dict[tuple[str, bool], Store] = {}
_STORES_LOCK = threading.Lock()


def _store(path: Path | None, readonly: bool) -> Store:
    key = (str(path), readonly)
    with _STORES_LOCK:
        if key not in _STORES:
            _STORES[key] = Store(path, readonly)
        return _STORES[key]


def user_store() -> Store:
    """The user DB of config.user_db_path(), one Store per process and path (in memory when there is none)."""
    return _store(config.user_db_path(), readonly=False)


def system_store() -> Store:
    """The read-only system DB of config.system_db_path()."""
    return _store(config.system_db_path(), readonly=True)


# -- records ------------------------------------------------------------------------------------------
def params_key(params: Mapping[str, Any]) -> str:
    """Canonical JSON of params: how params are stored and compared."""
    return json.dumps(dict(params), sort_keys=True)


def _parsed_params(text: Any) -> dict:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        raise _Malformed(f"params {text!r} are not JSON") from None
    if not isinstance(value, dict):
        raise _Malformed(f"params {text!r} are not a JSON object")
    return value


def _parsed_time(value: Any, missing: float) -> float:
    """A stored time in ms; NULL (a failure, or no time) reads as missing."""
    if value is None:
        return missing
    if type(value) not in (int, float) or not value >= 0:
        raise _Malformed(f"time {value!r} is not a number of ms")
    return float(value)


def _typed(value: Any, kind: type, what: str) -> Any:
    if type(value) is not kind:
        raise _Malformed(f"{what} {value!r} is not of type {kind.__name__}")
    return value


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _stamp() -> tuple[str, str]:
    return __version__, datetime.now(timezone.utc).isoformat(timespec="seconds")


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
