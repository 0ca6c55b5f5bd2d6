"""Perf DB, find DB and tuning log: round trips, concurrency, corrupt and unwritable files, lookup order."""
import logging
import math
import multiprocessing
import os
import pwd
import sqlite3

import pytest

from miopy import config, db, find
from miopy.conv import registry
from miopy.conv.problem import Direction
from tests.helpers import make_problem

DEVICE = "test-device"
NAIVE = registry.get("ConvDirectNaive")


@pytest.fixture
def user_db(fresh_dbs):
    return fresh_dbs


def test_perf_find_and_tuning_round_trips(user_db):
    perf = db.user_perf_db()
    assert perf.get(DEVICE, "p1", "S") is None
    assert perf.put(DEVICE, "p1", "S", {"WG": 128, "flag": True, "name": "x"}, 1.5)
    record = perf.get(DEVICE, "p1", "S")
    assert record.params == {"WG": 128, "flag": True, "name": "x"} and record.time_ms == 1.5 and record.date
    perf.put(DEVICE, "p1", "S", {"WG": 64}, 1.0)
    assert perf.get(DEVICE, "p1", "S").params == {"WG": 64}

    records = [db.FindRecord("A", "direct", 1.0, 0, {"X": 1}), db.FindRecord("B", "naive", 2.0, 64, {})]
    assert db.find_db().put(DEVICE, "p1", records)
    assert db.find_db().get(DEVICE, "p1") == records
    db.find_db().put(DEVICE, "p1", records[1:])
    assert db.find_db().get(DEVICE, "p1") == records[1:]

    log = db.tuning_log()
    log.put(DEVICE, "p1", "S", db.TuningPoint({"WG": 64}, 0.5, None))
    log.put(DEVICE, "p1", "S", db.TuningPoint({"WG": 128}, math.inf, "CompileError: boom"))
    got = log.get(DEVICE, "p1", "S")
    assert got[db.params_key({"WG": 64})].time_ms == 0.5
    assert got[db.params_key({"WG": 128})] == db.TuningPoint({"WG": 128}, math.inf, "CompileError: boom")

    assert db.forget_problem(DEVICE, "p1")
    assert perf.get(DEVICE, "p1", "S") is None and db.find_db().get(DEVICE, "p1") == []
    with sqlite3.connect(user_db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT value FROM meta").fetchone()[0] == str(db.SCHEMA_VERSION)


def _writer(path: str, worker: int, count: int) -> None:
    import os

    os.environ["MIOPY_USER_DB_PATH"] = path
    from miopy import db as child_db

    for i in range(count):
        assert child_db.user_perf_db().put(DEVICE, f"p{worker}-{i}", "S", {"i": i}, float(i))
        assert child_db.find_db().put(DEVICE, f"p{worker}-{i}", [child_db.FindRecord("S", "naive", 1.0, 0, {})])


def test_concurrent_writers_lose_nothing(user_db):
    workers, count = 4, 25
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(user_db), w, count)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * workers
    with sqlite3.connect(user_db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM perf").fetchone()[0] == workers * count
        assert conn.execute("SELECT COUNT(*) FROM find").fetchone()[0] == workers * count


@pytest.mark.parametrize("damage", ["not a db", "wrong version"])
def test_corrupt_file_is_moved_aside_and_recreated(user_db, caplog, damage):
    if damage == "not a db":
        user_db.write_bytes(b"this is not an SQLite file" * 100)
    else:
        with sqlite3.connect(user_db) as conn:
            conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
            conn.execute("INSERT INTO meta VALUES ('format_version', '999')")
    with caplog.at_level(logging.WARNING, logger="miopy.db"):
        assert db.user_perf_db().get(DEVICE, "p", "S") is None
        assert db.user_perf_db().put(DEVICE, "p", "S", {"WG": 64}, 1.0)
    assert db.user_perf_db().get(DEVICE, "p", "S").params == {"WG": 64}
    assert len(list(user_db.parent.glob("user.db.corrupt-*"))) == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "moved it to" in warnings[0].getMessage()


def test_unwritable_location_keeps_records_in_memory(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("MIOPY_USER_DB_PATH", str(blocker / "sub" / "user.db"))
    with caplog.at_level(logging.WARNING, logger="miopy.db"):
        assert db.user_perf_db().put(DEVICE, "p", "S", {"WG": 64}, 1.0)
        assert db.user_perf_db().get(DEVICE, "p", "S").params == {"WG": 64}
        db.find_db().put(DEVICE, "p", [])
    assert db.user_store().in_memory
    assert sum(r.levelno == logging.WARNING for r in caplog.records) == 1


def _problem():
    return make_problem(Direction.FORWARD, 1, 4, 6, 6, 4, 3, 3, 1)


def test_invalid_stored_params_fall_back_to_default_with_one_warning(user_db, handle, caplog):
    problem = _problem()
    db.user_perf_db().put(handle.info.device_id, problem.key(), NAIVE.id, {"WG": 3}, 1.0)
    with caplog.at_level(logging.WARNING, logger="miopy.find"):
        for _ in range(2):
            assert find.params_for(NAIVE, problem, handle) == (NAIVE.default_params(problem, handle.info), "default")
    assert sum(r.levelno == logging.WARNING for r in caplog.records) == 1


def test_user_db_shadows_system_db(user_db, handle, tmp_path, monkeypatch):
    problem, device = _problem(), handle.info.device_id
    system = tmp_path / "system.db"
    db.write_perf_file(system, [(device, problem.key(), NAIVE.id, '{"WG": 128}', 2.0, "0", "today")])
    monkeypatch.setenv("MIOPY_SYSTEM_DB_PATH", str(system))
    assert find.params_for(NAIVE, problem, handle) == ({"WG": 128}, "system perf DB")
    db.user_perf_db().put(device, problem.key(), NAIVE.id, {"WG": 256}, 1.0)
    assert find.params_for(NAIVE, problem, handle) == ({"WG": 256}, "user perf DB")
    with sqlite3.connect(system) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_missing_system_db_is_empty_and_broken_one_is_ignored(user_db, handle, tmp_path, monkeypatch, caplog):
    problem = _problem()
    assert find.params_for(NAIVE, problem, handle)[1] == "default"
    broken = tmp_path / "broken-system.db"
    broken.write_bytes(b"garbage" * 100)
    monkeypatch.setenv("MIOPY_SYSTEM_DB_PATH", str(broken))
    with caplog.at_level(logging.WARNING, logger="miopy.db"):
        assert find.params_for(NAIVE, problem, handle)[1] == "default"
    assert broken.read_bytes() == b"garbage" * 100  # the shipped file is never touched
    assert any("system perf DB" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("params", [{"WG": 128.0}, {"WG": True}, {"WG": "128"}])
def test_stored_params_of_another_type_fall_back_to_default(user_db, handle, params):
    """64.0 == 64 in Python: a float read back from JSON once passed the grid check and broke the launch."""
    problem = _problem()
    assert NAIVE.invalid_reason(problem, params, handle.info)
    db.user_perf_db().put(handle.info.device_id, problem.key(), NAIVE.id, params, 1.0)
    assert find.params_for(NAIVE, problem, handle) == (NAIVE.default_params(problem, handle.info), "default")
    found = find.find_problem(handle, problem, mode="normal", store=False)
    assert NAIVE.id in {r.solver_id for r in found}, found.skipped


def test_malformed_rows_are_misses_logged_once(user_db, caplog):
    records = [db.FindRecord("A", "direct", 1.0, 0, {"X": 1}), db.FindRecord("B", "naive", 2.0, 64, {})]
    db.find_db().put(DEVICE, "p", records)
    db.user_perf_db().put(DEVICE, "p", "S", {"WG": 64}, 1.0)
    db.tuning_log().put(DEVICE, "p", "S", db.TuningPoint({"WG": 64}, 1.0, None))
    db.tuning_log().put(DEVICE, "p", "S", db.TuningPoint({"WG": 128}, 2.0, None))
    db.user_store().write([("UPDATE find SET workspace = 'big' WHERE solver = 'B'", ()),
                           ("UPDATE perf SET time_ms = 'fast'", ()),
                           ("UPDATE tuning SET time_ms = -1.0 WHERE params = ?", (db.params_key({"WG": 128}),))])
    with caplog.at_level(logging.WARNING, logger="miopy.db"):
        for _ in range(2):
            assert db.find_db().get(DEVICE, "p") == []
            assert db.user_perf_db().get(DEVICE, "p", "S") is None
            assert list(db.tuning_log().get(DEVICE, "p", "S")) == [db.params_key({"WG": 64})]
    assert sum(r.levelno == logging.WARNING for r in caplog.records) == 3


def _checkpointed_db(path) -> bytes:
    """A perf record and a tuning point (whose index page is the file's last), all in the main file."""
    db.user_perf_db().put(DEVICE, "p", "S", {"WG": 64}, 1.0)
    db.tuning_log().put(DEVICE, "p", "S", db.TuningPoint({"WG": 64}, 1.0, None))
    db.user_store()._close()
    return path.read_bytes()


@pytest.mark.parametrize("damage", ["last page cut short", "other columns"])
def test_damage_sqlite_reads_past_is_found_on_open(user_db, caplog, damage):
    """A file cut inside its last page still answers queries, and a table of the right name with other
    columns passes a name check: quick_check and the column check on open find both."""
    blob = _checkpointed_db(user_db)
    if damage == "last page cut short":
        user_db.write_bytes(blob[:-100])
    else:
        with sqlite3.connect(user_db) as conn:
            conn.execute("DROP TABLE tuning")
            conn.execute("CREATE TABLE tuning (x TEXT)")
    db.store._STORES.clear()
    with caplog.at_level(logging.WARNING, logger="miopy.db"):
        record = db.user_perf_db().get(DEVICE, "p", "S")
        assert db.tuning_log().put(DEVICE, "p", "S", db.TuningPoint({"WG": 64}, 1.0, None))
    assert len(list(user_db.parent.glob("user.db.corrupt-*"))) == 1
    warnings = [r.getMessage() for r in caplog.records if "moved it to" in r.getMessage()]
    assert len(warnings) == 1
    if damage == "last page cut short":   # this schema, damaged: its readable record is salvaged
        assert record is not None and record.params == {"WG": 64} and "kept the 2 rows" in warnings[0]
    else:   # another table layout: nothing is salvaged from it
        assert record is None and "kept" not in warnings[0]


def test_unwritable_file_is_served_from_a_copy_in_memory(user_db, monkeypatch, caplog):
    blob = _checkpointed_db(user_db)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: real_access(path, mode) and str(path) != str(user_db))
    db.store._STORES.clear()
    with caplog.at_level(logging.WARNING, logger="miopy.db"):
        assert db.user_perf_db().get(DEVICE, "p", "S").params == {"WG": 64}
        assert db.user_perf_db().put(DEVICE, "q", "S", {"WG": 128}, 1.0)
        assert db.user_perf_db().get(DEVICE, "q", "S").params == {"WG": 128}
    assert db.user_store().in_memory and user_db.read_bytes() == blob
    assert sum(r.levelno == logging.WARNING for r in caplog.records) == 1


def test_corrupt_files_moved_aside_in_one_second_keep_distinct_names(user_db):
    for _ in range(3):
        user_db.write_bytes(b"not a db" * 100)
        db.store._STORES.clear()
        db.user_perf_db().get(DEVICE, "p", "S")
    assert len(list(user_db.parent.glob("user.db.corrupt-*"))) == 3


def test_no_home_directory_means_no_user_db_path(monkeypatch):
    def no_entry(uid):
        raise KeyError(uid)

    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.delenv("MIOPY_USER_DB_PATH", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", "")
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    assert config.user_db_path() is None
    assert db.user_perf_db().put(DEVICE, "p", "S", {"WG": 64}, 1.0) and db.user_store().in_memory


def test_page_scan_reads_every_live_row_overflow_included_and_no_free_page(tmp_path):
    from miopy import sqlite_pages
    path = tmp_path / "pages.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a TEXT NOT NULL, b BLOB, v REAL, n INTEGER, PRIMARY KEY (a, n))")
    rows = [(f"row {i}", bytes([i % 256]) * (i % 40), i * 0.25 if i % 7 else None, i - 1000) for i in range(2000)]
    rows.append(("long", b"x" * 20000, 1.5, 2**40))   # spans overflow pages
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    conn.execute("DELETE FROM t WHERE n BETWEEN -900 AND -400")   # frees pages: their stale rows must not return
    conn.commit()
    live = sorted(conn.execute("SELECT * FROM t"))
    conn.close()
    scan = sqlite_pages.scan(path.read_bytes())
    assert sorted(v for _, v in scan.rows if len(v) == 4) == live
    assert scan.unreadable == 0 and len(scan.index_keys) == len(live)
    with pytest.raises(sqlite_pages.PageError):
        sqlite_pages.scan(b"not a database" * 100)
