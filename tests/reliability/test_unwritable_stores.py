"""Stores that cannot be written: a read-only directory or file, a full disk, a path that cannot be created,
no usable home directory. miopy keeps working from memory (a user DB that can still be read is copied there
first, so its records keep serving) and says so once per process, not once per call.

The in-process tests assert the single warning with caplog. The child-process tests make the condition
real where the kernel allows it (a read-only bind mount or a tiny tmpfs in a private mount namespace: root
ignores permission bits, so chmod would prove nothing here) and count what the child logged.
"""
from __future__ import annotations

import errno
import hashlib
import logging
import pwd
from pathlib import Path

import pytest

import miopy
from miopy import db, find
from miopy.conv import registry
from miopy.conv.problem import Direction, map_problem
from miopy.kernel_cache import KernelCache
from miopy.tuning import Compiler, TuneOptions, tune_solver
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
    Store,
    cache_entries,
    reopen_dbs,
)
from tests.reliability.worker import descriptors, run_checked, tagged_spec

CALLS_IN_PROCESS = 4
needs_namespaces = pytest.mark.skipif(not procs.namespaces_work(), reason="`unshare -rm` is not permitted here")


def _miopy_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("miopy") and r.levelno >= logging.WARNING]


def _compile_in_fresh_caches(handle, tags) -> dict:
    """Build each tag in CALLS_IN_PROCESS fresh caches (as many handles would); returns summed counts."""
    total = {"compiled": 0, "disk_hits": 0}
    for _ in range(CALLS_IN_PROCESS):
        cache = KernelCache(handle.context, handle.device, handle.info.device_id)
        for tag in tags:
            cache.kernel(tagged_spec(tag))
        total = {k: total[k] + cache.stats[k] for k in total}
    return total


# -- in this process, asserted with caplog ------------------------------------------------------------------
def _refuse_writes(monkeypatch, tmp_path: Path) -> Path:
    """Read-only, simulated: every way the cache creates a file fails with EROFS."""
    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    for target in ("pathlib.Path.mkdir", "filelock.FileLock.acquire", "tempfile.mkstemp"):
        monkeypatch.setattr(target, refuse)
    return tmp_path


def _path_through_a_file(monkeypatch, tmp_path: Path) -> Path:
    """A cache path that cannot be created: one of its parents is a regular file (ENOTDIR, even for root)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    return blocker / "cache"


IN_PROCESS = {"read-only directory (simulated EROFS)": _refuse_writes,
              "cache path that cannot be created (a parent is a file)": _path_through_a_file}


@pytest.mark.parametrize("fault", list(IN_PROCESS))
def test_unwritable_cache_warns_once_in_process(fault, tmp_path, monkeypatch, caplog, handle, report):
    caplog.set_level(logging.WARNING, logger="miopy")
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(IN_PROCESS[fault](monkeypatch, tmp_path)))
    tags = TAGS[:3]
    counts = _compile_in_fresh_caches(handle, tags)
    warnings = _miopy_warnings(caplog)
    assert counts == {"compiled": CALLS_IN_PROCESS * len(tags), "disk_hits": 0}
    assert len(warnings) == 1 and "in memory only" in warnings[0], warnings
    assert not list(tmp_path.rglob("*.bin"))
    report.record(Outcome(
        fault=fault, store=KERNEL_CACHE.name, processes=1, repetitions=CALLS_IN_PROCESS * len(tags),
        happened=f"every kernel built in memory; 1 warning for {CALLS_IN_PROCESS * len(tags)} cache misses",
        test="test_unwritable_stores"))


def test_missing_home_warns_once_in_process(tmp_path, monkeypatch, caplog, handle, report):
    """HOME leads through a file and nothing else names a cache: the handle moves the user cache aside."""
    caplog.set_level(logging.WARNING, logger="miopy")
    (tmp_path / "a-file").write_text("not a directory")
    monkeypatch.setenv("HOME", str(tmp_path / "a-file" / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", "")  # empty reads as unset; monkeypatch restores what was there
    for store in STORES.values():
        monkeypatch.delenv(store.env_var, raising=False)
    handles = [miopy.Handle() for _ in range(CALLS_IN_PROCESS)]
    counts = _compile_in_fresh_caches(handles[-1], TAGS[:1])
    warnings = _miopy_warnings(caplog)
    assert len(warnings) == 1 and "unusable" in warnings[0], warnings
    assert counts == {"compiled": 1, "disk_hits": CALLS_IN_PROCESS - 1}
    report.record(Outcome(
        fault="HOME leads nowhere, no MIOPY_CACHE_DIR (in process)", store="all", processes=1,
        repetitions=CALLS_IN_PROCESS,
        happened="the first Handle moved XDG_CACHE_HOME to a private temporary directory; 1 warning for "
                 f"{CALLS_IN_PROCESS} handles", test="test_unwritable_stores"))


def _db_through_a_file(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    monkeypatch.setenv("MIOPY_USER_DB_PATH", str(tmp_path / "a-file" / "db" / "user.db"))


def _db_path_is_a_directory(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "user.db").mkdir()
    monkeypatch.setenv("MIOPY_USER_DB_PATH", str(tmp_path / "user.db"))


def _no_home(tmp_path: Path, monkeypatch) -> None:
    """HOME unset and no passwd entry: '~' cannot be expanded, so platformdirs' directories stay relative."""
    def no_entry(uid):
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    for name in ("HOME", "MIOPY_USER_DB_PATH"):
        monkeypatch.delenv(name, raising=False)
    for name in ("XDG_DATA_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, "")  # empty reads as unset; monkeypatch restores what the handle sets
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    monkeypatch.chdir(tmp_path)  # where a relative '~/...' would land


DB_IN_PROCESS = {
    "user DB path that cannot be created (a parent is a file)": _db_through_a_file,
    "user DB path is a directory": _db_path_is_a_directory,
    "no home directory: HOME unset, no passwd entry, no XDG_* or MIOPY_USER_DB_PATH (in process)": _no_home,
}


def _problem():
    xd, wd, conv, _ = descriptors(PROBLEMS[0])
    return map_problem(Direction.FORWARD, xd, wd, conv).problem


def _db_work(handle) -> None:
    """Finds (the first benchmarks and stores, the next are served from the find DB) and a tuning run whose
    winner find then uses: every DB table written and read."""
    problem = _problem()
    for seed in range(CALLS_IN_PROCESS):
        found = run_checked(handle, PROBLEMS[0], Direction.FORWARD, seed=seed)
        assert found.from_db == (seed > 0), (seed, found.from_db)
    naive = registry.get("ConvDirectNaive")
    with Compiler(handle, 0) as compiler:
        tuned = tune_solver(handle, problem, naive, options=TuneOptions(budget=3), compiler=compiler)
    assert find.params_for(naive, problem, handle) == (tuned.best_params, db.USER_PERF)


@pytest.mark.parametrize("fault", list(DB_IN_PROCESS))
def test_unusable_user_db_path_keeps_records_in_memory(fault, tmp_path, monkeypatch, caplog, report):
    """The DB lives in memory for the process: records written are read back, with one warning. Without a
    home, the new handle also moves PoCL's and pyopencl's caches aside (one more warning)."""
    monkeypatch.setenv("MIOPY_SYSTEM_DB_PATH", str(tmp_path / "no-system.db"))
    DB_IN_PROCESS[fault](tmp_path, monkeypatch)
    before = sorted(tmp_path.rglob("*"))
    caplog.set_level(logging.WARNING, logger="miopy")
    reopen_dbs()
    handle = miopy.Handle()
    _db_work(handle)
    warnings = _miopy_warnings(caplog)
    db_warnings = [w for w in warnings if "user DB" in w]
    assert db.user_store().in_memory and len(db_warnings) == 1, warnings
    assert len(warnings) == 1 + (fault == next(reversed(DB_IN_PROCESS))), warnings
    assert sorted(tmp_path.rglob("*")) == before  # nothing written anywhere, not even a relative '~'
    said = db_warnings[0].split(";")[0].replace(str(tmp_path), "<tmp>")
    report.record(Outcome(
        fault=fault, store=USER_DB.name, processes=1, repetitions=CALLS_IN_PROCESS + 1,
        happened=f"{CALLS_IN_PROCESS} find+run calls verified (all but the first served from the find DB) and a "
                 f"tuning run whose winner find then used, all in memory; 1 DB warning (\"{said}\")"
                 + ("; the handle moved PoCL's and pyopencl's caches to a "
                 "private temporary directory, 1 warning" if len(warnings) > 1 else ""),
        test="test_unwritable_stores"))


# -- in child processes, on real faulty filesystems ---------------------------------------------------------
def _read_only_directory(tmp_path: Path) -> tuple[Path, list[str]]:
    directory = tmp_path / "read-only"
    directory.mkdir()
    return directory, procs.read_only(directory)


def _full_disk(tmp_path: Path) -> tuple[Path, list[str]]:
    directory = tmp_path / "full"
    directory.mkdir()
    return directory, procs.full_disk(directory)


def _through_a_file(tmp_path: Path) -> tuple[Path, list[str]]:
    (tmp_path / "a-file").write_text("not a directory")
    return tmp_path / "a-file" / "store", []


# fault -> (make the place: tmp_path -> (directory, command prefix), needs a mount namespace)
REAL = {"read-only directory (read-only bind mount, EROFS)": (_read_only_directory, True),
        "full disk (a filled 8 KiB tmpfs, ENOSPC)": (_full_disk, True),
        "path that cannot be created (a parent is a file, ENOTDIR)": (_through_a_file, False)}


def _run_both(env: dict, prefix: list[str], list_dir: Path) -> tuple[dict, object]:
    """A find workload and a miopy-driver run, each its own process; both must succeed."""
    worker = procs.run_worker("workload", {"problems": PROBLEMS, "list_dir": str(list_dir)}, env, prefix)
    driver = procs.run_driver(DRIVER_FLAGS, env, prefix)
    assert not worker["failures"], worker["failures"]
    assert driver.returncode == 0 and driver.stdout.count("Verifies OK") == 3, driver.stdout + driver.stderr
    return worker, driver


@pytest.mark.parametrize("store", list(STORES))
@pytest.mark.parametrize("fault", list(REAL))
def test_unwritable_store_in_child_processes(fault, store, tmp_path, report):
    make, needs_namespace = REAL[fault]
    if needs_namespace and not procs.namespaces_work():
        pytest.skip("`unshare -rm` is not permitted here")
    directory, prefix = make(tmp_path)
    target: Store = STORES[store]
    env = procs.child_env(**{target.env_var: target.location(directory)})
    worker, driver = _run_both(env, prefix, directory)
    driver_warnings = procs.warning_lines(driver.stderr)
    assert len(worker["warnings"]) == 1 and len(driver_warnings) == 1, (worker["warnings"], driver_warnings)
    # A full disk may leave the empty file SQLite began to create: to SQLite, a new empty DB.
    files = {f: size for f, size in worker["files"].items() if f != procs.FILLER}
    locks = [f for f in files if f.endswith(".lock")]
    empty = [f for f, size in files.items() if not size and f not in locks]
    assert len(locks) + len(empty) == len(files), files
    report.record(Outcome(
        fault=fault, store=target.name, processes=2, repetitions=worker["calls"] + 3,
        happened=f"{worker['calls']} find+run calls and a 3-direction miopy-driver run all verified, from memory; "
                 f"1 warning per process; left in the store: {len(locks)} lock file(s)"
                 + (f", {len(empty)} empty file(s) ({', '.join(empty)}: to SQLite a new, empty DB)" if empty else ""),
        test="test_unwritable_stores"))


@needs_namespaces
def test_read_only_populated_cache_serves_hits_silently(tmp_path, handle, report):
    """A cache filled earlier and mounted read-only (a shared, read-only cache) is read without a warning."""
    env = procs.child_env(MIOPY_CACHE_DIR=tmp_path)
    _run_both(env, [], tmp_path)
    entries = len(cache_entries(tmp_path))
    worker, driver = _run_both(env, procs.read_only(tmp_path), tmp_path)
    assert worker["compiled"] == 0 and procs.driver_compiles(driver.stdout) == 0
    assert not worker["warnings"] and not procs.warning_lines(driver.stderr)
    assert KERNEL_CACHE.check(tmp_path, handle).whole == entries
    report.record(Outcome(
        fault="read-only directory holding a filled cache (read-only bind mount)", store=KERNEL_CACHE.name,
        processes=2, repetitions=worker["calls"] + 3,
        happened=f"every kernel read from the {entries} entries, nothing compiled, no warning",
        test="test_unwritable_stores"))


def _tune_in_child(env: dict, prefix: list[str] = ()) -> dict:
    result = procs.run_worker("cli", {"program": "tune", "argv": TUNE_FLAGS}, env, prefix)
    assert not result["failures"], result["failures"]
    return result


READ_ONLY_DB = {  # fault -> what is mounted read-only, from the DB's path
    "read-only directory holding a filled user DB (bind mount)": lambda path: path.parent,
    "read-only user DB file in a writable directory (bind mount of the file)": lambda path: path,
}


@needs_namespaces
def test_read_only_user_db_keeps_serving_its_records(tmp_path, handle, report):
    """A user DB filled earlier (tuning log, perf and find records), then mounted read-only: each process
    works on a copy in memory, so tuning resumes from the log and find is served from the find DB; one
    warning per process; the file is left byte for byte as it was."""
    path = tmp_path / "db" / "user.db"
    path.parent.mkdir()
    env = procs.child_env(MIOPY_USER_DB_PATH=path)
    _tune_in_child(env)
    assert procs.run_driver(DRIVER_FLAGS, env).returncode == 0
    digest, records = hashlib.sha256(path.read_bytes()).hexdigest(), USER_DB.check(path, handle).whole
    for fault, mounted in READ_ONLY_DB.items():
        prefix = procs.read_only(mounted(path))
        tuned = _tune_in_child(env, prefix)
        driver = procs.run_driver(DRIVER_FLAGS, env, prefix)
        warnings = tuned["warnings"] + procs.warning_lines(driver.stderr)
        assert driver.returncode == 0 and driver.stdout.count("Verifies OK") == 3, driver.stdout + driver.stderr
        assert tuned["stdout"].count("0 measured, 3 from the log") == 3, tuned["stdout"]
        assert driver.stdout.count("from the find DB") == 3, driver.stdout
        assert len(warnings) == 2 and all("read-only" in w for w in warnings), warnings
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
        report.record(Outcome(
            fault=fault, store=USER_DB.name, processes=2, repetitions=6,
            happened=f"each process worked on an in-memory copy of the {records} records: miopy-tune resumed all "
                     "3 directions from the tuning log (nothing measured), miopy-driver's 3 finds were served from "
                     "the find DB and verified; 1 warning per process; the file unchanged byte for byte",
            test="test_unwritable_stores"))


def _home_read_only(tmp_path: Path) -> tuple[Path, list[str]]:
    home = tmp_path / "home"
    home.mkdir()
    return home, procs.read_only(home)


def _home_through_a_file(tmp_path: Path) -> tuple[Path, list[str]]:
    (tmp_path / "a-file").write_text("not a directory")
    return tmp_path / "a-file" / "home", []


HOMES = {"read-only home directory (bind mount), no MIOPY_* paths": (_home_read_only, True),
         "HOME leads nowhere (a parent is a file), no MIOPY_* paths": (_home_through_a_file, False)}


@pytest.mark.parametrize("fault", list(HOMES))
def test_unusable_home_in_child_processes(fault, tmp_path, report):
    """PoCL lists no device and pyopencl cannot build without a cache under home: the handle moves
    XDG_CACHE_HOME to a private temporary directory, with one warning per store at most. Only the driver
    runs here: with PoCL's own cache moved aside too, every kernel is built from scratch (slow)."""
    make, needs_namespace = HOMES[fault]
    if needs_namespace and not procs.namespaces_work():
        pytest.skip("`unshare -rm` is not permitted here")
    home, prefix = make(tmp_path)
    env = procs.child_env(HOME=home, XDG_CACHE_HOME=None, XDG_DATA_HOME=None,
                          **{store.env_var: None for store in STORES.values()})
    driver = procs.run_driver(DRIVER_FLAGS, env, prefix)
    warnings = procs.warning_lines(driver.stderr)
    assert driver.returncode == 0 and driver.stdout.count("Verifies OK") == 3, driver.stdout + driver.stderr
    assert len(warnings) == len(STORES) and "unusable" in warnings[0] and "user DB" in warnings[1], warnings
    report.record(Outcome(
        fault=fault, store="all", processes=1, repetitions=3,
        happened="a 3-direction miopy-driver run verified; caches kept in a private temporary directory, DB "
                 "records in memory; 1 warning for each", test="test_unwritable_stores"))
