"""Whether NVIDIA's OpenCL runs Hopper's wgmma when the PTX it emitted is patched (probe, one device call).

    python -m benchmarks.experiments.wgmma_probe --out DIR

NVIDIA's OpenCL compiles kernels to PTX for `.target sm_90`, where ptxas refuses wgmma ("not supported on
.target 'sm_90'"). Its program binaries are that PTX, and a program can be created from a binary. So: write
the wgmma instructions as PTX comments `//@...` inside inline asm (the front end passes the text through with
its operands replaced by registers, and ptxas ignores comments), take the PTX, make the comments live and the
target sm_90a, and load the result as a binary. This script checks each step and, where it gets that far,
multiplies small matrices through wgmma from local memory (no-swizzle core-matrix layout) against float64,
for both ways of filling the descriptor's two byte offsets, TF32 (m64n16k8) and fp16 (m64n16k16).
Result: DIR/wgmma-probe.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl as cl

from benchmarks import harness
from miopy import ptx_patch

M, N = 64, 16


def source(half: bool, lbo: int, sbo: int, k_total: int) -> str:
    """One work-group of 128 (a warpgroup): A [M][K] and B [N][K] (both K-major) into local memory as 8-row x
    16-byte core matrices, core (row block i, k block j) at i*ROW + j*128 bytes (ROW: the bytes of one 8-row
    block over all k); D = A B^T from K/k wgmmas, the descriptors' byte offsets lbo and sbo."""
    elem = 2 if half else 4
    per_core = 16 // elem           # elements of k in one core matrix row
    row = k_total // per_core * 128
    k_step = 16 if half else 8
    shape = f"m64n{N}k{k_step}"
    kind = "f32.f16.f16" if half else "f32.tf32.tf32"
    tail = ", 0, 0" if half else ""
    t = "ushort" if half else "uint"

    def desc(base: str) -> str:
        return (f"(((ulong)(((uint)(size_t)({base})) & 0x3FFFF) >> 4) | ((ulong)({lbo} >> 4) << 16) "
                f"| ((ulong)({sbo} >> 4) << 32))")

    regs = ", ".join(f"%{i}" for i in range(N // 2))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(N // 2))
    steps = k_total // k_step
    return f"""
__kernel __attribute__((reqd_work_group_size(128, 1, 1)))
void probe(__global const {t}* a, __global const {t}* b, __global float* d_out)
{{
    __local {t} sa[{M * k_total}] __attribute__((aligned(128)));
    __local {t} sb[{N * k_total}] __attribute__((aligned(128)));
    const int tid = get_local_id(0);
    for (int i = tid; i < {M * k_total}; i += 128) {{
        int m = i / {k_total}, k = i % {k_total};
        sa[((m / 8) * {row} + (k / {per_core}) * 128 + (m % 8) * 16) / {elem} + k % {per_core}] = a[i];
    }}
    for (int i = tid; i < {N * k_total}; i += 128) {{
        int n = i / {k_total}, k = i % {k_total};
        sb[((n / 8) * {row} + (k / {per_core}) * 128 + (n % 8) * 16) / {elem} + k % {per_core}] = b[i];
    }}
    asm volatile("//@fence.proxy.async.shared::cta;" ::: "memory");
    barrier(CLK_LOCAL_MEM_FENCE);
    float d[{N // 2}];
    for (int i = 0; i < {N // 2}; ++i) d[i] = 0.0f;
    asm volatile("//@wgmma.fence.sync.aligned;" ::: "memory");
    for (int s = 0; s < {steps}; ++s) {{
        ulong da = {desc(f"sa + s * {k_step // per_core} * 128 / {elem}")};
        ulong db = {desc(f"sb + s * {k_step // per_core} * 128 / {elem}")};
        asm volatile("//@{{\\n"
                     "//@.reg .pred p;\\n"
                     "//@setp.ne.b32 p, %{N // 2 + 2}, 0;\\n"
                     "//@wgmma.mma_async.sync.aligned.{shape}.{kind} {{{regs}}}, "
                     "%{N // 2}, %{N // 2 + 1}, p, 1, 1{tail};\\n"
                     "//@}}"
                     : {outs} : "l"(da), "l"(db), "r"(1) : "memory");
    }}
    asm volatile("//@wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("//@wgmma.wait_group.sync.aligned 0;" ::: "memory");
    const int warp = tid / 32, lane = tid % 32, gid = lane / 4, tig = lane % 4;
    for (int j = 0; j < {N // 8}; ++j) {{
        int r = 16 * warp + gid, c = 8 * j + 2 * tig;
        d_out[r * {N} + c] = d[4 * j];
        d_out[r * {N} + c + 1] = d[4 * j + 1];
        d_out[(r + 8) * {N} + c] = d[4 * j + 2];
        d_out[(r + 8) * {N} + c + 1] = d[4 * j + 3];
    }}
}}
"""


def ptx_of(ctx: cl.Context, text: str) -> str:
    prg = cl.Program(ctx, text).build()
    return prg.get_info(cl.program_info.BINARIES)[0].decode(errors="replace")


def header(ptx: str) -> list[str]:
    return [line.strip() for line in ptx.splitlines() if line.strip().startswith((".version", ".target"))]


def run_case(ctx, queue, half: bool, lbo: int, sbo: int, k_total: int, rng) -> dict:
    case = {"dtype": "fp16" if half else "tf32", "lbo": lbo, "sbo": sbo, "k": k_total}
    text = source(half, lbo, sbo, k_total)
    try:
        ptx = ptx_of(ctx, text)
    except Exception as exc:  # noqa: BLE001 - the probe reports whatever failed
        case["front_end"] = str(exc)[:3000]
        return case
    case["ptx_header"] = header(ptx)
    patched = ptx_patch.patch(ptx) or ptx
    case["wgmma_lines"] = [line.strip() for line in patched.splitlines() if "wgmma" in line][:6]
    try:
        prg = cl.Program(ctx, [ctx.devices[0]], [patched.encode()]).build()
    except Exception as exc:  # noqa: BLE001
        case["jit"] = str(exc)[:3000]
        return case
    a = rng.uniform(-1, 1, (M, k_total)).astype(np.float32)
    b = rng.uniform(-1, 1, (N, k_total)).astype(np.float32)
    if half:
        a, b = a.astype(np.float16), b.astype(np.float16)
        da, db = a.view(np.uint16), b.view(np.uint16)
    else:
        da, db = a.view(np.uint32), b.view(np.uint32)
    mf = cl.mem_flags
    ba = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(da))
    bb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(db))
    out = np.full((M, N), np.nan, np.float32)
    bo = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=out)
    try:
        prg.probe(queue, (128,), (128,), ba, bb, bo)
        cl.enqueue_copy(queue, out, bo)
        queue.finish()
    except Exception as exc:  # noqa: BLE001
        case["run"] = str(exc)[:2000]
        return case
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    err = np.abs(out - ref)
    case["nan"] = int(np.isnan(out).sum())
    case["max_err"] = float(np.nanmax(err)) if not np.isnan(out).all() else None
    case["right"] = bool(case["nan"] == 0 and case["max_err"] < (2e-2 if half else 1e-2) * k_total ** 0.5)
    return case


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx)
    dev = ctx.devices[0]
    record = harness.new_record(None, driver=dev.driver_version, cases=[])
    record["meta"]["device"] = dev.name
    rng = np.random.default_rng(5)
    t0 = time.time()
    for half in (False, True):
        k_total = 32 if half else 16
        per_k = k_total // (8 if half else 4) * 128     # bytes of one 8-row block over all k
        for lbo, sbo in ((128, per_k), (per_k, 128)):
            case = run_case(ctx, queue, half, lbo, sbo, k_total, rng)
            print(json.dumps(case)[:1500], flush=True)
            record["cases"].append(case)
    record["elapsed_s"] = time.time() - t0
    harness.write_json(Path(args.out) / "wgmma-probe.json", record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
