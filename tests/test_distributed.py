"""Distributed tuning on a local Dask cluster of two worker processes (PoCL): the same records as one
process, a killed worker's job redone with nothing lost, duplicated or corrupt, and resumed runs."""
import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from miopy import db  # noqa: E402
from miopy.conv import registry  # noqa: E402
from miopy.distributed import FIND, TUNE, cluster, run, tune_jobs  # noqa: E402
from miopy.find import find_problem  # noqa: E402
from miopy.tuning import TuneOptions, tune_solver  # noqa: E402
from tests.helpers import make_problem  # noqa: E402

NAIVE = registry.get("ConvDirectNaive")


def deterministic_timer(handle, plan, buffers) -> float:
    """A made-up time from the params alone, so any process ranks points the same way."""
    return 1.0 + abs(plan.solution.params.get("WG", 64) - 128) / 1000.0


class DieOnce:
    """A timer that kills its worker process the first time it runs (a marker file remembers), then times
    like deterministic_timer."""

    def __init__(self, marker: str):
        self.marker = marker

    def __call__(self, handle, plan, buffers) -> float:
        if not os.path.exists(self.marker):
            Path(self.marker).write_text("died")
            os._exit(1)
        return deterministic_timer(handle, plan, buffers)


def _problems():
    """5x5 stride-2 layers: three solvers apply (direct, im2col, naive), so complete finds compile little."""
    return [make_problem(d, 1, 4, 9, 9, 4, 5, 5, 1, 2) for d in (1, 4)]


@pytest.fixture
def env(monkeypatch, tmp_path):
    """A fresh user DB for the client, no system DB, compiles in-process in the workers (they inherit the
    environment)."""
    monkeypatch.setenv("MIOPY_USER_DB_PATH", str(tmp_path / "client.db"))
    monkeypatch.setenv("MIOPY_SYSTEM_DB_PATH", str(tmp_path / "none.db"))
    monkeypatch.setenv("MIOPY_COMPILE_JOBS", "0")
    return tmp_path


def _records() -> dict:
    """Every perf and find record of the user DB: {(device, problem, solver): params} and ranked finds."""
    perf = {(d, p, s): params for d, p, s, params, *_ in db.user_perf_db().rows()}
    finds = {key: [r.solver_id for r in db.find_db().get(*key)] for key in {(d, p) for d, p, _ in perf}}
    return {"perf": perf, "find": finds}


def _jobs(timer=deterministic_timer):
    return tune_jobs(_problems(), [NAIVE], strategy="exhaustive", options=TuneOptions(budget=8), timer=timer)


def _worker_cache() -> dict:
    """On a worker: where its kernel cache is and what its handle's cache did."""
    from miopy import config
    from miopy.distributed.worker import worker_handle
    return {"dir": str(config.cache_dir()), "stats": worker_handle().cache_stats()}


def test_two_workers_with_their_own_disks_fill_the_same_records_as_one_process(env, handle, monkeypatch):
    """Two workers as on two hosts: each its own kernel cache and driver cache directory (nothing on disk
    shared with the other or the client), each with a compile pool whose binaries come back as values; the
    client writes the records it is sent, the same as one process's."""
    import dask
    from distributed import Client, Nanny, Scheduler, SpecCluster

    from miopy.distributed.client import MiopyWorker
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(env / "client-kernels"))
    own = {i: {"MIOPY_CACHE_DIR": str(env / f"host{i}" / "kernels"), "XDG_CACHE_HOME": str(env / f"host{i}" / "xdg"),
               "MIOPY_COMPILE_JOBS": "1", "MIOPY_CACHE_BINARIES": "1"} for i in range(2)}
    workers = {i: {"cls": Nanny, "options": {"nthreads": 1, "env": own[i]}} for i in range(2)}
    with dask.config.set({"distributed.worker.daemon": False}), \
            SpecCluster(scheduler={"cls": Scheduler, "options": {"dashboard_address": None}}, workers=workers,
                        silence_logs=logging.WARNING) as spec, Client(spec) as client:
        client.register_plugin(MiopyWorker(0))
        report = run(client, _jobs(), progress=False)
        caches = client.run(_worker_cache)
    assert not report.failed, report.table()
    assert [r.job.kind for r in report.results].count(TUNE) == 2 and len(report.devices) == 1
    assert sorted(c["dir"] for c in caches.values()) == sorted(o["MIOPY_CACHE_DIR"] for o in own.values())
    assert all(c["stats"]["adopted"] >= 1 for c in caches.values()), caches   # tuning's builds came as values
    assert all(any(Path(o["MIOPY_CACHE_DIR"]).rglob("*.bin")) for o in own.values())   # each built into its own
    assert not (env / "client-kernels").exists()   # the client compiled nothing: records came back as values
    distributed = _records()
    assert len(distributed["perf"]) == 2 and all(distributed["find"].values())

    monkeypatch.setenv("MIOPY_USER_DB_PATH", str(env / "single.db"))
    for problem in _problems():
        tune_solver(handle, problem, NAIVE, strategy_name="exhaustive", options=TuneOptions(budget=8),
                    timer=deterministic_timer)
        find_problem(handle, problem, mode="normal", timer=deterministic_timer, store=True)
    assert _records() == distributed


def test_killed_worker_job_is_redone_without_lost_or_duplicated_records(env):
    marker = str(env / "died")
    with cluster(workers=2) as client:
        report = run(client, _jobs(DieOnce(marker)), progress=False)
    assert Path(marker).exists(), "no worker was killed: the test did not test anything"
    assert not report.failed, report.table()
    assert len(report.results) == 4   # 2 tuning + 2 find jobs, each written once
    records = _records()
    assert len(records["perf"]) == 2 and all(records["find"].values())
    conn = sqlite3.connect(os.environ["MIOPY_USER_DB_PATH"])
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    rows = conn.execute("SELECT device, problem, solver, params FROM tuning").fetchall()
    assert len(rows) == len(set(rows)) == 2 * len(NAIVE.grid["WG"])


def test_interrupted_run_resumes_and_skips_finished_jobs(env):
    jobs = _jobs()
    first = [j for j in jobs if j.problem.key() == jobs[0].problem.key()]
    gemm = tune_jobs(_problems()[:1], [registry.get("ConvGemm1x1")], find=False)   # 5x5 filters: not for it
    with cluster(workers=2) as client:
        run(client, first, progress=False)                 # "interrupted" after the first problem
        resumed = run(client, jobs + gemm, progress=False)
    assert sorted(name for _, name in resumed.skipped) == sorted(j.name for j in first)
    assert sorted(r.job.name for r in resumed.results) == sorted(j.name for j in jobs if j not in first)
    assert {r.job.kind for r in resumed.results} == {TUNE, FIND}
    assert not resumed.failed and [r.job.name for r in resumed.not_applicable] == [gemm[0].name]
    assert "not 1x1" in str(resumed.not_applicable[0].not_applicable)   # judged on the worker, with its reason
    assert "jobs/min" in resumed.table() and "n/a" in resumed.table()


def test_problems_with_the_most_arithmetic_are_submitted_with_the_highest_priority():
    from miopy.distributed.client import _priorities
    small, large, middle = (make_problem(1, 1, c, h, h, c, 3, 3, 1) for c, h in ((4, 8), (16, 32), (8, 16)))
    jobs = tune_jobs([small, large, middle], [NAIVE], options=TuneOptions(budget=2))
    priority = _priorities(jobs)
    assert priority[large.key()] > priority[middle.key()] > priority[small.key()]
    assert {priority[j.problem.key()] for j in jobs if j.problem is large} == {3}   # its find job too


def test_core_import_path_never_imports_dask():
    code = "import sys, miopy, miopy.conv, miopy.cli.tune; print(any(m.split('.')[0] in ('dask', 'distributed') " \
           "for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_tune_cli_on_a_local_cluster_prints_its_summary(env, capsys):
    from miopy.cli import tune
    argv = ["-n", "1", "-c", "4", "-H", "9", "-W", "9", "-k", "4", "-y", "5", "-x", "5", "-p", "1", "-q", "1",
            "-u", "2", "-v", "2", "-F", "1", "-S", NAIVE.id, "--budget", "2", "--workers", "2", "--find"]
    assert tune.main(argv) == 0
    out = capsys.readouterr().out
    assert "2 job(s) for 1 problem(s)" in out and "jobs/min" in out
    assert len(db.user_perf_db().rows()) == 1


def test_tune_cli_with_a_scheduler_it_cannot_reach_says_so_in_one_line(env, capsys):
    from miopy.cli import tune
    argv = ["-n", "1", "-c", "4", "-H", "9", "-W", "9", "-k", "4", "-F", "1", "--scheduler", "no address"]
    assert tune.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot reach a Dask scheduler" in err[0], err
