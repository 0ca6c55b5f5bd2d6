"""Which PTX tensor-core instructions a device's OpenCL compiler accepts (inline asm mma.sync, cp.async).

Only NVIDIA's OpenCL compiles inline PTX. The probe builds one tiny kernel per instruction, once per device:
the answer is kept in memory and on disk (a JSON file in the kernel cache directory, keyed by the device
id, which names the driver version), so a process pays a compile only the first time a driver is seen. A
cache fault is a miss, logged once; any build failure means "not supported".
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

import pyopencl as cl

from . import config, ptx_patch

log = logging.getLogger(__name__)

FORMAT = 3   # 2: the cp_async probe joined the mma ones; 3: wgmma
# name -> the instruction a solver uses, in a kernel that must compile for the name to count as supported
_PROBES = {
    "tf32": ("uint a = as_uint(x[0]), t; asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(t) : \"f\"(x[0])); "
             "asm(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
             "{%8, %9}, {%10, %11, %12, %13};\" : \"=f\"(c0), \"=f\"(c1), \"=f\"(c2), \"=f\"(c3) : \"r\"(a), "
             "\"r\"(t), \"r\"(a), \"r\"(t), \"r\"(a), \"r\"(t), \"f\"(c0), \"f\"(c1), \"f\"(c2), \"f\"(c3));"),
    "f16": ("uint a = as_uint(x[0]); asm(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
            "{%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\" : \"=f\"(c0), \"=f\"(c1), \"=f\"(c2), "
            "\"=f\"(c3) : \"r\"(a), \"r\"(a), \"r\"(a), \"r\"(a), \"r\"(a), \"r\"(a), \"f\"(c0), \"f\"(c1), "
            "\"f\"(c2), \"f\"(c3));"),
    # CP_ASYNC's copies (kernels/mma_copy.h): 4-byte .ca and 16-byte .cg copies with a src-size (zero-fill), commit,
    # wait; the local address taken as mma_copy.h takes it (the probe kernel declares the local buffer `lds`)
    "cp_async": ("uint dst = (uint)(size_t)lds, n = x[5] > 0.0f ? 4u : 0u; "
                 "asm volatile(\"cp.async.ca.shared.global [%0], [%1], 4, %2;\" :: \"r\"(dst), "
                 "\"l\"((ulong)(x + 1)), \"r\"(n) : \"memory\"); "
                 "asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(dst + 16u), "
                 "\"l\"((ulong)(x + 4)), \"r\"(4u * n) : \"memory\"); "
                 "asm volatile(\"cp.async.commit_group;\" ::: \"memory\"); "
                 "asm volatile(\"cp.async.wait_group 0;\" ::: \"memory\"); barrier(CLK_LOCAL_MEM_FENCE); "
                 "c0 += lds[0] + lds[4]; c1 += lds[5];"),
    # Hopper's wgmma (sm_90a) through miopy.ptx_patch: the fence, an m64n8k8 TF32 wgmma from a descriptor,
    # commit and wait, as kernels/mma_wgmma.h writes them (compiled only: the descriptor's matrices are not there)
    "wgmma": ("ulong desc = (ulong)(((uint)(size_t)lds & 0x3FFFFu) >> 4) | (8ul << 16) | (16ul << 32); "
              "lds[0] = x[5]; asm volatile(\"//@fence.proxy.async.shared::cta;\" ::: \"memory\"); "
              "barrier(CLK_LOCAL_MEM_FENCE); asm volatile(\"//@wgmma.fence.sync.aligned;\" ::: \"memory\"); "
              "asm volatile(\"//@{\\n//@.reg .pred p;\\n//@setp.ne.b32 p, %6, 0;\\n"
              "//@wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0, %1, %2, %3}, %4, %5, p, 1, 1;\\n//@}\" "
              ": \"+f\"(c0), \"+f\"(c1), \"+f\"(c2), \"+f\"(c3) : \"l\"(desc), \"l\"(desc), \"r\"(1) : \"memory\"); "
              "asm volatile(\"//@wgmma.commit_group.sync.aligned;\" ::: \"memory\"); "
              "asm volatile(\"//@wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");"),
}
_MEMO: dict[str, tuple[str, ...]] = {}


def probe_source(name: str) -> str:
    """The probe kernel for one instruction family."""
    return ("__kernel void probe(__global float* x) { __local float lds[8] __attribute__((aligned(16))); "
            "float c0 = x[1], c1 = x[2], c2 = x[3], c3 = x[4]; "
            f"{_PROBES[name]} x[0] = c0 + c1 + c2 + c3; }}")


def supported_mma(device: cl.Device, device_id: str) -> tuple[str, ...]:
    """The instruction families whose probe kernel device compiles: "tf32" and "f16" (mma.sync), "cp_async",
    "wgmma" (Hopper, through miopy.ptx_patch); () off NVIDIA's OpenCL."""
    if "NVIDIA" not in device.platform.name.upper():
        return ()
    if device_id in _MEMO:
        return _MEMO[device_id]
    found = _read_disk(device_id)
    if found is None:
        found = tuple(name for name in _PROBES if _compiles(device, probe_source(name)))
        log.debug("PTX mma probe on %s: %s", device_id, found or "none")
        _write_disk(device_id, found)
    _MEMO[device_id] = found
    return found


def _compiles(device: cl.Device, source: str) -> bool:
    """Whether source builds for device; with `//@` instructions (miopy.ptx_patch), whether its patched PTX does."""
    try:
        prg = cl.Program(cl.Context([device]), source).build()
        if ptx_patch.MARKER in source and ptx_patch.rebuilt(prg, device) is None:
            log.debug("PTX probe: the PTX has no sm_90 target to patch")
            return False
    except (cl.Error, RuntimeError) as exc:
        log.debug("PTX mma probe failed to build: %s", str(exc).splitlines()[0] if str(exc) else exc)
        return False
    return True


def _path() -> Path:
    return config.cache_dir() / f"ptx_mma_probe.v{FORMAT}.json"


def _read_disk(device_id: str) -> tuple[str, ...] | None:
    try:
        entry = json.loads(_path().read_text()).get(device_id)
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(entry, list) or not all(name in _PROBES for name in entry):
        return None
    return tuple(entry)


def _write_disk(device_id: str, found: tuple[str, ...]) -> None:
    path = _path()
    try:
        try:
            table = json.loads(path.read_text())
            table = table if isinstance(table, dict) else {}
        except (OSError, ValueError):
            table = {}
        table[device_id] = list(found)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".ptx_mma_probe.", suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            json.dump(table, handle)
        os.replace(tmp, path)
    except OSError as exc:
        log.debug("PTX mma probe result not cached on disk: %s", exc)
