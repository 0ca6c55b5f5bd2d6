"""Processes SIGKILLed while building or writing a cache entry: the next process is neither blocked nor
misled, each entry is whole or absent, and the dead writer's temporary file is removed by the next one.
A live process hung holding an entry's lock costs others the lock timeout, then they build in memory."""
from __future__ import annotations

import logging
import random
import signal
import time

import filelock
import pytest

from miopy.kernel_cache import KernelCache
from tests.reliability import processes as procs
from tests.reliability.faults import KERNEL_CACHE, TAGS, Outcome, cache_entries, cache_temporaries
from tests.reliability.worker import tagged_spec

HANG_POINTS = {  # where the child stops: (what it leaves behind besides its lock file, temporaries left)
    "compiling": ("while compiling, holding the entry's lock", 0),
    "mid-write": ("with half of its temporary entry file written", 1),
    "before-rename": ("with its whole temporary file written, before the rename", 1),
}
RANDOM_KILLS = 4


def _kill(proc) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=procs.TIMEOUT_S)


@pytest.mark.parametrize("at", sorted(HANG_POINTS))
def test_writer_killed_at_each_point_leaves_no_entry_and_blocks_no_one(at, tmp_path, monkeypatch, handle, report):
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path))
    tag = TAGS[0]
    entry = handle.kernels._entry(handle.kernels.program_key(tagged_spec(tag)))
    lock_file = entry.with_name(entry.name + ".lock")
    child = procs.start_worker("hang", {"tag": tag, "at": at})
    procs.wait_line(child, "HANG")
    with pytest.raises(filelock.Timeout):  # the entry's lock is held while its holder lives
        filelock.FileLock(str(lock_file), timeout=0.05).acquire()
    _kill(child)
    assert not entry.exists() and lock_file.exists()
    assert len(cache_temporaries(tmp_path)) == HANG_POINTS[at][1]
    # flock dies with its holder: the stale lock file is free at once.
    filelock.FileLock(str(lock_file), timeout=0).acquire().lock.release()

    # The next process waits at most 0.2 s for the lock: had the dead writer's lock outlived it, that process
    # would time out, warn and keep the kernel in memory, and the entry would not be on disk.
    started = time.monotonic()
    after = procs.run_worker("compile", {"tags": [tag], "lock_timeout": 0.2})
    seconds = time.monotonic() - started
    assert not after["failures"] and after["compiled"] == 1 and not after["warnings"], after
    check = KERNEL_CACHE.check(tmp_path, handle)
    assert check.whole == 1 and not check.bad and check.temporaries == 0, check
    report.record(Outcome(
        fault=f"process SIGKILLed {HANG_POINTS[at][0]}", store=KERNEL_CACHE.name, processes=2, repetitions=1,
        happened=f"entry absent; stale lock file left, refused while its holder lived, free at once after; "
                 f"{HANG_POINTS[at][1]} temporary file(s) left; the next process, with its lock timeout cut to "
                 f"0.2 s, took the lock without a warning, rebuilt the entry on disk (in {seconds:.1f} s with its "
                 "start-up) and removed the temporary file",
        test="test_killed_writer"))


def test_random_kills_during_a_loop_of_compiles(tmp_path, handle, report):
    """Kill a compiling process at a random moment among its first new compiles, again and again (each
    process resumes from the entries already whole); then one process finishes the job."""
    rng = random.Random(1234)
    env = procs.child_env(MIOPY_CACHE_DIR=tmp_path)
    progress = []
    for _ in range(RANDOM_KILLS):
        whole = len(cache_entries(tmp_path))
        child = procs.start_worker("compile", {"tags": TAGS}, env)
        for _ in range(min(whole + rng.randint(0, 2), len(TAGS) - 1)):
            procs.wait_line(child, "DONE")
        time.sleep(rng.uniform(0.0, 0.05))
        _kill(child)
        check = KERNEL_CACHE.check(tmp_path, handle)
        assert not check.bad, check
        progress.append(check.whole)
    final = procs.run_worker("compile", {"tags": TAGS}, env)
    assert not final["failures"] and not final["warnings"], final
    check = KERNEL_CACHE.check(tmp_path, handle)
    assert check.whole == len(TAGS) and not check.bad, check
    assert final["compiled"] == len(TAGS) - progress[-1]
    report.record(Outcome(
        fault="SIGKILL at random moments of a loop of compiles", store=KERNEL_CACHE.name,
        processes=RANDOM_KILLS + 1, repetitions=1,
        happened=f"whole entries after each kill: {progress} of {len(TAGS)}, never a bad one; the next "
                 f"process compiled only the {final['compiled']} missing and left {check.temporaries} "
                 f"temporary file(s)", test="test_killed_writer"))


def test_lock_held_by_a_hung_live_process_times_out_to_memory(tmp_path, monkeypatch, caplog, handle, report):
    """A live process that hangs holding an entry's lock (a stuck compile, a dead NFS client) delays
    others by the lock timeout at most; then they build in memory, warning once."""
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr("miopy.kernel_cache.LOCK_TIMEOUT_S", 0.2)
    caplog.set_level(logging.WARNING, logger="miopy")
    child = procs.start_worker("hang", {"tag": TAGS[0], "at": "compiling"})
    try:
        procs.wait_line(child, "HANG")
        caches = [KernelCache(handle.context, handle.device, handle.info.device_id) for _ in range(3)]
        for cache in caches:
            cache.kernel(tagged_spec(TAGS[0]))
    finally:
        _kill(child)
    warnings = [r.getMessage() for r in caplog.records if r.name.startswith("miopy")]
    assert [c.stats["compiled"] for c in caches] == [1, 1, 1]
    assert len(warnings) == 1 and "Timeout" in warnings[0], warnings
    assert not cache_entries(tmp_path)
    report.record(Outcome(
        fault="entry lock held by a live, hung process (lock timeout shortened to 0.2 s)",
        store=KERNEL_CACHE.name, processes=2, repetitions=len(caches),
        happened=f"each of {len(caches)} caches waited out the timeout and built the kernel in memory; 1 warning",
        test="test_killed_writer"))
