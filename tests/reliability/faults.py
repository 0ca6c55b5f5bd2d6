"""The reliability suite's shared pieces: the stores under test, the faults tried on them, the ways a file
is corrupted, how a store is checked afterwards, and the record every test adds to the report.

A store is anything miopy keeps on disk: the kernel binary cache, and the user DB (perf records, find
records and the tuning log in one SQLite file). Every fault that is not specific to one store runs on each.
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyopencl as cl

from miopy import db, kernel_cache
from miopy.conv import registry

# -- the work done under every fault ------------------------------------------------------------------------
# Few shapes and kernel tags, shared by every test, so PoCL's own cache builds each program once per
# machine and the suite stays fast where that cache starts cold (CI).
# (n, c, h, w, k, r, s, pad, stride, dilation, groups); the first is also miopy-driver's problem.
PROBLEMS = [[1, 4, 6, 6, 4, 3, 3, 1, 1, 1, 1], [2, 6, 7, 5, 4, 3, 3, 0, 2, 1, 2]]
DRIVER_FLAGS = "-n 1 -c 4 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1 -F 0 -i 1".split()
# miopy-tune on miopy-driver's problem, all three directions, naive only (one cheap program), 3 points each.
TUNE_FLAGS = DRIVER_FLAGS[:DRIVER_FLAGS.index("-i")] + "-S ConvDirectNaive --budget 3 --jobs 0".split()
TAGS = list(range(8))  # MIOPY_TEST_TAG values of the cheap scale.cl programs (tests/reliability/worker.py)


# -- stores ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StoreCheck:
    """What a store holds after a run: whole entries, entries that fail their check, leftover temporaries."""

    whole: int
    bad: tuple[str, ...]
    temporaries: int


@dataclass(frozen=True)
class Store:
    """A disk store of miopy: its name, the variable that locates it, and how to check what it holds."""

    name: str
    env_var: str
    location: Callable[[Path], Path]          # directory given to the test -> value of env_var
    check: Callable[[Path, object], StoreCheck]  # (location, Handle) -> StoreCheck


def cache_entries(root: Path) -> list[Path]:
    """Every kernel cache entry file under root (lock files and temporaries excluded)."""
    return sorted((root / kernel_cache.FORMAT).glob("*/*.bin"))


def cache_temporaries(root: Path) -> list[Path]:
    return sorted((root / kernel_cache.FORMAT).glob("*/.*.tmp"))


def check_kernel_cache(root: Path, handle) -> StoreCheck:
    """Every entry's header and key-bound checksum must be right, and its binary (unless it is a marker entry)
    must load on handle's device."""
    bad, whole = [], 0
    for path in cache_entries(root):
        blob = path.read_bytes()
        fault = kernel_cache.entry_fault(blob, path.stem)
        payload = blob[kernel_cache.HEADER_BYTES:]
        if fault is None and payload != kernel_cache.MARKER:  # a marker is whole once its checksum holds
            try:
                prg = cl.Program(handle.context, [handle.device], [payload]).build()
                fault = None if prg.get_info(cl.program_info.KERNEL_NAMES) else "no kernels"
            except cl.Error as exc:
                fault = f"does not load: {exc}"
        if fault is None:
            whole += 1
        else:
            bad.append(f"{path.name}: {fault}")
    return StoreCheck(whole, tuple(bad), len(cache_temporaries(root)))


def _db_rows(path: Path, table: str) -> list[tuple]:
    columns = {"perf": "device, problem, solver, params, time_ms",
               "find": "device, problem, rank, solver, algorithm, time_ms, workspace, params, miopy_version",
               "tuning": "device, problem, solver, params, time_ms, error"}[table]
    with contextlib.closing(_read_only(path)) as conn:
        return conn.execute(f"SELECT {columns} FROM {table} ORDER BY 1, 2, 3").fetchall()


def _read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)


def _perf_fault(row: tuple) -> str | None:
    """Why a perf row is not a record miopy would use: unparsable, or params that are not its solver's."""
    device, problem, solver, params, time_ms = row
    parsed = db.rows._parsed_params(params)
    db.rows._parsed_time(time_ms, 0.0)
    known = {s.id: s for s in registry.REGISTRY.ALL}
    if solver not in known or set(parsed) != set(known[solver].grid):
        return f"params {params} are not {solver}'s"
    return None


def _find_fault(rows: list[tuple]) -> str | None:
    for position, row in enumerate(rows):
        db.records._find_record(position, row)
    return None


def _tuning_fault(row: tuple) -> str | None:
    db.rows._parsed_params(row[3])
    db.rows._parsed_time(row[4], 0.0)
    return None


def _row_faults(path: Path) -> tuple[int, list[str]]:
    """(whole records, faults) of a user DB: perf rows, find rankings and tuning points, each parsed as miopy
    reads it (a find ranking is whole when its ranks run 0..n-1 and every row parses)."""
    rankings = defaultdict(list)
    for row in _db_rows(path, "find"):
        rankings[row[:2]].append(row[2:])
    items = ([("perf", row[:3], _perf_fault, row) for row in _db_rows(path, "perf")]
             + [("find", key, _find_fault, rows) for key, rows in rankings.items()]
             + [("tuning", row[:4], _tuning_fault, row) for row in _db_rows(path, "tuning")])
    whole, bad = 0, []
    for table, key, fault_of, item in items:
        try:
            fault = fault_of(item)
        except db.rows._Malformed as exc:
            fault = str(exc)
        if fault is None:
            whole += 1
        else:
            bad.append(f"{table} {key}: {fault}")
    return whole, bad


def check_user_db(path: Path, handle) -> StoreCheck:
    """The file must pass PRAGMA integrity_check, be of miopy's schema, and hold only whole records;
    temporaries are rollback journals left behind (WAL files are SQLite's own and recovered on open)."""
    temporaries = len(list(path.parent.glob(path.name + "-journal"))) if path.parent.is_dir() else 0
    if not path.is_file():
        return StoreCheck(0, (), temporaries)
    try:
        with contextlib.closing(_read_only(path)) as conn:
            integrity = [row[0] for row in conn.execute("PRAGMA integrity_check")]
            if integrity != ["ok"]:
                return StoreCheck(0, (f"integrity_check: {integrity}",), temporaries)
            db.schema._schema_state(conn)
    except (sqlite3.Error, db.schema._Unusable) as exc:
        return StoreCheck(0, (f"{type(exc).__name__}: {exc}",), temporaries)
    whole, bad = _row_faults(path)
    return StoreCheck(whole, tuple(bad), temporaries)


def stored_records(path: Path) -> dict[str, dict]:
    """What a user DB holds, keyed as worker.record_db_writes reports writes: perf (device, problem, solver)
    -> params; find (device, problem) -> [[solver, params], ...]; tuning (device, problem, solver, params)
    -> [time_ms or None, error]."""
    out: dict[str, dict] = {"perf": {}, "find": defaultdict(list), "tuning": {}}
    for device, problem, solver, params, _ in _db_rows(path, "perf"):
        out["perf"][(device, problem, solver)] = params
    for device, problem, _, solver, _, _, _, params, _ in _db_rows(path, "find"):
        out["find"][(device, problem)].append([solver, params])
    for device, problem, solver, params, time_ms, error in _db_rows(path, "tuning"):
        out["tuning"][(device, problem, solver, params)] = [time_ms, error]
    return out


KEY_LENGTH = {"perf": 3, "find": 2, "tuning": 4}  # fields of a reported write that make its record's key


def missing_writes(path: Path, written: list[list]) -> list[list]:
    """The writes (worker.record_db_writes entries, of any number of processes) that the DB at path does not
    hold. Processes may write the same key: it must then hold one of the values written for it."""
    written_values = defaultdict(list)
    for table, *entry in written:
        n = KEY_LENGTH[table]
        written_values[table, tuple(entry[:n])].append(entry[n:] if table == "tuning" else entry[n])
    held = stored_records(path)
    return [[table, *key] for (table, key), values in written_values.items() if held[table].get(key) not in values]


KERNEL_CACHE = Store("kernel cache", "MIOPY_CACHE_DIR", lambda d: d, check_kernel_cache)
USER_DB = Store("user DB", "MIOPY_USER_DB_PATH", lambda d: d / "user.db", check_user_db)
STORES = {KERNEL_CACHE.name: KERNEL_CACHE, USER_DB.name: USER_DB}


def reopen_dbs() -> None:
    """Close this process's DB connections and forget them, so the next DB call opens its files afresh, as
    a new process would."""
    for store in db.store._STORES.values():
        store._close()
    db.store._STORES.clear()


def store_dir(root: Path, store: Store) -> Path:
    return root / store.name.replace(" ", "-")


def store_env(root: Path) -> dict[str, str]:
    """Every store placed in its own directory under root, as environment overrides for a child."""
    return {s.env_var: str(s.location(store_dir(root, s))) for s in STORES.values()}


def check_stores(root: Path, handle) -> dict[str, StoreCheck]:
    """Each store placed by store_env(root), checked."""
    return {s.name: s.check(s.location(store_dir(root, s)), handle) for s in STORES.values()}


# -- corrupting a file ------------------------------------------------------------------------------------
def _truncate(blob: bytes, rng: random.Random) -> bytes:
    return blob[:rng.randrange(1, len(blob))]


def _random_bytes(blob: bytes, rng: random.Random) -> bytes:
    return rng.randbytes(len(blob))


def _flip_payload_byte(blob: bytes, rng: random.Random) -> bytes:
    """Right header, wrong checksum: one byte of the body changed."""
    i = rng.randrange(kernel_cache.HEADER_BYTES, len(blob))
    return blob[:i] + bytes([blob[i] ^ 0xFF]) + blob[i + 1:]


def _empty(blob: bytes, rng: random.Random) -> bytes:
    return b""


# Byte-level corruptions that apply to any store file (a cache entry, a SQLite DB).
CORRUPTIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "truncated": _truncate,
    "random bytes": _random_bytes,
    "right header, wrong checksum": _flip_payload_byte,
    "empty file": _empty,
}


# -- the report -------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    """One row of docs/results/reliability.md: a fault, how often it was tried, what happened, what was lost.

    failed_calls counts miopy calls that raised or returned wrong results; bad_entries counts store
    entries left corrupt; both must be 0.
    """

    fault: str
    store: str
    processes: int
    repetitions: int
    happened: str
    failed_calls: int = 0
    bad_entries: int = 0
    test: str = field(default="")


class Report:
    """Collects Outcomes during a session; written as JSON where MIOPY_RELIABILITY_REPORT points."""

    def __init__(self):
        self.outcomes: list[Outcome] = []
        self.device = ""

    def record(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)

    def tally(self, fault: str, happened: str, test: str, store: str = "-", repetitions: int = 1) -> None:
        """Count repetitions of one fault over several tests (or parameters): one row, its count summed."""
        for outcome in self.outcomes:
            if (outcome.fault, outcome.store) == (fault, store):
                outcome.repetitions += repetitions
                return
        self.record(Outcome(fault, store, 1, repetitions, happened, test=test))

    def write(self, path: Path, seconds: float) -> None:
        """The session's summary as JSON; under pytest-xdist each worker writes <path>.<worker>, which
        benchmarks.reliability merges."""
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        target = path.with_name(f"{path.name}.{worker}") if worker else path
        data = {"device": self.device, "seconds": round(seconds, 1),
                "outcomes": [asdict(o) for o in self.outcomes]}
        target.write_text(json.dumps(data, indent=1) + "\n")


def report_path() -> Path | None:
    value = os.environ.get("MIOPY_RELIABILITY_REPORT")
    return Path(value) if value else None
