# NOTE: conv_mma.cl no longer has the WGMMA_PROBE hooks (issue 35); see docs/notes/tensor_core_defaults.md.
"""Where WGMMA kernels spend their time: each timed beside copies of itself with one part removed (probes).

    python3 benchmarks/wgmma_ab.py --out DIR [--layers vgg16-conv8,...] [--tiles t128,t64x128]

Per layer (forward, TF32 and fp16) and WGMMA tile: the kernel as it is, and built with WGMMA_PROBE (conv_mma.cl)
1 (no proxy fence), 2 (no copies in the main loop), 3 (no wgmma), 4 (one wgmma group left in flight; a race),
6 / 7 (no copies of B / A), beside the default mma.sync
params (probes 2, 3, 6, 7 there too). Kernel time from profiling events, median after warm-up; probes give wrong
sums and are not checked. Writes DIR/wgmma-ab.json.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from mma_variants import WG_PARAMS  # noqa: E402
from tensor_cores import SOLVER, buffers, make, set_layers, tensors  # noqa: E402

import miopy  # noqa: E402
from miopy.conv.problem import Direction  # noqa: E402
from miopy.plan import plan_of  # noqa: E402

TILES = {"t128": (128, 128, 2, 2), "t128-s3": (128, 128, 2, 3), "t64x128-s4": (64, 128, 1, 4),
         "t128x256": (128, 256, 2, 2), "t128x64-s4": (128, 64, 2, 4)}
PROBES = (0, 2, 3, 6, 7)


def probed(solution, probe: int):
    """The solution with WGMMA_PROBE=probe in its GEMM kernel."""
    if not probe:
        return solution
    define = ("WGMMA_PROBE", str(probe))
    launches = tuple(dataclasses.replace(launch, spec=dataclasses.replace(
        launch.spec, defines=tuple(sorted(launch.spec.defines + (define,)))))
        if launch.spec.name == "conv_mma" else launch for launch in solution.launches)
    return dataclasses.replace(solution, launches=launches)


def time_solution(handle, problem, solution, bufs, iters: int) -> float:
    plan = plan_of(handle, problem, solution)
    ws = handle.alloc(max(solution.workspace_bytes, 4))
    return handle.time_ms(lambda: plan.enqueue({**bufs, "workspace": ws}), warmup=2, iters=iters)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", default="vgg16-conv8,alexnet-conv5")
    ap.add_argument("--tiles", default=",".join(TILES))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--via-binary", action="store_true",
                    help="build every conv_mma program again from its own PTX (as WGMMA's are), unpatched")
    args = ap.parse_args()
    if args.via_binary:
        from miopy import ptx_patch
        ptx_patch.patch = lambda ptx: ptx
    handle = miopy.Handle()
    pool = set_layers("alexnet,vgg16,resnet50,boda")
    rows = []
    for name in args.layers.split(","):
        shape = next(s for s in pool if s[0] == name)
        for dtype in ("FP32", "FP16"):
            problem = make(Direction.FORWARD, dtype, shape)
            t = tensors(problem, 0)
            bufs = buffers(handle, t)
            default = SOLVER.default_params(problem, handle.info)
            row = {"layer": name, "dtype": dtype, "flops": problem.flops(), "default": {
                f"probe{p}": time_solution(handle, problem, probed(SOLVER.solution(problem, default), p), bufs,
                                           args.iters) for p in (0, 2, 3, 6, 7)}}
            for tile in args.tiles.split(","):
                m, n, wm, stages = TILES[tile]
                params = dict(default, **WG_PARAMS, M_BLK=m, N_BLK=n, WARPS_M=wm, WARPS_N=1, STAGES=stages)
                reason = SOLVER.invalid_reason(problem, params, handle.info)
                if reason:
                    row[tile] = {"invalid": reason}
                    continue
                row[tile] = {f"probe{p}": time_solution(handle, problem, probed(SOLVER.solution(problem, params), p),
                                                        bufs, args.iters) for p in PROBES}
            print(json.dumps(row), flush=True)
            rows.append(row)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "wgmma-ab.json").write_text(json.dumps({"device": handle.info.name, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
