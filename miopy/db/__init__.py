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

The package by concern: ``schema`` (the file format, connections, fault classification), ``rows`` (how fields
are stored and read back), ``recovery`` (salvaging a damaged file's whole records), ``store`` (Store: one file
and its robustness; the user and system stores), ``records`` (PerfDb, FindDb, TuningLog and their accessors),
``build`` (writing a system DB file). Every public name is importable from ``miopy.db``; a test that patches
a module constant (BUSY_TIMEOUT_S, ATTEMPTS) patches it where it is read (``miopy.db.schema``,
``miopy.db.store``).
"""
from __future__ import annotations

from .build import BuildDb, write_perf_file
from .records import (
    SYSTEM_PERF,
    USER_PERF,
    FindDb,
    FindRecord,
    PerfDb,
    PerfRecord,
    TuningLog,
    TuningPoint,
    find_db,
    forget_problem,
    system_find_db,
    system_perf_db,
    tuning_log,
    user_perf_db,
)
from .recovery import SHAPES, Salvage, salvage
from .rows import params_key
from .schema import BUSY_TIMEOUT_S, SCHEMA_VERSION, TABLES, Statement, file_fault
from .store import ATTEMPTS, Store, system_store, user_store

__all__ = ["ATTEMPTS", "BUSY_TIMEOUT_S", "SCHEMA_VERSION", "SHAPES", "SYSTEM_PERF", "TABLES", "USER_PERF", "BuildDb",
           "FindDb", "FindRecord", "PerfDb", "PerfRecord", "Salvage", "Statement", "Store", "TuningLog", "TuningPoint",
           "file_fault", "find_db", "forget_problem", "params_key", "salvage", "system_find_db", "system_perf_db",
           "system_store", "tuning_log", "user_perf_db", "user_store", "write_perf_file"]
