import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import miopy
from miopy.kernel_cache import KernelSpec

DRIVER = [sys.executable, "-m", "miopy.cli.driver", "conv", "-n", "1", "-c", "4", "-H", "6", "-W", "6", "-k", "4",
          "-y", "3", "-x", "3", "-p", "1", "-q", "1", "-F", "0", "-i", "1"]


def _spec(tag: int) -> KernelSpec:
    return KernelSpec.make("scale.cl", "fill", {"MIOPY_TEST_TAG": tag})


def test_fresh_process_compiles_nothing(tmp_path):
    env = dict(os.environ, MIOPY_CACHE_DIR=str(tmp_path / "c"), MIOPY_USER_DB_PATH=str(tmp_path / "u.db"))
    first = subprocess.run(DRIVER, env=env, capture_output=True, text=True, check=True).stdout
    second = subprocess.run(DRIVER, env=env, capture_output=True, text=True, check=True).stdout
    assert "compiled=0" not in first.splitlines()[-1]
    assert second.splitlines()[-1].startswith("kernel cache: compiled=0 disk_hits=")
    assert "disk_hits=0" not in second.splitlines()[-1]


def test_memory_then_disk_then_corrupt_entry_rebuilt(monkeypatch, tmp_path):
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path))
    h = miopy.Handle()
    h.kernels.kernel(_spec(1))
    h.kernels.kernel(_spec(1))
    assert h.cache_stats() == {"compiled": 1, "disk_hits": 0, "memory_hits": 1, "adopted": 0}
    entries = list(tmp_path.rglob("*.bin"))
    assert len(entries) == 1
    h2 = miopy.Handle()
    h2.kernels.kernel(_spec(1))
    assert h2.cache_stats()["disk_hits"] == 1 and h2.cache_stats()["compiled"] == 0
    for corrupt in (b"garbage", entries[0].read_bytes()[:-7] + b"1234567"):
        entries[0].write_bytes(corrupt)
        h3 = miopy.Handle()
        h3.kernels.kernel(_spec(1))
        assert h3.cache_stats()["compiled"] == 1
    h4 = miopy.Handle()
    h4.kernels.kernel(_spec(1))
    assert h4.cache_stats() == {"compiled": 0, "disk_hits": 1, "memory_hits": 0, "adopted": 0}


def test_cache_path_that_cannot_be_created_works_from_memory(monkeypatch, tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(blocker / "cache"))
    h = miopy.Handle()
    h.kernels.kernel(_spec(2))
    h.kernels.kernel(_spec(2))
    assert h.cache_stats() == {"compiled": 1, "disk_hits": 0, "memory_hits": 1, "adopted": 0}


def test_read_only_cache_directory_still_works(monkeypatch, tmp_path):
    """A read-only directory (simulated: root ignores permission bits) keeps working from memory."""
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path))

    def refuse(*args, **kwargs):
        raise PermissionError(30, "Read-only file system")

    monkeypatch.setattr("tempfile.mkstemp", refuse)
    monkeypatch.setattr("filelock.FileLock.acquire", refuse)
    h = miopy.Handle()
    h.kernels.kernel(_spec(3))
    assert h.cache_stats()["compiled"] == 1 and not list(tmp_path.rglob("*.bin"))


def test_read_only_directory(tmp_path):
    """A cache directory on a read-only mount (a real EROFS, which root cannot write either, unlike a chmod):
    the kernel is built and used from memory, nothing is written, one warning."""
    from tests.reliability import processes as procs
    if not procs.namespaces_work():
        pytest.skip("`unshare -rm` is not permitted here")
    result = procs.run_worker("compile", {"tags": [4], "list_dir": str(tmp_path)},
                              procs.child_env(MIOPY_CACHE_DIR=tmp_path), procs.read_only(tmp_path))
    assert not result["failures"] and result["compiled"] == 1, result
    assert len(result["warnings"]) == 1 and "keeping compiled kernels in memory" in result["warnings"][0], result
    assert not list(tmp_path.rglob("*"))


def test_disable_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("MIOPY_DISABLE_CACHE", "1")
    miopy.Handle().kernels.kernel(_spec(5))
    assert not list(Path(tmp_path).rglob("*.bin"))


def test_key_covers_defines_options_and_device():
    h = miopy.Handle()
    a, b = _spec(6), _spec(7)
    assert h.kernels.program_key(a) != h.kernels.program_key(b)
    c = KernelSpec.make("scale.cl", "fill", {"MIOPY_TEST_TAG": 6}, ("-cl-mad-enable",))
    assert h.kernels.program_key(a) != h.kernels.program_key(c)
    other = miopy.kernel_cache.KernelCache(h.context, h.device, "another device")
    assert other.program_key(a) != h.kernels.program_key(a)


def test_rebuilding_an_entry_removes_only_its_dead_writers_temporaries(monkeypatch, tmp_path):
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path))
    h = miopy.Handle()
    entry = h.kernels._entry(h.kernels.program_key(_spec(8)))
    entry.parent.mkdir(parents=True)
    dead = entry.parent / f".{entry.stem}.x1y2z3.tmp"  # as a writer killed before its rename leaves it
    other = entry.parent / f".{'f' * 64}.x1y2z3.tmp"
    dead.write_bytes(b"half an entry")
    other.write_bytes(b"another entry's")
    h.kernels.kernel(_spec(8))
    assert entry.exists() and not dead.exists() and other.exists()


def _cache(h, binaries):
    return miopy.kernel_cache.KernelCache(h.context, h.device, h.info.device_id, store_binaries=binaries)


def test_pocl_entries_are_markers_elsewhere_binaries(monkeypatch, tmp_path):
    """Where the driver caches binaries itself (PoCL) the default entry is a marker; MIOPY_CACHE_BINARIES
    forces either kind."""
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path))
    h = miopy.Handle()
    pocl = "pocl" in h.device.version.lower()
    assert miopy.kernel_cache.driver_caches_binaries(h.device) == pocl
    assert h.kernels.store_binaries is not pocl
    for value, expected in (("1", True), ("0", False)):
        monkeypatch.setenv("MIOPY_CACHE_BINARIES", value)
        assert miopy.Handle().kernels.store_binaries is expected


@pytest.mark.parametrize("binaries", [True, False], ids=["binaries", "markers"])
def test_each_kind_of_entry_serves_a_fresh_process(monkeypatch, tmp_path, binaries):
    """A marker entry holds only the marker and a hit rebuilds from source; a binary entry holds the program.
    Either way a fresh cache compiles nothing, and the kernel it returns runs."""
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path))
    h = miopy.Handle()
    _cache(h, binaries).kernel(_spec(9))
    (entry,) = tmp_path.rglob("*.bin")
    payload = entry.read_bytes()[miopy.kernel_cache.HEADER_BYTES:]
    assert (payload == miopy.kernel_cache.MARKER) is not binaries
    fresh = _cache(h, binaries)
    knl = fresh.kernel(_spec(9))
    assert fresh.stats == {"compiled": 0, "disk_hits": 1, "memory_hits": 0, "adopted": 0}
    out = h.empty((64,))
    knl(h.queue, (64,), (64,), out.data, np.float32(1.5), np.int32(64))
    assert np.all(h.to_host(out) == 1.5)


def test_kinds_never_share_an_entry(tmp_path):
    h = miopy.Handle()
    assert _cache(h, True).program_key(_spec(10)) != _cache(h, False).program_key(_spec(10))


def test_a_binary_built_elsewhere_is_adopted_and_stored_a_bad_one_is_a_miss(monkeypatch, tmp_path):
    """What parallel compile workers send back: a program binary, adopted into memory and the cache's own
    entry; one that does not load is refused (nothing kept) and the kernel is built here when asked."""
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path / "elsewhere"))
    binary = miopy.Handle().kernels.binary(_spec(7))   # "the worker", with a cache of its own
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path / "here"))
    here = miopy.kernel_cache.KernelCache(*_context(), store_binaries=True)
    assert not here.adopt(_spec(8), b"not a binary") and here.stats["adopted"] == 0
    here.kernel(_spec(8))
    assert here.stats["compiled"] == 1
    assert here.adopt(_spec(7), binary) and here.stats["adopted"] == 1
    here.kernel(_spec(7))
    assert here.stats["compiled"] == 1 and len(list((tmp_path / "here").rglob("*.bin"))) == 2
    fresh = miopy.kernel_cache.KernelCache(*_context(), store_binaries=True)
    fresh.kernel(_spec(7))
    assert fresh.stats["disk_hits"] == 1 and fresh.stats["compiled"] == 0


def _context():
    h = miopy.Handle()
    return h.context, h.device, h.info.device_id
