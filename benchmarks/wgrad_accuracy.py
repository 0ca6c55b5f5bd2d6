"""Backward-weights accuracy on a long reduction, on the default OpenCL device: every applicable solver (or
those named) with its default params against float64, in Boda's hybrid error |a-e|/(1+|e|) and relative to
the largest gradient. The default case is issue 16's: 16->32 channels, 3x3, pad 1, 1024x2048, N=2
(4.2 million terms per weight).

    python benchmarks/wgrad_accuracy.py --out benchmarks/results/pocl-wgrad-accuracy.json [--solvers A,B]
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import miopy  # noqa: E402
from miopy.conv import reference, registry  # noqa: E402
from miopy.conv.problem import OUTPUT_ROLE, ConvDesc, ConvProblem, Direction  # noqa: E402
from miopy.plan import solution_plan  # noqa: E402
from miopy.tensor import TensorDesc  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--shape", default="2,16,1024,2048,32", help="N,C,H,W,K (3x3, pad 1, stride 1)")
    ap.add_argument("--solvers", default="", help="comma-separated ids (default: every applicable one)")
    args = ap.parse_args(argv)
    import pyopencl as cl
    from crosscheck import float64_reference
    n, c, h, w, k = (int(v) for v in args.shape.split(","))
    problem = ConvProblem.create(Direction.BACKWARD_WEIGHTS, TensorDesc("FP32", (n, c, h, w)),
                                 TensorDesc("FP32", (k, c, 3, 3)), ConvDesc(1))
    handle = miopy.Handle()
    rng = np.random.default_rng(0)
    t = {r: rng.standard_normal(d.dims, dtype=np.float32) for r, d in (("x", problem.x), ("w", problem.w),
                                                                      ("y", problem.y))}
    exact = float64_reference(problem, t)
    mf = cl.mem_flags
    bufs = {r: cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a) for r, a in t.items()}
    ids = args.solvers.split(",") if args.solvers else [s.id for s in registry.ALL]
    result = {"device": handle.info.name, "problem": problem.key(), "reduction": problem.reduction_length(),
              "command": " ".join(sys.argv), "solvers": [],
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    for sid in ids:
        solver = registry.get(sid)
        if not solver.is_applicable(problem, handle.info):
            continue
        params = solver.default_params(problem, handle.info)
        prepared = solution_plan(handle, problem, sid, params)
        ws = handle.scratch("workspace", max(prepared.solution.workspace_bytes, 4))
        out = np.full(exact.shape, np.nan, np.float32)
        cl.enqueue_copy(handle.queue, bufs["w"], out)
        start = time.perf_counter()
        prepared.enqueue({**bufs, "workspace": ws})
        cl.enqueue_copy(handle.queue, out, bufs[OUTPUT_ROLE[problem.direction]])
        handle.finish()
        rec = {"solver": sid, "params": params, "hybrid_err": reference.max_error(out, exact),
               "rel_err": float(np.abs(out - exact).max() / np.abs(exact).max()),
               "seconds": time.perf_counter() - start}
        result["solvers"].append(rec)
        print(f"{sid:22s} hybrid {rec['hybrid_err']:.2e} relative {rec['rel_err']:.2e} {params}", flush=True)
        Path(args.out).write_text(json.dumps(result, indent=1))
    Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
