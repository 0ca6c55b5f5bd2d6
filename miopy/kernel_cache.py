"""Two-level kernel binary cache: memory, then disk, then compile.

A KernelSpec names a kernel file in miopy/kernels, a kernel name, -D defines and build options. Its
program key hashes the source with its includes inlined, the defines, the options, the device id, the
miopy version and what an entry holds (below). Disk entries carry a SHA-256 of their key and payload: a
truncated, altered or misplaced entry (one copied under another key, e.g. from another device) is a miss
and is rebuilt, as is one that does not load or lacks its kernel. Writes go to a temporary file renamed
into place under a per-entry file lock, so concurrent processes compile a program once and never see half
a file; the lock holder also removes temporary files a killed writer of the same entry left behind. Every
cache fault is logged once per kind and cache directory, never per entry.

Don't cache twice. pyopencl's own cache is bypassed (``cache_dir=False``). Where the driver keeps a binary
cache of its own keyed by the source and options (PoCL: ``driver_caches_binaries``), an entry holds only a
small verified marker and a hit rebuilds from source, which the driver serves from its cache: asking PoCL
for a program binary compiles every kernel of the program once more for a generic work-group size (about
2.4 s of a 5 s first build on the 2-core CI machine), while a rebuild it has cached costs about 0.15 s
(docs/notes/cpu.md, benchmarks/cache_start.py). Elsewhere (NVIDIA: PTX, whose JIT the driver caches) an entry
holds the program binary. MIOPY_CACHE_BINARIES=1 / 0 forces either kind.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import filelock
import pyopencl as cl

from . import config, ptx_patch
from .errors import CompileError
from .log import warn_once
from .version import __version__

logger = logging.getLogger(__name__)

KERNEL_DIR = Path(__file__).parent / "kernels"
FORMAT = "v2"
MAGIC = b"MIOPYBIN2\n"
# The payload of a marker entry: the program was built from this source before, and the driver keeps it.
MARKER = b"miopy marker: built from source; the driver's own cache keeps the binary\n"
HEADER_BYTES = len(MAGIC) + 32  # magic, then SHA-256 of key + payload
LOCK_TIMEOUT_S = 120.0
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.M)


@dataclass(frozen=True)
class KernelSpec:
    """What to build: kernel file, kernel name, -D defines (sorted pairs) and extra build options."""

    file: str
    name: str
    defines: tuple[tuple[str, str], ...] = ()
    options: tuple[str, ...] = ()

    @classmethod
    def make(cls, file: str, name: str, defines: dict | None = None, options=()) -> KernelSpec:
        items = tuple(sorted((str(k), _define_value(v)) for k, v in (defines or {}).items()))
        return cls(file, name, items, tuple(options))

    def build_options(self) -> str:
        return " ".join([f"-D{k}={v}" for k, v in self.defines] + list(self.options))


def _define_value(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value) + "f"
    return str(value)


@functools.cache
def kernel_source(file: str) -> str:
    """The kernel file's text with every #include "x.h" inlined (recursively, once each)."""
    return _inline(file, set())


def _inline(file: str, seen: set[str]) -> str:
    if file in seen:
        return ""
    seen.add(file)
    try:
        text = (KERNEL_DIR / file).read_text()
    except OSError as exc:
        raise CompileError(f"kernel source {file} cannot be read: {exc}") from exc
    return _INCLUDE.sub(lambda m: _inline(m.group(1), seen), text)


def driver_caches_binaries(device: cl.Device) -> bool:
    """Whether device's driver keeps its own binary cache of programs built from source (PoCL)."""
    return "pocl" in device.version.lower() or "portable computing language" in device.platform.name.lower()


class KernelCache:
    """Per-context cache of built kernels; counts compiles, disk hits and memory hits.

    store_binaries: entries hold program binaries (True) or markers (False, a hit rebuilds from source
    through the driver's cache); None takes MIOPY_CACHE_BINARIES, else False where the driver caches
    binaries itself."""

    def __init__(self, context: cl.Context, device: cl.Device, device_id: str, store_binaries: bool | None = None):
        self.context, self.device, self.device_id = context, device, device_id
        if store_binaries is None:
            store_binaries = config.cache_binaries()
        self.store_binaries = not driver_caches_binaries(device) if store_binaries is None else store_binaries
        self._kind = "binary" if self.store_binaries else "marker"
        self._nvidia = "NVIDIA" in device.platform.name.upper()    # PTX binaries (miopy.ptx_patch)
        self._programs: dict[str, cl.Program] = {}
        self._kernels: dict[tuple[str, str], cl.Kernel] = {}
        self._keys: dict[KernelSpec, str] = {}
        self.stats = {"compiled": 0, "disk_hits": 0, "memory_hits": 0, "adopted": 0}
        self._lock = threading.RLock()
        self._locks: dict[str, threading.RLock] = {}

    def _program_lock(self, key: str) -> threading.RLock:
        """The lock of one program key (find compiles its candidates in threads: the driver's compiler runs
        with the GIL released, so distinct programs build in parallel)."""
        with self._lock:
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = threading.RLock()
            return lock

    def program_key(self, spec: KernelSpec) -> str:
        key = self._keys.get(spec)
        if key is None:
            key = self._keys[spec] = self._hash(spec)
        return key

    def _hash(self, spec: KernelSpec) -> str:
        h = hashlib.sha256()
        for part in (kernel_source(spec.file), spec.build_options(), self.device_id, __version__, FORMAT,
                     self._kind):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    def kernel(self, spec: KernelSpec) -> cl.Kernel:
        """The built kernel for spec: from memory, else disk, else a fresh compile."""
        key = self.program_key(spec)
        knl = self._kernels.get((key, spec.name))
        if knl is not None:
            self.stats["memory_hits"] += 1
            return knl
        with self._program_lock(key):   # threads build each program once, different programs at once
            knl = self._kernels.get((key, spec.name))
            if knl is not None:
                self.stats["memory_hits"] += 1
                return knl
            prg = self._programs.get(key)
            if prg is None:
                prg = self._load_or_build(key, spec)
                self._programs[key] = prg
            else:
                self.stats["memory_hits"] += 1
            try:
                knl = cl.Kernel(prg, spec.name)
            except cl.Error as exc:
                raise CompileError(f"{spec.file} has no kernel {spec.name}: {exc}") from exc
            self._kernels[(key, spec.name)] = knl
            return knl

    def is_built(self, spec: KernelSpec) -> bool:
        """Whether spec's program is in memory already (nothing to compile or load)."""
        return self.program_key(spec) in self._programs

    def new_kernel(self, spec: KernelSpec) -> cl.Kernel:
        """A kernel object of its own for spec (a plan sets its arguments once), from the cached program."""
        self.kernel(spec)
        prg = self._programs[self.program_key(spec)]
        return cl.Kernel(prg, spec.name)

    def warm(self, spec: KernelSpec) -> None:
        """Make sure spec's entry is in the disk cache, and with markers its binary in the driver's cache (used
        by parallel compile workers)."""
        self.kernel(spec)

    # -- binaries as values (parallel compile workers hand them back; no disk is shared) -------------------
    def binary(self, spec: KernelSpec) -> bytes:
        """The program binary of spec for this device, built (or found) first: what a compile worker sends back."""
        self.kernel(spec)
        binaries: Any = self._programs[self.program_key(spec)].get_info(cl.program_info.BINARIES)
        return bytes(binaries[0])

    def adopt(self, spec: KernelSpec, binary: bytes) -> bool:
        """Take spec's program from a binary built in another process (a compile worker): into memory, and into
        this cache's disk entry when entries hold binaries. False (nothing kept: a later kernel() builds it)
        when the binary does not load here or lacks spec's kernel."""
        key = self.program_key(spec)
        with self._program_lock(key):   # loads of different programs (a JIT on NVIDIA) run at once
            if key in self._programs:
                return True
            prg, fault = self._from_binary(binary, spec)
            if prg is None:
                logger.debug("a compile worker's binary of %s did not load: %s", spec.name, fault)
                return False
            self._programs[key] = prg
            with self._lock:
                self.stats["adopted"] += 1
        if self.store_binaries and not config.cache_disabled():
            self._store(key, binary)
        return True

    def _store(self, key: str, payload: bytes) -> None:
        """Write an entry built elsewhere, under its lock, unless a whole one is there (a miss is only slower)."""
        path = self._entry(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with filelock.FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S):
                try:
                    whole = entry_fault(path.read_bytes(), key) is None
                except OSError:
                    whole = False
                if not whole:
                    _remove_stale_temporaries(path)
                    self._write(path, key, payload)
        except (OSError, filelock.Timeout) as exc:
            _warn(f"is not usable ({_reason(exc)}); keeping compiled kernels in memory only")

    # -- disk level -------------------------------------------------------------------------------
    def _entry(self, key: str) -> Path:
        return config.cache_dir() / FORMAT / key[:2] / f"{key}.bin"

    def _load_or_build(self, key: str, spec: KernelSpec) -> cl.Program:
        if config.cache_disabled():
            return self._compile(spec)
        path = self._entry(key)
        prg = self._read(path, key, spec)
        if prg is not None:
            return prg
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            lock = filelock.FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S)
            lock.acquire()
        except (OSError, filelock.Timeout) as exc:
            _warn(f"is not usable ({_reason(exc)}); keeping compiled kernels in memory only")
            return self._compile(spec)
        try:
            prg = self._read(path, key, spec)  # another process may have written it meanwhile
            if prg is None:
                prg = self._compile(spec)
                _remove_stale_temporaries(path)
                self._write(path, key, self._payload(prg))
            return prg
        finally:
            lock.release()

    def _read(self, path: Path, key: str, spec: KernelSpec) -> cl.Program | None:
        """The program stored at path, or None (a miss) when it is absent, unreadable or not whole."""
        try:
            blob = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            _warn(f"cannot read entries ({_reason(exc)}); rebuilding them")
            return None
        fault = entry_fault(blob, key)
        prg = None
        if fault is None:
            prg, fault = self._load(blob[HEADER_BYTES:], spec)
        if fault is not None:
            _warn(f"found a bad entry ({fault}); rebuilding it")
            logger.debug("bad kernel cache entry %s: %s", path, fault)
            return None
        logger.debug("kernel cache disk hit %s (%s)", spec.name, path.name)
        self.stats["disk_hits"] += 1
        return prg

    def _load(self, payload: bytes, spec: KernelSpec) -> tuple[cl.Program | None, str | None]:
        """Build a program from a stored binary, or from source for a marker: (program, None), or (None, why
        the entry is unusable)."""
        if not self.store_binaries:
            if payload != MARKER:
                return None, "not a marker entry"
            return self._build_source(spec), None
        return self._from_binary(payload, spec)

    def _from_binary(self, payload: bytes, spec: KernelSpec) -> tuple[cl.Program | None, str | None]:
        try:
            prg = cl.Program(self.context, [self.device], [payload]).build(spec.build_options())
            names = prg.get_info(cl.program_info.KERNEL_NAMES).split(";")
        except Exception as exc:  # a binary this device or driver does not take
            return None, f"binary did not load: {type(exc).__name__}"
        if spec.name not in names:
            return None, f"binary lacks kernel {spec.name}"
        return prg, None

    def _payload(self, prg: cl.Program) -> bytes:
        """What an entry of prg holds: its binary, or the marker."""
        if not self.store_binaries:
            return MARKER
        binaries: Any = prg.get_info(cl.program_info.BINARIES)
        return bytes(binaries[0])

    def _write(self, path: Path, key: str, payload: bytes) -> None:
        if not payload:
            return
        try:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        except OSError as exc:
            _warn(f"cannot be written ({_reason(exc)}); keeping compiled kernels in memory only")
            return
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(wrap_entry(key, payload))
            os.replace(tmp, path)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            _warn(f"cannot be written ({_reason(exc)}); keeping compiled kernels in memory only")

    def _compile(self, spec: KernelSpec) -> cl.Program:
        logger.debug("kernel cache miss: compiling %s from %s", spec.name, spec.file)
        prg = self._build_source(spec)
        self.stats["compiled"] += 1
        return prg

    def _build_source(self, spec: KernelSpec) -> cl.Program:
        source = kernel_source(spec.file)
        try:
            prg = cl.Program(self.context, source).build(
                spec.build_options(), devices=[self.device], cache_dir=False)  # type: ignore[arg-type]
            if self._nvidia and ptx_patch.MARKER in source:
                prg = ptx_patch.rebuilt(prg, self.device, spec.build_options()) or prg
        except cl.Error as exc:
            raise CompileError(f"{spec.file}:{spec.name} with '{spec.build_options()}' failed to build:\n"
                               f"{exc}") from exc
        return prg


def wrap_entry(key: str, payload: bytes) -> bytes:
    """A disk entry: magic, SHA-256 of key and payload (so an entry copied under another key fails), payload."""
    return MAGIC + _digest(key, payload) + payload


def entry_fault(blob: bytes, key: str) -> str | None:
    """Why blob is not a whole entry for key, or None when its header and checksum are right."""
    if not blob.startswith(MAGIC):
        return "not a miopy cache entry"
    # One message for every cut: an entry cut inside its header reads like one cut in its payload.
    if len(blob) <= HEADER_BYTES or _digest(key, blob[HEADER_BYTES:]) != blob[len(MAGIC):HEADER_BYTES]:
        return "checksum mismatch: truncated, altered or stored under another key"
    return None


def _digest(key: str, payload: bytes) -> bytes:
    return hashlib.sha256(key.encode() + b"\0" + payload).digest()


def _remove_stale_temporaries(path: Path) -> None:
    """Delete temporary files of path's entry left by a killed writer (the caller holds the entry's lock,
    and writers write only under it, so no live process owns them)."""
    for stale in path.parent.glob(f".{path.stem}.*.tmp"):
        try:
            stale.unlink(missing_ok=True)
        except OSError:  # e.g. another user's file in a shared sticky directory: it only takes space
            continue
        logger.debug("removed a killed writer's temporary file %s", stale)


def _warn(what: str) -> None:
    """Warn once per message: messages name the cache directory and the kind of fault, never an entry."""
    warn_once(logger, f"kernel cache at {config.cache_dir()} {what}")


def _reason(exc: BaseException) -> str:
    """exc without the path it names, so one fault hitting many entries reads the same."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return type(exc).__name__
