"""The reliability suite's shared pieces: the stores under test, the faults tried on them, the ways a file
is corrupted, how a store is checked afterwards, and the record every test adds to the report.

A store is anything miopy keeps on disk. Today that is the kernel binary cache; the perf DB and find DB
slot in as further ``Store`` entries (their location variable, their check) and every fault that is not
specific to one store runs on them too.
"""
from __future__ import annotations

import json
import os
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import pyopencl as cl

from miopy import kernel_cache


# -- the work done under every fault ------------------------------------------------------------------------
# Few shapes and kernel tags, shared by every test, so PoCL's own cache builds each program once per
# machine and the suite stays fast where that cache starts cold (CI).
# (n, c, h, w, k, r, s, pad, stride, dilation, groups); the first is also miopy-driver's problem.
PROBLEMS = [[1, 4, 6, 6, 4, 3, 3, 1, 1, 1, 1], [2, 6, 7, 5, 4, 3, 3, 0, 2, 1, 2]]
DRIVER_FLAGS = "-n 1 -c 4 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1 -F 0 -i 1".split()
TAGS = list(range(8))  # MIOPY_TEST_TAG values of the cheap scale.cl programs (tests/reliability/worker.py)


# -- stores ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StoreCheck:
    """What a store holds after a run: whole entries, entries that fail their check, leftover temporaries."""

    whole: int
    bad: tuple[str, ...]
    temporaries: int


@dataclass(frozen=True)
class Store:
    """A disk store of miopy: its name, the variable that locates it, and how to check what it holds."""

    name: str
    env_var: str
    location: Callable[[Path], Path]          # directory given to the test -> value of env_var
    check: Callable[[Path, object], StoreCheck]  # (location, Handle) -> StoreCheck


def cache_entries(root: Path) -> list[Path]:
    """Every kernel cache entry file under root (lock files and temporaries excluded)."""
    return sorted((root / kernel_cache.FORMAT).glob("*/*.bin"))


def cache_temporaries(root: Path) -> list[Path]:
    return sorted((root / kernel_cache.FORMAT).glob("*/.*.tmp"))


def check_kernel_cache(root: Path, handle) -> StoreCheck:
    """Every entry's header and key-bound checksum must be right and its binary must load on handle's device."""
    bad, whole = [], 0
    for path in cache_entries(root):
        blob = path.read_bytes()
        fault = kernel_cache.entry_fault(blob, path.stem)
        if fault is None:
            try:
                payload = blob[kernel_cache.HEADER_BYTES:]
                prg = cl.Program(handle.context, [handle.device], [payload]).build()
                fault = None if prg.get_info(cl.program_info.KERNEL_NAMES) else "no kernels"
            except cl.Error as exc:
                fault = f"does not load: {exc}"
        if fault is None:
            whole += 1
        else:
            bad.append(f"{path.name}: {fault}")
    return StoreCheck(whole, tuple(bad), len(cache_temporaries(root)))


KERNEL_CACHE = Store("kernel cache", "MIOPY_CACHE_DIR", lambda d: d, check_kernel_cache)
STORES = {KERNEL_CACHE.name: KERNEL_CACHE}


def store_dir(root: Path, store: Store) -> Path:
    return root / store.name.replace(" ", "-")


def store_env(root: Path) -> dict[str, str]:
    """Every store placed in its own directory under root, as environment overrides for a child."""
    return {s.env_var: str(s.location(store_dir(root, s))) for s in STORES.values()}


def check_stores(root: Path, handle) -> dict[str, StoreCheck]:
    """Each store placed by store_env(root), checked."""
    return {s.name: s.check(s.location(store_dir(root, s)), handle) for s in STORES.values()}


# -- corrupting a file ------------------------------------------------------------------------------------
def _truncate(blob: bytes, rng: random.Random) -> bytes:
    return blob[:rng.randrange(1, len(blob))]


def _random_bytes(blob: bytes, rng: random.Random) -> bytes:
    return rng.randbytes(len(blob))


def _flip_payload_byte(blob: bytes, rng: random.Random) -> bytes:
    """Right header, wrong checksum: one byte of the body changed."""
    i = rng.randrange(kernel_cache.HEADER_BYTES, len(blob))
    return blob[:i] + bytes([blob[i] ^ 0xFF]) + blob[i + 1:]


def _empty(blob: bytes, rng: random.Random) -> bytes:
    return b""


# Byte-level corruptions that apply to any store file (a cache entry, a SQLite DB).
CORRUPTIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "truncated": _truncate,
    "random bytes": _random_bytes,
    "right header, wrong checksum": _flip_payload_byte,
    "empty file": _empty,
}


# -- the report -------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    """One row of docs/reliability.md: a fault, how often it was tried, what happened, what was lost.

    failed_calls counts miopy calls that raised or returned wrong results; bad_entries counts store
    entries left corrupt; both must be 0.
    """

    fault: str
    store: str
    processes: int
    repetitions: int
    happened: str
    failed_calls: int = 0
    bad_entries: int = 0
    test: str = field(default="")


class Report:
    """Collects Outcomes during a session; written as JSON where MIOPY_RELIABILITY_REPORT points."""

    def __init__(self):
        self.outcomes: list[Outcome] = []
        self.device = ""

    def record(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)

    def write(self, path: Path, seconds: float) -> None:
        data = {"device": self.device, "seconds": round(seconds, 1),
                "outcomes": [asdict(o) for o in self.outcomes]}
        path.write_text(json.dumps(data, indent=1) + "\n")


def report_path() -> Path | None:
    value = os.environ.get("MIOPY_RELIABILITY_REPORT")
    return Path(value) if value else None
