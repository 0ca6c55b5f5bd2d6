"""Where ConvFFT's time goes: each launch (the two forward FFTs, the per-frequency GEMM, the inverse FFT)
timed alone with OpenCL profiling events on the 5x5 layers of issue 16, with the driver's private
(spilled) memory per kernel, against the bytes each stage must move.

    python -m benchmarks.experiments.fft_stages [--iters 20] [--out FILE.json] [--sweep N] [--wg 64,256] [--small 0]
"""
from __future__ import annotations

import argparse

import numpy as np
import pyopencl as cl

import miopy
from benchmarks import harness
from miopy.conv.problem import ConvDesc, ConvProblem, Direction
from miopy.conv.solvers import fft
from miopy.conv.solvers.fft import ConvFFT, FFTLayout
from miopy.plan import plan_of
from miopy.tensor import TensorDesc

LAYERS = [("alexnet-v2.conv2", 128, 64, 27, 192), ("alexnet.conv2", 128, 96, 27, 256),
          ("googlenet.5x5", 128, 48, 7, 128)]
STAGES = ("fft A", "fft B", "gemm", "inverse")


def stage_bytes(layout: FFTLayout, problem: ConvProblem) -> list[int]:
    """Bytes each launch must read and write at least (fp32 tensors)."""
    el = {"x": problem.x.element_count, "w": problem.w.element_count, "y": problem.y.element_count}
    m, n, k = layout.gemm
    f, c = layout.freqs, 4
    a, b, out = layout.a.floats(f), layout.b.floats(f), 2 * f * m * n
    return [c * (el[layout.a.role] + a), c * (el[layout.b.role] + b), c * (a + b + out),
            c * (out + el[layout.out.role])]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--out", default="")
    ap.add_argument("--sweep", type=int, default=0, help="also time this many sampled GEMM tilings per layer")
    ap.add_argument("--wg", default="", help="comma-separated transform work-group sizes to try beside the default")
    ap.add_argument("--small", default="", help="comma-separated SMALL_EXTENT values (largest plane side that "
                    "takes the direct DFT; 0: none) to try beside the default")
    ap.add_argument("--const", default="", help="comma-separated NAME=INT module constants of fft.py to try beside "
                    "the default, with every tiling timed")
    ap.add_argument("--tilings", default="", help="semicolon-separated TILE_M,TILE_N,WORK_M,WORK_N,K_BLK to time "
                    "beside the default")
    args = ap.parse_args(argv)
    handle = miopy.Handle()
    solver, rows = ConvFFT(), []
    for name, n, c, hw, k in LAYERS:
        for direction in (Direction.FORWARD, Direction.BACKWARD_DATA, Direction.BACKWARD_WEIGHTS):
            x, w = TensorDesc("FP32", (n, c, hw, hw)), TensorDesc("FP32", (k, c, 5, 5))
            problem = ConvProblem.create(direction, x, w, ConvDesc(2, 1, 1, 1))
            default = solver.default_params(problem, handle.info)
            sampled = [p for p in solver.sample_space(problem, handle.info, args.sweep, seed=3) if p != default]
            sampled += [p for p in (_tiling(t) for t in args.tilings.split(";") if t) if p != default]
            for params in (default, *sampled):
                rows.append(measure(handle, solver, name, problem, params, args.iters, params is default))
            variants = [("TRANSFORM_WG", int(v)) for v in args.wg.split(",") if v]
            variants += [("SMALL_EXTENT", int(v)) for v in args.small.split(",") if v]
            variants += [(c.split("=")[0], int(c.split("=")[1])) for c in args.const.split(",") if c]
            for attr, value in variants:   # a module constant of fft.py changed for these measurements
                standard = getattr(fft, attr)
                setattr(fft, attr, value)
                try:
                    for params in (default, *(sampled if args.const else ())):
                        rows.append({**measure(handle, solver, name, problem, params, args.iters, False),
                                     attr.lower(): value})
                except Exception as exc:   # noqa: BLE001 - a size the device refuses is data
                    print(f"{name} {direction.letter} {attr} {value}: {type(exc).__name__}: {str(exc)[:200]}")
                finally:
                    setattr(fft, attr, standard)
    harness.write_json(args.out, harness.new_record(handle, rows=rows))
    return 0


def _tiling(text: str) -> dict:
    return dict(zip(("TILE_M", "TILE_N", "WORK_M", "WORK_N", "K_BLK"), map(int, text.split(","))))


def measure(handle, solver, name, problem, params, iters, default) -> dict:
    """Median time of each launch of one ConvFFT solution, with the bytes it moves and the GEMM's rate."""
    prepared = plan_of(handle, problem, solver.solution(problem, params))   # not memoised: --wg changes kernels
    rng = np.random.default_rng(0)
    bufs = {r: cl.Buffer(handle.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                         hostbuf=rng.standard_normal(d.dims, dtype=np.float32))
            for r, d in (("x", problem.x), ("w", problem.w), ("y", problem.y))}
    bufs["workspace"] = handle.scratch("workspace", prepared.solution.workspace_bytes)
    for _ in range(2):
        prepared.enqueue(bufs)
    ms = harness.launch_ms(handle, lambda: prepared.enqueue(bufs), runs=iters)
    layout = FFTLayout.of(problem)
    info = cl.kernel_work_group_info
    private = [handle.kernels.kernel(launch.spec).get_work_group_info(info.PRIVATE_MEM_SIZE, handle.device)
               for launch in prepared.solution.launches]
    moved = stage_bytes(layout, problem)
    row = {"layer": name, "direction": problem.direction.letter, "params": params, "default": default,
           "L": layout.size, "kernels": [launch.spec.name for launch in prepared.solution.launches],
           "stage_ms": ms, "total_ms": sum(ms), "private_bytes": private,
           "stage_gbs": [b / t / 1e6 for b, t in zip(moved, ms)],
           # the complex GEMM counted as real multiply-adds, 4 per complex one (Gauss's form does 3)
           "gemm_tflops": 8 * layout.freqs * layout.gemm[0] * layout.gemm[1] * layout.gemm[2] / ms[2] / 1e9}
    print(f"{name:18s} {problem.direction.letter} L={layout.size} total {sum(ms):.3f} ms  "
          + "  ".join(f"{s} {t:.3f} ({g:.0f} GB/s, priv {p})" for s, t, g, p
                      in zip(STAGES, ms, row["stage_gbs"], private))
          + f"  gemm {row['gemm_tflops']:.1f} TFLOP/s  [{row['kernels'][0]}]"
          + ("" if default else f"  {params}"), flush=True)
    return row


if __name__ == "__main__":
    raise SystemExit(main())
