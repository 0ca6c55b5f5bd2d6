"""No process outlives its parent: miopy-tune SIGKILLed while its compile workers run leaves no worker and
no multiprocessing resource tracker behind; and a worker started from a thread that ends (so the kernel's
parent-death signal cannot be used) lives on while its parent does and exits when the parent dies."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.reliability import processes as procs
from tests.reliability.faults import DRIVER_FLAGS, Outcome

BOUND_S = 60.0   # a generous bound: the workers exit within a poll period of the lifeline (0.25 s) or a compile


def _children(pid: int) -> list[int]:
    """Live child processes of pid, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def _descendants(pid: int) -> list[int]:
    """Live descendants of pid (children, their children, ...), from /proc."""
    found, frontier = [], [pid]
    while frontier:
        children = [c for parent in frontier for c in _children(parent)]
        found += children
        frontier = children
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _wait_gone(pids: list[int]) -> tuple[list[int], float]:
    """Wait (up to BOUND_S) for pids to end; the survivors, and the seconds waited."""
    start = time.monotonic()
    while time.monotonic() - start < BOUND_S:
        alive = [pid for pid in pids if _alive(pid)]
        if not alive:
            return [], time.monotonic() - start
        time.sleep(0.1)
    return [pid for pid in pids if _alive(pid)], time.monotonic() - start


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_sigkilled_tune_leaves_no_compile_worker_or_resource_tracker(tmp_path, report):
    flags = DRIVER_FLAGS[:DRIVER_FLAGS.index("-F")] + ["-F", "1", "-S", "ConvDirectLocal", "--budget", "200",
                                                       "--jobs", "2", "--strategy", "exhaustive"]
    env = procs.child_env(MIOPY_USER_DB_PATH=tmp_path / "user.db", MIOPY_CACHE_DIR=tmp_path / "cache")
    tune = subprocess.Popen([sys.executable, "-m", "miopy.cli.tune", *flags], cwd=procs.ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children: list[int] = []
    try:
        deadline = time.monotonic() + procs.TIMEOUT_S
        while time.monotonic() < deadline and tune.poll() is None:
            children = _children(tune.pid)
            kinds = [_cmdline(pid) for pid in children]
            if sum("spawn_main" in k for k in kinds) >= 2 and any("resource_tracker" in k for k in kinds):
                break
            time.sleep(0.1)
        assert tune.poll() is None, f"miopy-tune ended (rc {tune.returncode}) before its workers were seen"
        kinds = {pid: _cmdline(pid) for pid in children}
        workers = [pid for pid, k in kinds.items() if "spawn_main" in k]
        trackers = [pid for pid, k in kinds.items() if "resource_tracker" in k]
        assert len(workers) >= 2 and trackers, kinds
        tune.send_signal(signal.SIGKILL)
        tune.wait()
        survivors, waited = _wait_gone(children)
    finally:
        _kill_all([pid for pid in children if _alive(pid)])
        if tune.poll() is None:
            tune.kill()
    assert not survivors, {pid: _cmdline(pid) for pid in survivors}
    report.record(Outcome(
        fault="miopy-tune SIGKILLed while its compile workers run", store="-", processes=1 + len(children),
        repetitions=1,
        happened=f"its {len(workers)} compile workers and multiprocessing's resource tracker all exited "
                 f"{waited:.1f} s after the kill (the bound waited: {BOUND_S:.0f} s); none was left re-parented",
        test="test_orphans"))


PARENT = textwrap.dedent("""
    import multiprocessing, sys, threading, time
    from miopy.lifeline import die_with_parent, parent_token

    def child(token):
        die_with_parent(token)
        time.sleep(600)

    def start(out):
        process = multiprocessing.get_context("spawn").Process(target=child, args=(parent_token(),))
        process.start()
        out.append(process.pid)

    if __name__ == "__main__":
        pids = []
        thread = threading.Thread(target=start, args=(pids,))
        thread.start()
        thread.join()   # the thread that started the child has ended
        print(pids[0], flush=True)
        time.sleep(600)
""")


def test_a_worker_started_from_an_ended_thread_lives_with_its_parent_and_dies_with_it(tmp_path, report):
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    parent = subprocess.Popen([sys.executable, str(script)], cwd=procs.ROOT, env=procs.child_env(),
                              stdout=subprocess.PIPE, text=True)
    child = None
    try:
        child = int(parent.stdout.readline())
        time.sleep(1.0)   # several lifeline polls after the starting thread ended
        assert _alive(child), "the worker died with the thread that started it, not with its parent"
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        survivors, waited = _wait_gone([child])
    finally:
        if child is not None and _alive(child):
            _kill_all([child])
        if parent.poll() is None:
            parent.kill()
    assert not survivors
    report.record(Outcome(
        fault="parent SIGKILLed whose worker was started by a thread that had ended (no parent-death signal)",
        store="-", processes=2, repetitions=1,
        happened=f"the worker lived on while its parent did, and exited {waited:.1f} s after the parent's kill "
                 "(its lifeline thread saw it re-parented)", test="test_orphans"))


def test_sigkilled_distributed_tune_leaves_no_dask_or_compile_worker(tmp_path, report):
    """miopy-tune --workers 2: Dask's worker processes (their parent-alive pipe) and each worker's compile
    pool (its lifeline) all end when miopy-tune is SIGKILLed."""
    pytest.importorskip("distributed")
    flags = DRIVER_FLAGS[:DRIVER_FLAGS.index("-F")] + ["-F", "0", "--budget", "200", "--strategy", "exhaustive",
                                                       "--workers", "2"]
    env = procs.child_env(MIOPY_USER_DB_PATH=tmp_path / "user.db", MIOPY_CACHE_DIR=tmp_path / "cache")
    tune = subprocess.Popen([sys.executable, "-m", "miopy.cli.tune", *flags], cwd=procs.ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tree: list[int] = []
    try:
        deadline = time.monotonic() + procs.TIMEOUT_S
        while time.monotonic() < deadline and tune.poll() is None:
            tree = _descendants(tune.pid)
            grandchildren = set(tree) - set(_children(tune.pid))
            if sum("spawn_main" in _cmdline(pid) for pid in grandchildren) >= 2:   # compile pools at work
                break
            time.sleep(0.2)
        assert tune.poll() is None, f"miopy-tune ended (rc {tune.returncode}) before its workers were seen"
        tune.send_signal(signal.SIGKILL)
        tune.wait()
        survivors, waited = _wait_gone(tree)
    finally:
        _kill_all([pid for pid in tree if _alive(pid)])
        if tune.poll() is None:
            tune.kill()
    assert not survivors, {pid: _cmdline(pid) for pid in survivors}
    report.record(Outcome(
        fault="miopy-tune --workers 2 (Dask) SIGKILLed while its workers tune", store="-",
        processes=1 + len(tree), repetitions=1,
        happened=f"all {len(tree)} processes under it (Dask workers, their compile workers, resource trackers) "
                 f"exited {waited:.1f} s after the kill (bound {BOUND_S:.0f} s)", test="test_orphans"))
