"""Processes SIGKILLed while writing the user DB: inside a transaction, or at random moments of a loop of
writes. The next process works at once, every record is whole or absent, every write a process reported
is there, and the file passes PRAGMA integrity_check. A live process that hangs holding the write lock
costs others the busy timeout, then their write is a miss with one warning; reads go on meanwhile."""
from __future__ import annotations

import logging
import random
import signal
import time

from miopy import db
from tests.reliability import processes as procs
from tests.reliability.faults import USER_DB, Outcome, stored_records
from tests.reliability.worker import DB_DEVICE, RANKING

RANDOM_KILLS = 4


def _kill(proc) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=procs.TIMEOUT_S)


def _rankings(path) -> dict[str, int]:
    """problem -> rows of its stored find ranking, for the made-up device of the DB workers."""
    return {problem: len(rows) for (device, problem), rows in stored_records(path)["find"].items()
            if device == DB_DEVICE}


def _whole_db(path, handle) -> None:
    check = USER_DB.check(path, handle)
    assert not check.bad and check.temporaries == 0, check
    assert set(_rankings(path).values()) <= {RANKING}, _rankings(path)  # each ranking whole, none partial


def test_writer_killed_inside_a_transaction(tmp_path, monkeypatch, caplog, handle, report):
    path = tmp_path / "user.db"
    monkeypatch.setenv("MIOPY_USER_DB_PATH", str(path))
    monkeypatch.setattr(db.schema, "BUSY_TIMEOUT_S", 0.1)
    monkeypatch.setattr(db.store, "ATTEMPTS", 3)
    caplog.set_level(logging.WARNING, logger="miopy")
    child = procs.start_worker("db-hang", {})
    try:
        procs.wait_line(child, "HANG")
        # While the child lives inside its transaction: reads see only what was committed, a write waits
        # the busy timeout and is a miss, logged once.
        read_during = len(db.find_db().get(DB_DEVICE, "before")), len(db.find_db().get(DB_DEVICE, "killed"))
        started = time.monotonic()
        wrote_during = db.user_perf_db().put(DB_DEVICE, "during", "ConvDirectNaive", {"WG": 64}, 1.0)
        waited = time.monotonic() - started
    finally:
        _kill(child)
    warnings = [r.getMessage() for r in caplog.records if r.name.startswith("miopy")]
    assert read_during == (RANKING, 0) and not wrote_during, (read_during, wrote_during)
    assert len(warnings) == 1 and "locked" in warnings[0], warnings

    started = time.monotonic()
    after = procs.run_worker("db-writes", {"start": 0, "count": 3})
    seconds = time.monotonic() - started
    assert not after["failures"] and not after["warnings"], after
    _whole_db(path, handle)
    assert _rankings(path) == {"before": RANKING, "problem-0": RANKING, "problem-1": RANKING, "problem-2": RANKING}
    report.record(Outcome(
        fault="process SIGKILLed inside a write transaction (half of a 17-statement find record written)",
        store=USER_DB.name, processes=3, repetitions=1,
        happened=f"while it hung, another process read the committed ranking whole and none of the new one, "
                 f"and its write waited {waited:.1f} s (busy timeout shortened to 0.1 s) and was a miss, 1 "
                 f"warning; after the kill the half-written record was absent, the committed one whole, the next "
                 f"process wrote and read at once ({seconds:.1f} s with its start-up), integrity_check ok",
        test="test_killed_db_writer"))


def _kill_during_writes(env: dict, start: int, rng: random.Random) -> int:
    """Start a loop of DB writes at step start, SIGKILL it at a random moment; returns the last step it
    reported done."""
    child = procs.start_worker("db-writes", {"start": start, "count": 10_000}, env)
    last = start - 1
    for _ in range(rng.randint(1, 6)):
        last = int(procs.wait_line(child, "WROTE").split()[1])
    time.sleep(rng.uniform(0.0, 0.02))
    _kill(child)
    return last


def _steps_stored(path) -> tuple[int, int]:
    """(last step with any record, steps with some but not all of their three records)."""
    held = stored_records(path)
    kinds = [{int(key[1].split("-")[1]) for key in held[table] if key[0] == DB_DEVICE and key[1] != "before"}
             for table in ("find", "perf", "tuning")]
    every = set.union(*kinds)
    return max(every, default=-1), len(every - set.intersection(*kinds))


def test_random_kills_during_a_loop_of_db_writes(tmp_path, handle, report):
    """Each process resumes after the last step stored; every step a killed process reported done is
    there, and no record is partial."""
    path = tmp_path / "user.db"
    env = procs.child_env(MIOPY_USER_DB_PATH=path)
    rng = random.Random(4321)
    start, reported = 0, []
    for _ in range(RANDOM_KILLS):
        last_reported = _kill_during_writes(env, start, rng)
        _whole_db(path, handle)
        last_stored, _ = _steps_stored(path)
        assert last_stored >= last_reported, (last_stored, last_reported)
        reported.append(last_reported - start + 1)
        start = last_stored + 1
    partial_steps = _steps_stored(path)[1]
    final = procs.run_worker("db-writes", {"start": start, "count": 3}, env)
    assert not final["failures"] and not final["warnings"], final
    _whole_db(path, handle)
    rankings = _rankings(path)
    assert len(rankings) == start + 3, rankings
    report.record(Outcome(
        fault="SIGKILL at random moments of a loop of DB writes (a find ranking, a perf record and a tuning "
              "point per step, each its own transaction)", store=USER_DB.name, processes=RANDOM_KILLS + 1,
        repetitions=1,
        happened=f"steps each killed process reported done: {reported}, all of them stored; {partial_steps} "
                 f"step(s) cut between their transactions, no record cut inside one (every ranking has its "
                 f"{RANKING} rows); integrity_check ok after every kill; the next process went on without a "
                 f"warning", test="test_killed_db_writer"))
