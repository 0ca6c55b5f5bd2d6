"""What ptxas says about ConvImplicitGemmMma's WGMMA kernels: registers, spills and wgmma serialisation warnings.

    python -m benchmarks.experiments.wgmma_ptxas --out DIR [--ptxas /usr/local/cuda/bin/ptxas]

For VGG-16 conv8 forward (TF32 and fp16) at a few WGMMA tiles: builds the kernel through miopy (so the PTX is the
patched one miopy loads), writes it to DIR/<name>.ptx and runs `ptxas -arch=sm_90a -v` on it; prints and writes
DIR/wgmma-ptxas.json. Needs NVIDIA's OpenCL on a Hopper GPU and a CUDA toolkit's ptxas.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import miopy
from benchmarks import harness
from benchmarks.mma_variants import WG_PARAMS
from benchmarks.tensor_cores import make, set_layers
from miopy.conv.problem import Direction
from miopy.conv.solvers.mma import ConvImplicitGemmMma

TILES = {"t128": (128, 128, 2), "t128x256": (128, 256, 2), "t64x128": (64, 128, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--ptxas", default=shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas")
    ap.add_argument("--layer", default="vgg16-conv8")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    handle = miopy.Handle()
    solver = ConvImplicitGemmMma()
    shape = next(s for s in set_layers("alexnet,vgg16,resnet50,boda") if s[0] == args.layer)
    results = []
    for dtype in ("FP32", "FP16"):
        problem = make(Direction.FORWARD, dtype, shape)
        base = solver.default_params(problem, handle.info)
        for name, (m, n, wm) in TILES.items():
            params = dict(base, **WG_PARAMS, M_BLK=m, N_BLK=n, WARPS_M=wm, WARPS_N=1, STAGES=2)
            entry = {"dtype": dtype, "tile": name, "params": params,
                     "invalid": solver.invalid_reason(problem, params, handle.info)}
            if entry["invalid"] is None:
                spec = next(launch.spec for launch in solver.solution(problem, params).launches
                            if launch.spec.name == "conv_mma")
                ptx = handle.kernels.binary(spec)
                path = out / f"{dtype}-{name}.ptx"
                path.write_bytes(ptx.rstrip(b"\0"))
                run = subprocess.run([args.ptxas, "-arch=sm_90a", "-v", str(path), "-o", str(path) + ".cubin"],
                                     capture_output=True, text=True)
                entry["ptxas"] = (run.stdout + run.stderr)[-4000:]
                entry["wgmma_lines"] = sum(1 for line in ptx.decode(errors="replace").splitlines()
                                           if "wgmma.mma_async" in line)
            print(json.dumps({k: v for k, v in entry.items() if k != "params"}, indent=1), flush=True)
            results.append(entry)
    harness.write_json(out / "wgmma-ptxas.json", harness.new_record(handle, rows=results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
