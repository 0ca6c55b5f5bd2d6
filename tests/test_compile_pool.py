"""Find's compile processes (miopy.find_compile_pool): cold kernels built by helper processes and by the caller, the
result the same as a serial find's, nothing of the caller's script run again, and the caller alone when the
workers cannot start."""
import subprocess
import sys
import textwrap
import time

import pytest

import miopy
from miopy import Direction, find_compile_pool
from miopy.conv import registry
from miopy.find import find_problem
from miopy.plan import checked_solution
from tests.helpers import make_problem

PROBLEM = dict(direction=Direction.FORWARD, n=1, c=8, h=6, w=6, k=8, r=3, s=3, pad=1)


def _cold_specs(handle, problem):
    specs = {}
    for solver in registry.ALL:
        if solver.is_applicable(problem, handle.info):
            solution = checked_solution(handle, problem, solver.id, solver.default_params(problem, handle.info))
            specs.update({launch.spec: None for launch in solution.launches})
    return list(specs)


@pytest.fixture
def cold_handle(tmp_path, monkeypatch):
    """A handle with empty memory and disk caches, find compiling in 2 helper processes."""
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MIOPY_FIND_COMPILE", "processes")
    monkeypatch.setenv("MIOPY_FIND_JOBS", "2")
    handle = miopy.Handle()
    yield handle
    find_compile_pool.pool_for(handle, 2).close()


def test_workers_and_caller_build_every_cold_kernel(cold_handle):
    problem = make_problem(**PROBLEM)
    specs = _cold_specs(cold_handle, problem)
    assert len(specs) >= 3 and not any(cold_handle.kernels.is_built(s) for s in specs)
    pool = find_compile_pool.pool_for(cold_handle, 2)
    assert pool.start(wait=True) == 2
    pool.build(specs)
    assert all(cold_handle.kernels.is_built(s) for s in specs)
    assert pool.stats["by_workers"] >= 1 and pool.stats["by_workers"] + pool.stats["by_caller"] <= len(specs)
    assert pool.stats["worker_failures"] == 0


def test_a_find_compiled_in_processes_is_checked_and_ranked(cold_handle, fresh_dbs):
    problem = make_problem(**PROBLEM)
    result = find_problem(cold_handle, problem, mode="normal")
    assert len(result) >= 3 and not result.rejected
    assert find_compile_pool.pool_for(cold_handle, 2).alive


def test_workers_that_cannot_start_leave_the_build_to_the_caller(cold_handle, monkeypatch):
    monkeypatch.setattr(find_compile_pool.sys, "executable", "/bin/false")
    problem = make_problem(**PROBLEM)
    specs = _cold_specs(cold_handle, problem)
    pool = find_compile_pool.pool_for(cold_handle, 2)
    pool.build(specs)
    assert all(cold_handle.kernels.is_built(s) for s in specs)
    programs = {cold_handle.kernels.program_key(s) for s in specs}
    assert pool.stats["by_caller"] == len(programs) and pool.stats["by_workers"] == 0


def test_workers_leave_pyopencls_shared_caches_alone(cold_handle, monkeypatch, tmp_path):
    """A worker's kernels would write pyopencl's invoker cache, one sqlite file that every process of the user
    reads: a dozen workers writing it stalled the parent's reads for seconds on the H100."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))   # where the workers' pyopencl would keep it
    pool = find_compile_pool.pool_for(cold_handle, 2)
    assert pool.start(wait=True) == 2
    pool.build(_cold_specs(cold_handle, make_problem(**PROBLEM)))
    assert pool.stats["by_workers"] >= 1
    assert not list((tmp_path / "xdg").rglob("*invoker*"))


def test_idle_workers_exit(cold_handle, monkeypatch):
    monkeypatch.setattr(find_compile_pool, "IDLE_S", 0.2)
    pool = find_compile_pool.pool_for(cold_handle, 2)
    pool.build(_cold_specs(cold_handle, make_problem(**PROBLEM))[:1])
    time.sleep(1.0)
    assert not pool.alive


def test_the_callers_script_is_not_run_again(tmp_path):
    """multiprocessing's spawn would import an unguarded main script in every worker; our workers never do."""
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(f"""
        import miopy
        from miopy.find import find_problem
        from tests.helpers import make_problem
        print("top-level ran", flush=True)
        handle = miopy.Handle()
        result = find_problem(handle, make_problem(**{PROBLEM!r}), mode="normal")
        print("found", result[0].solver_id, flush=True)
    """).replace("<Direction.FORWARD: 1>", "miopy.Direction.FORWARD"))
    env = {"MIOPY_FIND_COMPILE": "processes", "MIOPY_FIND_JOBS": "2", "MIOPY_CACHE_DIR": str(tmp_path / "cache"),
           "MIOPY_USER_DB_PATH": str(tmp_path / "user.db"), "PATH": "/usr/bin:/bin"}
    import os
    env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("top-level ran") == 1 and "found" in done.stdout


def test_a_spec_that_cannot_build_is_an_error_not_an_exception(cold_handle):
    """A broken solver's kernel (source missing, or not compiling) comes back as its error text; the others
    build (find then skips the broken candidate, as in threads)."""
    from miopy.kernel_cache import KernelSpec
    good = _cold_specs(cold_handle, make_problem(**PROBLEM))[:2]
    missing = KernelSpec.make("no_such_kernel_file.cl", "nothing")
    broken = KernelSpec.make(good[0].file, good[0].name, {**dict(good[0].defines), "NOT_A_DEFINE(": 1})
    errors = find_compile_pool.pool_for(cold_handle, 2).build([missing, *good, broken])
    assert errors[missing] and errors[broken] and all(errors[s] is None for s in good)
    assert all(cold_handle.kernels.is_built(s) for s in good)
