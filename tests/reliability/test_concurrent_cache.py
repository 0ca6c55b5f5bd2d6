"""Several processes find and run overlapping problems on shared stores (one kernel cache), all at once."""
from __future__ import annotations

from tests.reliability import processes as procs
from tests.reliability.faults import (DRIVER_FLAGS, KERNEL_CACHE, PROBLEMS, STORES, TAGS, Outcome, check_stores,
                                      store_env)
WORKERS, DRIVERS, ROUNDS = 4, 2, 2


def _round(stores, barrier) -> tuple[int, int, list[str], list[str]]:
    """One round: WORKERS find processes released together, and DRIVERS miopy-driver processes started
    with them. Returns (calls, compiles, failures, warnings) summed over every process."""
    env = procs.child_env(**store_env(stores))
    work = {"problems": PROBLEMS, "tags": TAGS, "barrier": str(barrier)}
    workers = [procs.start_worker("workload", dict(work, rotate=i), env) for i in range(WORKERS)]
    for worker in workers:
        procs.wait_line(worker, "READY")
    barrier.touch()
    drivers = [procs.start_driver(DRIVER_FLAGS, env) for _ in range(DRIVERS)]
    calls, compiles, failures, warnings = 0, 0, [], []
    for result in map(procs.result_of, workers):
        calls += result["calls"]
        compiles += result.get("compiled", 0)
        failures += result["failures"]
        warnings += result["warnings"]
    for driver in drivers:
        out, err = driver.communicate(timeout=procs.TIMEOUT_S)
        calls += 3
        if driver.returncode != 0 or out.count("Verifies OK") != 3:
            failures.append(f"driver rc {driver.returncode}: {out}{err}")
        else:
            compiles += procs.driver_compiles(out)
        warnings += procs.warning_lines(err)
    barrier.unlink()
    return calls, compiles, failures, warnings


def test_processes_sharing_one_cache_compile_each_program_once(tmp_path, handle, report):
    barrier = tmp_path / "go"
    compiles_per_round, total_calls = [], 0
    for _ in range(ROUNDS):
        calls, compiles, failures, warnings = _round(tmp_path, barrier)
        assert not failures, failures
        assert not warnings, warnings
        checks = check_stores(tmp_path, handle)
        assert all(not c.bad and c.temporaries == 0 for c in checks.values()), checks
        check = checks[KERNEL_CACHE.name]
        compiles_per_round.append(compiles)
        total_calls += calls
    programs = check.whole
    # The per-entry lock makes every program compile exactly once among all processes, and never again.
    assert compiles_per_round == [programs, 0], (compiles_per_round, programs)
    report.record(Outcome(
        fault=f"{WORKERS} find processes and {DRIVERS} miopy-driver processes on overlapping problems, "
              "shared stores, started together", store=", ".join(STORES), processes=WORKERS + DRIVERS,
        repetitions=ROUNDS,
        happened=f"{total_calls} calls (kernel builds, and find + run verified against the reference), all "
                 f"succeeded; {programs} programs compiled "
                 f"{compiles_per_round[0]} times in all (once each), {compiles_per_round[1]} times in the warm "
                 f"round; every entry of every store whole and loadable; no warning", test="test_concurrent_cache"))
