"""One DB file, opened lazily once per process (Store), and the process's user and system stores. Every
fault is logged once and becomes a miss: a locked file is retried with backoff, a corrupt user DB is moved
aside with its whole records salvaged into a new one (recovery.py), one that cannot be written is replaced by
an in-memory copy, and a broken system DB is ignored."""
from __future__ import annotations

import contextlib
import logging
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import filelock

from .. import config
from ..log import warn_once
from .recovery import _restore, salvage
from .schema import (
    BUSY_TIMEOUT_S,
    Statement,
    _aside_name,
    _connect,
    _connect_readonly,
    _create_schema,
    _is_corrupt,
    _is_damage,
    _is_locked,
    _memory_copy,
    _schema_state,
    _transaction,
    _Unusable,
    _unusable,
)

logger = logging.getLogger(__name__)

ATTEMPTS = 6


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
