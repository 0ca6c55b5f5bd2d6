"""Several processes find, tune and run overlapping problems on shared stores (one kernel cache, one user
DB), all at once: nothing fails, every program is compiled once, and every DB record any of them wrote
(perf, find, tuning) is there afterwards, whole."""
from __future__ import annotations

from tests.reliability import processes as procs
from tests.reliability.faults import (
    DRIVER_FLAGS,
    KERNEL_CACHE,
    PROBLEMS,
    STORES,
    TAGS,
    TUNE_FLAGS,
    USER_DB,
    Outcome,
    check_stores,
    missing_writes,
    store_dir,
    store_env,
)

WORKERS, DRIVERS, TUNERS, ROUNDS = 4, 2, 2, 2
TUNE_ARGV = [TUNE_FLAGS + ["--strategy", strategy] for strategy in ("local", "random")]  # overlapping walks


def _start_all(env: dict, barrier) -> list:
    """WORKERS find processes, DRIVERS miopy-driver and TUNERS miopy-tune processes, released together."""
    work = {"problems": PROBLEMS, "tags": TAGS, "barrier": str(barrier)}
    children = [procs.start_worker("workload", dict(work, rotate=i), env) for i in range(WORKERS)]
    children += [procs.start_worker("cli", {"program": "driver", "argv": ["conv"] + DRIVER_FLAGS,
                                            "barrier": str(barrier)}, env) for _ in range(DRIVERS)]
    children += [procs.start_worker("cli", {"program": "tune", "argv": TUNE_ARGV[i % len(TUNE_ARGV)],
                                            "barrier": str(barrier)}, env) for i in range(TUNERS)]
    for child in children:
        procs.wait_line(child, "READY")
    barrier.touch()
    return children


def _round(stores, barrier) -> dict:
    """One round; returns calls, compiles, failures, warnings and DB writes summed over every process."""
    total = {"calls": 0, "compiled": 0, "failures": [], "warnings": [], "written": []}
    for result in map(procs.result_of, _start_all(procs.child_env(**store_env(stores)), barrier)):
        for key in total:
            total[key] += result.get(key, 0 if key in ("calls", "compiled") else [])
    barrier.unlink()
    return total


def test_processes_sharing_a_cache_and_a_user_db(tmp_path, handle, report):
    barrier = tmp_path / "go"
    db_path = USER_DB.location(store_dir(tmp_path, USER_DB))
    compiles_per_round, total_calls, written = [], 0, []
    for _ in range(ROUNDS):
        done = _round(tmp_path, barrier)
        assert not done["failures"], done["failures"]
        assert not done["warnings"], done["warnings"]
        checks = check_stores(tmp_path, handle)
        assert all(not c.bad and c.temporaries == 0 for c in checks.values()), checks
        assert not missing_writes(db_path, done["written"]), missing_writes(db_path, done["written"])
        compiles_per_round.append(done["compiled"])
        total_calls += done["calls"]
        written += done["written"]
    assert not list(db_path.parent.glob("*.corrupt-*"))
    programs = checks[KERNEL_CACHE.name].whole
    # The per-entry lock makes every program compile exactly once among all processes, and never again.
    assert compiles_per_round == [programs, 0], (compiles_per_round, programs)
    kinds = {table: sum(w[0] == table for w in written) for table in ("perf", "find", "tuning")}
    assert all(kinds.values()), kinds
    report.record(Outcome(
        fault=f"{WORKERS} find, {DRIVERS} miopy-driver and {TUNERS} miopy-tune processes on overlapping problems, "
              "sharing one kernel cache and one user DB, started together", store=", ".join(STORES),
        processes=WORKERS + DRIVERS + TUNERS, repetitions=ROUNDS,
        happened=f"{total_calls} calls (kernel builds; find, tune or run verified against the reference), all "
                 f"succeeded; {programs} programs compiled {compiles_per_round[0]} times in all (once each), "
                 f"{compiles_per_round[1]} times in the warm round; the processes reported {len(written)} DB "
                 f"writes ({kinds['perf']} perf, {kinds['find']} find, {kinds['tuning']} tuning), every one "
                 f"there afterwards (one of the written values where processes wrote the same key); the DB "
                 f"passes integrity_check with {checks[USER_DB.name].whole} whole records; no warning",
        test="test_concurrent_stores"))
