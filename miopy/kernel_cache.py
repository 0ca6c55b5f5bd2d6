"""Two-level kernel binary cache: memory, then disk, then compile.

A KernelSpec names a kernel file in miopy/kernels, a kernel name, -D defines and build options. Its
program key hashes the source with its includes inlined, the defines, the options, the device id and the
miopy version. Disk entries carry a SHA-256 of their payload: a corrupt or unloadable entry is a miss and
is rebuilt. Writes go to a temporary file renamed into place under a per-entry file lock, so concurrent
processes compile a program once and never see half a file. pyopencl's own cache is bypassed
(``cache_dir=False``) so only one copy of a binary is stored.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import filelock
import pyopencl as cl

from . import config
from .errors import CompileError
from .log import warn_once
from .version import __version__

logger = logging.getLogger(__name__)

KERNEL_DIR = Path(__file__).parent / "kernels"
FORMAT = "v1"
MAGIC = b"MIOPYBIN1\n"
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
    def make(cls, file: str, name: str, defines: dict | None = None, options=()) -> "KernelSpec":
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


@functools.lru_cache(maxsize=None)
def kernel_source(file: str) -> str:
    """The kernel file's text with every #include "x.h" inlined (recursively, once each)."""
    return _inline(file, set())


def _inline(file: str, seen: set[str]) -> str:
    if file in seen:
        return ""
    seen.add(file)
    text = (KERNEL_DIR / file).read_text()
    return _INCLUDE.sub(lambda m: _inline(m.group(1), seen), text)


class KernelCache:
    """Per-context cache of built kernels; counts compiles, disk hits and memory hits."""

    def __init__(self, context: cl.Context, device: cl.Device, device_id: str):
        self.context, self.device, self.device_id = context, device, device_id
        self._programs: dict[str, cl.Program] = {}
        self._kernels: dict[tuple[str, str], cl.Kernel] = {}
        self.stats = {"compiled": 0, "disk_hits": 0, "memory_hits": 0}

    def program_key(self, spec: KernelSpec) -> str:
        h = hashlib.sha256()
        for part in (kernel_source(spec.file), spec.build_options(), self.device_id, __version__, FORMAT):
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
        prg = self._programs.get(key)
        if prg is None:
            prg = self._load_or_build(key, spec)
            self._programs[key] = prg
        else:
            self.stats["memory_hits"] += 1
        knl = cl.Kernel(prg, spec.name)
        self._kernels[(key, spec.name)] = knl
        return knl

    def warm(self, spec: KernelSpec) -> None:
        """Make sure the binary for spec is in the disk cache (used by parallel compile workers)."""
        self.kernel(spec)

    # -- disk level -------------------------------------------------------------------------------
    def _entry(self, key: str) -> Path:
        return config.cache_dir() / FORMAT / key[:2] / f"{key}.bin"

    def _load_or_build(self, key: str, spec: KernelSpec) -> cl.Program:
        if config.cache_disabled():
            return self._compile(spec)
        path = self._entry(key)
        prg = self._read(path, spec)
        if prg is not None:
            return prg
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            lock = filelock.FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S)
            lock.acquire()
        except (OSError, filelock.Timeout) as exc:
            warn_once(logger, f"kernel cache at {config.cache_dir()} is not usable ({exc}); "
                              "keeping compiled kernels in memory only")
            return self._compile(spec)
        try:
            prg = self._read(path, spec)  # another process may have written it meanwhile
            if prg is None:
                prg = self._compile(spec)
                self._write(path, prg)
            return prg
        finally:
            lock.release()

    def _read(self, path: Path, spec: KernelSpec) -> cl.Program | None:
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            warn_once(logger, f"cannot read kernel cache entry {path}: {exc}")
            return None
        payload = _unwrap(blob)
        if payload is None:
            warn_once(logger, f"corrupt kernel cache entry {path}; rebuilding it")
            return None
        try:
            prg = cl.Program(self.context, [self.device], [payload]).build(spec.build_options())
        except Exception as exc:  # a binary for another device or driver: a miss
            warn_once(logger, f"kernel cache entry {path} did not load ({type(exc).__name__}); rebuilding it")
            return None
        logger.debug("kernel cache disk hit %s (%s)", spec.name, path.name)
        self.stats["disk_hits"] += 1
        return prg

    def _write(self, path: Path, prg: cl.Program) -> None:
        payload = bytes(prg.get_info(cl.program_info.BINARIES)[0])
        if not payload:
            return
        try:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        except OSError as exc:
            warn_once(logger, f"cannot write kernel cache entry in {path.parent}: {exc}")
            return
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, path)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            warn_once(logger, f"cannot write kernel cache entry {path}: {exc}")

    def _compile(self, spec: KernelSpec) -> cl.Program:
        logger.debug("kernel cache miss: compiling %s from %s", spec.name, spec.file)
        try:
            prg = cl.Program(self.context, kernel_source(spec.file)).build(
                spec.build_options(), devices=[self.device], cache_dir=False)
        except cl.Error as exc:
            raise CompileError(f"{spec.file}:{spec.name} with '{spec.build_options()}' failed to build:\n"
                               f"{exc}") from exc
        self.stats["compiled"] += 1
        return prg


def _unwrap(blob: bytes) -> bytes | None:
    """The payload of a cache entry, or None when the header or checksum is wrong."""
    head = len(MAGIC) + 32
    if len(blob) <= head or not blob.startswith(MAGIC):
        return None
    digest, payload = blob[len(MAGIC):head], blob[head:]
    return payload if hashlib.sha256(payload).digest() == digest else None
