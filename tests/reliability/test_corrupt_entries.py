"""Corrupt, misplaced and foreign cache entries: each is detected, logged once, treated as a miss and
rebuilt, and the kernel that comes back is the right one."""
from __future__ import annotations

import logging
import random
import shutil
from pathlib import Path

import numpy as np
import pyopencl as cl
import pytest

from miopy.kernel_cache import KernelCache, KernelSpec, wrap_entry
from tests.reliability import processes as procs
from tests.reliability.faults import CORRUPTIONS, DRIVER_FLAGS, KERNEL_CACHE, TAGS, Outcome, cache_entries
from tests.reliability.worker import tagged_spec

REPETITIONS = 2


def _cache(handle, binaries: bool, device_id: str | None = None) -> KernelCache:
    """A fresh process's view of the kernel cache, storing binaries or markers."""
    return KernelCache(handle.context, handle.device, device_id or handle.info.device_id, store_binaries=binaries)


def _copy_entry_of(cache: KernelCache, spec: KernelSpec, entry: Path) -> None:
    cache.kernel(spec)
    shutil.copyfile(cache._entry(cache.program_key(spec)), entry)


def _byte_corruption(name: str):
    def corrupt(entry: Path, spec: KernelSpec, handle, binaries: bool, rng: random.Random) -> None:
        entry.write_bytes(CORRUPTIONS[name](entry.read_bytes(), rng))
    return corrupt


def _entry_of_another_spec(entry: Path, spec: KernelSpec, handle, binaries: bool, rng: random.Random) -> None:
    """A whole entry of the same kernel built with other defines, copied under this entry's name."""
    other = _cache(handle, binaries)
    _copy_entry_of(other, KernelSpec.make(spec.file, spec.name, {**dict(spec.defines), "OTHER": 1}), entry)


def _entry_of_another_device(entry: Path, spec: KernelSpec, handle, binaries: bool, rng: random.Random) -> None:
    """A whole entry of the same spec recorded for another device, copied under this entry's name."""
    other = _cache(handle, binaries, "Another platform|Another GPU|9.9|64CU")
    _copy_entry_of(other, spec, entry)


def _entry_of_the_other_kind(entry: Path, spec: KernelSpec, handle, binaries: bool, rng: random.Random) -> None:
    """The same spec's whole entry as the other kind of cache writes it (a binary for a marker, or the
    reverse), copied under this entry's name."""
    _copy_entry_of(_cache(handle, not binaries), spec, entry)


def _binary_of_another_program(entry: Path, spec: KernelSpec, handle, binaries: bool, rng: random.Random) -> None:
    """A loadable binary of a program without the wanted kernel, under a right header and checksum."""
    prg = cl.Program(handle.context, "__kernel void other(__global float* o) { o[0] = 1.0f; }").build(
        devices=[handle.device], cache_dir=False)
    entry.write_bytes(wrap_entry(entry.stem, bytes(prg.get_info(cl.program_info.BINARIES)[0])))


FAULTS = {**{name: _byte_corruption(name) for name in CORRUPTIONS},
          "whole entry of another kernel spec copied in": _entry_of_another_spec,
          "whole entry of another device copied in": _entry_of_another_device,
          "whole entry of the other kind (binary / marker) copied in": _entry_of_the_other_kind,
          "binary of another program, right checksum": _binary_of_another_program}
KINDS = {"binaries": True, "markers": False}


def _fill_works(handle, cache: KernelCache, spec: KernelSpec) -> bool:
    """Run the cached fill kernel: the right program fills every element with the value."""
    out = cl.Buffer(handle.context, cl.mem_flags.READ_WRITE, 64 * 4)
    cache.kernel(spec)(handle.queue, (64,), (64,), out, np.float32(2.5), np.int32(64))
    host = np.empty(64, np.float32)
    cl.enqueue_copy(handle.queue, host, out)
    return bool(np.all(host == 2.5))


def _miopy_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("miopy") and r.levelno >= logging.WARNING]


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("fault", list(FAULTS))
def test_bad_entry_is_a_miss_logged_once_and_rebuilt(fault, kind, tmp_path, monkeypatch, caplog, handle, report):
    """In either kind of cache (entries holding binaries, or markers where the driver caches binaries)."""
    monkeypatch.setenv("MIOPY_CACHE_DIR", str(tmp_path))
    caplog.set_level(logging.WARNING, logger="miopy")
    rng, binaries = random.Random(fault), KINDS[kind]
    spec = tagged_spec(TAGS[0])
    first = _cache(handle, binaries)
    first.kernel(spec)
    entry = first._entry(first.program_key(spec))
    failed = 0
    for _ in range(REPETITIONS):
        FAULTS[fault](entry, spec, handle, binaries, rng)
        cache = _cache(handle, binaries)
        failed += not _fill_works(handle, cache, spec)
        assert cache.stats["compiled"] == 1 and cache.stats["disk_hits"] == 0, cache.stats
    check = KERNEL_CACHE.check(tmp_path, handle)
    warnings = _miopy_warnings(caplog)
    assert failed == 0 and not check.bad, check
    assert len(warnings) == 1, warnings
    said = warnings[0][warnings[0].index("found"):]  # without the cache directory
    report.record(Outcome(
        fault=f"cache entry ({kind}): {fault}", store=KERNEL_CACHE.name, processes=1, repetitions=REPETITIONS,
        happened=f"a miss every time, rebuilt and right; warned once: \"... {said}\"",
        failed_calls=failed, bad_entries=len(check.bad), test="test_corrupt_entries"))


def test_driver_over_a_cache_of_random_bytes(tmp_path, handle, report):
    """miopy-driver fills a cache, every entry is overwritten with random bytes, and it runs again."""
    env = procs.child_env(MIOPY_CACHE_DIR=tmp_path, MIOPY_FIND_MODE="normal")  # both runs benchmark every solver
    assert procs.run_driver(DRIVER_FLAGS, env).returncode == 0
    entries = cache_entries(tmp_path)
    rng = random.Random(7)
    for entry in entries:
        entry.write_bytes(rng.randbytes(entry.stat().st_size))
    again = procs.run_driver(DRIVER_FLAGS, env)
    warnings = procs.warning_lines(again.stderr)
    assert again.returncode == 0 and again.stdout.count("Verifies OK") == 3, again.stdout + again.stderr
    assert procs.driver_compiles(again.stdout) == len(entries) and len(warnings) == 1, again.stderr
    check = KERNEL_CACHE.check(tmp_path, handle)
    assert check.whole == len(entries) and not check.bad
    report.record(Outcome(
        fault="every entry of a driver's cache overwritten with random bytes", store=KERNEL_CACHE.name,
        processes=2, repetitions=1,
        happened=f"the second miopy-driver run rebuilt the {len(entries)} entry(ies), verified all 3 directions, "
                 f"and printed 1 warning", test="test_corrupt_entries"))
