"""Cross-check every applicable solver against a float64 reference on full-size layers (Boda style).

On a machine with PyTorch and CUDA the float64 reference is computed there (torch float64 convolution);
otherwise with miopy.reference on the host. Each solver runs with its find params (perf DB or default) on
the same random inputs, its output poisoned first.

    python -m benchmarks.crosscheck --sets alexnet --directions F,B,W
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from benchmarks import harness
from benchmarks.torch_conv import LETTERS, device_buffers, float64_reference
from miopy import Handle
from miopy.conv import networks, reference, registry
from miopy.conv.problem import OUTPUT_ROLE
from miopy.errors import MiopyError
from miopy.find import params_for
from miopy.plan import solution_plan as prepared_solution


def run(handle, solver, problem, t, bufs) -> np.ndarray:
    import pyopencl as cl
    params, _ = params_for(solver, problem, handle)
    prepared = prepared_solution(handle, problem, solver.id, params)
    role = OUTPUT_ROLE[problem.direction]
    cl.enqueue_copy(handle.queue, bufs[role], np.full(t[role].size, np.nan, np.float32))
    ws = handle.scratch("workspace", prepared.solution.workspace_bytes)
    prepared.enqueue({**bufs, "workspace": ws})
    out = np.empty_like(t[role])
    cl.enqueue_copy(handle.queue, out, bufs[role])
    handle.finish()
    return out


def check_layer(handle, layer, n, direction) -> list[tuple[str, float, float]]:
    problem = layer.problem(n, direction)
    rng = np.random.default_rng(1)
    t = {r: rng.standard_normal(d.dims, dtype=np.float32) for r, d in (("x", problem.x), ("w", problem.w),
                                                                      ("y", problem.y))}
    bufs = device_buffers(handle, t)
    expect = float64_reference(problem, t)
    rows = []
    for solver in registry.solvers():
        if not solver.is_applicable(problem, handle.info):
            continue
        try:
            err = harness.max_error(run(handle, solver, problem, t, bufs), expect)
        except MiopyError as exc:
            print(f"  {solver.id}: {type(exc).__name__}: {exc}")
            continue
        rows.append((solver.id, err, reference.tolerance(solver, problem)))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="alexnet")
    ap.add_argument("--directions", default="F,B,W")
    ap.add_argument("--batch", type=int, default=0, help="batch size (0: the set's default)")
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args(argv)
    handle, failures = Handle(), 0
    for set_name in args.sets.split(","):
        for layer in networks.layer_set(set_name)[: args.limit or None]:
            for letter in args.directions.split(","):
                n = args.batch or networks.DEFAULT_BATCH[set_name]
                for sid, err, tol in check_layer(handle, layer, n, LETTERS[letter]):
                    ok = err <= tol
                    failures += not ok
                    print(f"{set_name:9s} {layer.name:8s} {letter} n={n} {sid:22s} err {err:.2e} "
                          f"{'ok' if ok else 'FAILED'} (tol {tol:.0e})", flush=True)
    print(f"crosscheck: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
