"""Corrupt and foreign DB files, and damaged records in them: each is detected, logged once and is a miss
(a record's solver runs with its default params, never skipped); a damaged user DB file is moved aside,
byte for byte, and a new one is built; a damaged system DB is ignored and never touched. Find goes on and
every result is checked against the float64 reference."""
from __future__ import annotations

import contextlib
import logging
import random
import re
import sqlite3
from pathlib import Path

import pytest

from miopy import db, find, log
from miopy.conv import registry
from miopy.conv.problem import Direction, map_problem
from miopy.tuning import Compiler, TuneOptions, tune_solver
from miopy.version import __version__
from tests.reliability.faults import CORRUPTIONS, PROBLEMS, USER_DB, Outcome, reopen_dbs, stored_records
from tests.reliability.worker import check_record, descriptors, run_checked

REPETITIONS = 2
NAIVE = registry.get("ConvDirectNaive")
TUNED = '{"WG": 128}'  # a valid record's params; naive's default is WG 64, so a served record shows
OTHER_DEVICE = "Another platform|Another GPU|9.9|64CU"


def _problem():
    xd, wd, conv, _ = descriptors(PROBLEMS[0])
    return map_problem(Direction.FORWARD, xd, wd, conv).problem


def _miopy_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("miopy") and r.levelno >= logging.WARNING]


# -- whole files --------------------------------------------------------------------------------------------
def _byte_corruption(name: str):
    def corrupt(path: Path, rng: random.Random) -> None:
        path.write_bytes(CORRUPTIONS[name](path.read_bytes(), rng))
    return corrupt


def _page_of_random_bytes(path: Path, rng: random.Random) -> None:
    """The 100-byte header and first page intact, another page overwritten."""
    blob = bytearray(path.read_bytes())
    page = int.from_bytes(blob[16:18], "big")
    i = rng.randrange(1, len(blob) // page)
    blob[i * page:(i + 1) * page] = rng.randbytes(page)
    path.write_bytes(bytes(blob))


def _sql(*statements: str):
    def corrupt(path: Path, rng: random.Random) -> None:
        with contextlib.closing(sqlite3.connect(path)) as conn:
            for statement in statements:
                conn.execute(statement)
            conn.commit()
    return corrupt


def _other_program(path: Path, rng: random.Random) -> None:
    path.unlink()
    _sql("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT)",
         "INSERT INTO moz_places VALUES (1, 'https://example.org')")(path, rng)


FILE_FAULTS = {
    "truncated": _byte_corruption("truncated"),
    "random bytes": _byte_corruption("random bytes"),
    "one page overwritten with random bytes (header intact)": _page_of_random_bytes,
    "wrong schema version": _sql("UPDATE meta SET value = '999' WHERE key = 'format_version'"),
    "right schema version, a table with other columns": _sql("DROP TABLE tuning", "CREATE TABLE tuning (x TEXT)"),
    "DB of another program (valid SQLite, other tables)": _other_program,
    "empty file": _byte_corruption("empty file"),
}


def _fill_user_db(handle) -> None:
    """A find record (a benchmark in normal mode) and a perf record, closed so all is in the main file."""
    run_checked(handle, PROBLEMS[0], Direction.FORWARD, seed=0, mode="normal")
    db.user_perf_db().put(handle.info.device_id, _problem().key(), NAIVE.id, {"WG": 128}, 1.0)
    reopen_dbs()


@pytest.mark.parametrize("fault", list(FILE_FAULTS))
def test_damaged_user_db_is_moved_aside_and_rebuilt(fault, tmp_path, monkeypatch, caplog, handle, report):
    path = tmp_path / "user.db"
    monkeypatch.setenv("MIOPY_USER_DB_PATH", str(path))
    caplog.set_level(logging.WARNING, logger="miopy")
    rng = random.Random(fault)
    damaged, served = [], 0
    for _ in range(REPETITIONS):
        _fill_user_db(handle)
        FILE_FAULTS[fault](path, rng)
        damaged.append(path.read_bytes())
        found = run_checked(handle, PROBLEMS[0], Direction.FORWARD, seed=1)  # hybrid: the find DB first
        said = (_miopy_warnings(caplog) or [""])[-1]
        rankings = re.search(r"(\d+) find rankings", said)
        assert not found.from_db or (rankings and int(rankings.group(1)) >= 1), said  # only a salvaged one
        served += found.from_db
        check = USER_DB.check(path, handle)
        assert not check.bad and check.whole >= 1, check
        reopen_dbs()
    warnings = _miopy_warnings(caplog)
    aside = sorted(tmp_path.glob("user.db.corrupt-*"))
    if fault == "empty file":  # SQLite reads an empty file as an empty DB: nothing to detect or keep
        assert not warnings and not aside, (warnings, aside)
        happened = "read as a new, empty DB (which is what SQLite makes of it); no warning, nothing lost"
    else:
        assert len(warnings) == REPETITIONS and all("moved it to" in w for w in warnings), warnings
        assert sorted(p.read_bytes() for p in aside) == sorted(damaged)
        reason = re.search(r"was unusable \((.*?)\); moved", warnings[0].replace("\n", " ")).group(1)
        salvaged = [re.search(r"kept the (\d+) rows", w) for w in warnings]
        kept = ("what it could read and check salvaged into it (rows kept: "
                f"{', '.join(m.group(1) if m else '0' for m in salvaged)}); " if any(salvaged) else "")
        find_did = ("find served the salvaged ranking" if served == REPETITIONS else
                    "find missed, benchmarked, stored a new record" if not served else
                    f"find served the salvaged ranking {served} time(s), else benchmarked and stored a new one")
        happened = (f"detected ({reason[:60]}), moved aside byte for byte, a new DB built; {kept}1 warning per "
                    f"damaged file; {find_did}")
    report.record(Outcome(
        fault=f"user DB file: {fault}", store=USER_DB.name, processes=1, repetitions=REPETITIONS,
        happened=happened + "; every result verified", test="test_corrupt_db"))


@pytest.mark.parametrize("fault", ["missing"] + list(FILE_FAULTS))
def test_damaged_system_db_is_a_miss(fault, tmp_path, monkeypatch, caplog, handle, report):
    problem, system = _problem(), tmp_path / "system.db"
    db.write_perf_file(system, [(handle.info.device_id, problem.key(), NAIVE.id, TUNED, 1.0, __version__, "today")])
    monkeypatch.setenv("MIOPY_SYSTEM_DB_PATH", str(system))
    reopen_dbs()
    assert find.params_for(NAIVE, problem, handle) == ({"WG": 128}, db.SYSTEM_PERF)  # served while whole
    if fault == "missing":
        system.unlink()
    else:
        FILE_FAULTS[fault](system, random.Random(fault))
    before = system.read_bytes() if system.exists() else None
    caplog.set_level(logging.WARNING, logger="miopy")
    reopen_dbs()
    for _ in range(REPETITIONS):
        record = _naive_record(handle, problem)
        assert (record.params, record.params_source) == (NAIVE.default_params(problem, handle.info), find.DEFAULT)
        check_record(handle, PROBLEMS[0], Direction.FORWARD, record, seed=2)
    warnings = _miopy_warnings(caplog)
    assert len(warnings) == (fault != "missing"), warnings
    assert (system.read_bytes() if system.exists() else None) == before
    report.record(Outcome(
        fault=f"system perf DB: {fault}", store="system perf DB", processes=1, repetitions=REPETITIONS,
        happened=("a miss: " + ("no warning" if fault == "missing" else "1 warning, the file left untouched")
                  + "; find benchmarked naive with its default params; results verified"), test="test_corrupt_db"))


# -- damaged records ----------------------------------------------------------------------------------------
VALUE_FAULTS = {  # fault -> (stored params text, stored time)
    "params out of grid": ('{"WG": 3}', 1.0),
    "wrong keys": ('{"TILE": 128}', 1.0),
    "an extra key": ('{"WG": 128, "X": 1}', 1.0),
    "float for an int": ('{"WG": 128.0}', 1.0),
    "string for an int": ('{"WG": "128"}', 1.0),
    "bool for an int": ('{"WG": true}', 1.0),
    "garbage JSON": ('{WG: 128', 1.0),
    "JSON that is not an object": ("[128]", 1.0),
    "time that is not a number": (TUNED, "fast"),
    "negative time": (TUNED, -1.0),
}
ANOTHER_DEVICE = "record of another device"


def _naive_record(handle, problem, mode: str = "normal", store: bool = False) -> find.ConvAlgoPerf:
    """Naive's record in a find (it must be ranked, not skipped)."""
    found = find.find_problem(handle, problem, mode=mode, store=store)
    assert NAIVE.id not in found.skipped and not found.from_db, (found.skipped, found.from_db)
    return next(r for r in found if r.solver_id == NAIVE.id)


def _runs_with_default_params(handle, problem, mode: str = "normal", store: bool = False) -> None:
    reopen_dbs()
    record = _naive_record(handle, problem, mode, store)
    assert (record.params, record.params_source) == (NAIVE.default_params(problem, handle.info), find.DEFAULT)
    check_record(handle, PROBLEMS[0], Direction.FORWARD, record, seed=3)


def _in_user_perf_db(handle, problem, row: tuple, tmp_path: Path, monkeypatch) -> None:
    db.user_store().write([("INSERT INTO perf VALUES (?, ?, ?, ?, ?, ?, ?)", (*row, __version__, "today"))])
    _runs_with_default_params(handle, problem)


def _in_system_perf_db(handle, problem, row: tuple, tmp_path: Path, monkeypatch) -> None:
    db.write_perf_file(tmp_path / "system.db", [(*row, __version__, "today")])
    monkeypatch.setenv("MIOPY_SYSTEM_DB_PATH", str(tmp_path / "system.db"))
    _runs_with_default_params(handle, problem)


def _in_find_db(handle, problem, row: tuple, tmp_path: Path, monkeypatch) -> None:
    """A whole stored ranking, then naive's entry damaged (or the whole ranking moved to another device);
    a find in hybrid mode must miss, benchmark and store a whole ranking again."""
    find.find_problem(handle, problem, mode="normal")
    device, _, _, params, time_ms = row
    if device == handle.info.device_id:
        change = ("UPDATE find SET params = ?, time_ms = ? WHERE solver = ?", (params, time_ms, NAIVE.id))
    else:
        change = ("UPDATE find SET device = ?", (device,))
    db.user_store().write([change])
    _runs_with_default_params(handle, problem, mode="hybrid", store=True)
    check = USER_DB.check(db.user_store().path, handle)
    assert not check.bad and check.whole >= 1, check


def _in_tuning_log(handle, problem, row: tuple, tmp_path: Path, monkeypatch) -> None:
    """A damaged point in the tuning log: the run must not serve it, and must store a valid winner."""
    db.user_store().write([("INSERT INTO tuning VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (*row, None, __version__, "today"))])
    reopen_dbs()
    with Compiler(handle, 0) as compiler:
        result = tune_solver(handle, problem, NAIVE, options=TuneOptions(budget=3), compiler=compiler)
    assert result.stored and result.recorded == 0 and NAIVE.is_valid(problem, result.best_params, handle.info)
    assert db.user_perf_db().get(handle.info.device_id, problem.key(), NAIVE.id).params == result.best_params


PLACES = {  # where the damaged record is -> (how it is tried, what happened every time)
    "user perf DB": (_in_user_perf_db, "find ranked naive with its default params, never skipped"),
    "system perf DB": (_in_system_perf_db, "find ranked naive with its default params, never skipped"),
    "find DB": (_in_find_db, "a miss in hybrid mode: find benchmarked again (naive with its default params) and "
                             "stored a whole ranking"),
    "tuning log": (_in_tuning_log, "not served: the tuning run measured naive's 3 points and stored a valid, "
                                   "verified winner"),
}


@pytest.mark.parametrize("place", list(PLACES))
def test_damaged_record_is_a_miss_logged_once(place, tmp_path, monkeypatch, caplog, handle, report):
    problem, (attempt, happened) = _problem(), PLACES[place]
    monkeypatch.setenv("MIOPY_SYSTEM_DB_PATH", str(tmp_path / "no-system.db"))
    caplog.set_level(logging.WARNING, logger="miopy")
    warned = {}
    for i, fault in enumerate([*VALUE_FAULTS, ANOTHER_DEVICE]):
        directory = tmp_path / str(i)
        directory.mkdir()
        monkeypatch.setenv("MIOPY_USER_DB_PATH", str(directory / "user.db"))
        log._warned.clear()  # each fault as a fresh process meets it
        caplog.clear()
        reopen_dbs()
        device, params, time_ms = _fault_row(handle, fault)
        attempt(handle, problem, (device, problem.key(), NAIVE.id, params, time_ms), directory, monkeypatch)
        warned[fault] = len(_miopy_warnings(caplog))
    assert warned == {f: int(f != ANOTHER_DEVICE) for f in warned}, warned
    report.record(Outcome(
        fault=f"{place} record of naive with invalid values: {', '.join(VALUE_FAULTS)}; and a valid record of "
              "another device", store=USER_DB.name if place != "system perf DB" else place, processes=1,
        repetitions=len(warned),
        happened=f"{happened}; results verified; 1 warning per damaged record, none for another device's record "
                 "(records are keyed by device id)", test="test_corrupt_db"))


def _fault_row(handle, fault: str) -> tuple[str, str, object]:
    """(device, params text, time) of the damaged record."""
    if fault == ANOTHER_DEVICE:
        return OTHER_DEVICE, TUNED, 1.0
    return (handle.info.device_id, *VALUE_FAULTS[fault])


# -- salvage ----------------------------------------------------------------------------------------------
SALVAGE_DEVICE = "reliability|salvage device|0|1CU"


def _fill_many(path: Path) -> dict:
    """100 perf records, 40 find rankings of 4 and 3000 tuning points (about 150 pages), all in the main file;
    returns what the file holds (faults.stored_records)."""
    perf, finds = db.user_perf_db(), db.find_db()
    for i in range(100):
        perf.put(SALVAGE_DEVICE, f"problem-{i}", NAIVE.id, {"WG": 64 + i}, 1.0 + i)
    for i in range(40):
        finds.put(SALVAGE_DEVICE, f"problem-{i}",
                  [db.FindRecord(f"Solver{r}", "naive", 1.0 + r, 0, {"WG": r}) for r in range(4)])
    db.user_store().write([("INSERT INTO tuning VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (SALVAGE_DEVICE, f"problem-{i % 50}", "ConvDirectLocal", db.params_key({"A": i}),
                             0.5 + i, None, __version__, "today")) for i in range(3000)])
    reopen_dbs()
    return stored_records(path)


def _rows(records: dict) -> int:
    return len(records["perf"]) + sum(len(r) for r in records["find"].values()) + len(records["tuning"])


def test_readable_records_of_a_damaged_user_db_are_kept(tmp_path, monkeypatch, caplog, handle, report):
    """4 KB of random bytes in the middle of a big user DB: it is moved aside as before, but every record that
    can still be read and checked is copied into the new one first, and the warning counts kept and lost."""
    path = tmp_path / "user.db"
    monkeypatch.setenv("MIOPY_USER_DB_PATH", str(path))
    caplog.set_level(logging.WARNING, logger="miopy")
    reopen_dbs()
    written = _fill_many(path)
    total, good = _rows(written), path.read_bytes()
    outcomes = []
    for seed in range(REPETITIONS):
        rng = random.Random(seed)
        middle = len(good) // 2 + rng.randrange(-len(good) // 4, len(good) // 4)
        path.write_bytes(good[:middle] + rng.randbytes(4096) + good[middle + 4096:])
        damaged = path.read_bytes()
        reopen_dbs()
        log._warned.clear()
        db.user_perf_db().get(SALVAGE_DEVICE, "problem-0", NAIVE.id)   # opens, detects, salvages
        said = _miopy_warnings(caplog)[-1]
        kept_said, lost_said = map(int, re.search(r"kept the (\d+) rows.*lost at least (\d+) rows", said).groups())
        held = stored_records(path)
        assert USER_DB.check(path, handle).bad == ()
        assert _rows(held) == kept_said and kept_said + lost_said <= total
        for table in ("perf", "tuning", "find"):   # every record kept is one that was written, unchanged
            assert all(written[table][key] == value for key, value in held[table].items()), table
        assert kept_said >= total * 0.9, said   # 4 KB spoils 2 of about 150 pages
        aside = [p for p in tmp_path.glob("user.db.corrupt-*") if p.read_bytes() == damaged]
        assert len(aside) == 1
        outcomes.append((kept_said, lost_said))
        for leftover in tmp_path.glob("user.db*"):
            leftover.unlink()
    report.record(Outcome(
        fault=f"user DB of {total} rows (perf, find, tuning) with 4 KB of random bytes in the middle",
        store=USER_DB.name, processes=1, repetitions=REPETITIONS,
        happened="moved aside byte for byte; the rows that could still be read and checked were copied into the "
                 "new DB first: kept/lost (at least) " + ", ".join(f"{k}/{lost}" for k, lost in outcomes)
                 + f" of {total}; every kept row as written, whole find rankings only; 1 warning saying so",
        test="test_corrupt_db"))
