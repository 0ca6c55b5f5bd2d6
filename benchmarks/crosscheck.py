"""Cross-check every applicable solver against a float64 reference on full-size layers (Boda style).

On a machine with PyTorch and CUDA the float64 reference is computed there (torch float64 convolution);
otherwise with miopy.reference on the host. Each solver runs with its find params (perf DB or default) on
the same random inputs, its output poisoned first.

    python benchmarks/crosscheck.py --sets alexnet --directions F,B,W
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from miopy import Handle  # noqa: E402
from miopy.conv import (  # noqa: E402
    networks,
    reference,
    registry,  # noqa: E402
)
from miopy.conv.problem import (
    OUTPUT_ROLE,  # noqa: E402
    Direction,  # noqa: E402
)
from miopy.errors import MiopyError  # noqa: E402
from miopy.find import params_for  # noqa: E402
from miopy.plan import solution_plan as prepared_solution  # noqa: E402

LETTERS = {"F": Direction.FORWARD, "B": Direction.BACKWARD_DATA, "W": Direction.BACKWARD_WEIGHTS}


def torch_call(problem, x, w, y):
    """A no-argument callable computing problem's direction with PyTorch on tensors x, w, y."""
    import torch
    c = problem.conv
    if problem.direction is Direction.FORWARD:
        return lambda: torch.nn.functional.conv2d(x, w, None, c.stride, c.pad, c.dilation, c.groups)
    mask = [problem.direction is Direction.BACKWARD_DATA, problem.direction is Direction.BACKWARD_WEIGHTS, False]
    return lambda: torch.ops.aten.convolution_backward(y, x, w, None, c.stride, c.pad, c.dilation, False, [0, 0],
                                                       c.groups, mask)[0 if mask[0] else 1]


def float64_reference(problem, t: dict) -> np.ndarray:
    """The exact result in float64: on the GPU through torch when it is there, else on the host."""
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError
    except ImportError:
        return reference.solve(problem, t)
    x, w, y = (torch.from_numpy(t[r].astype(np.float64)).cuda() for r in "xwy")
    return torch_call(problem, x, w, y)().cpu().numpy()


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
    import pyopencl as cl
    problem = layer.problem(n, direction)
    rng = np.random.default_rng(1)
    t = {r: rng.standard_normal(d.dims, dtype=np.float32) for r, d in (("x", problem.x), ("w", problem.w),
                                                                      ("y", problem.y))}
    mf = cl.mem_flags
    bufs = {r: cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a) for r, a in t.items()}
    expect = float64_reference(problem, t)
    rows = []
    for solver in registry.solvers():
        if not solver.is_applicable(problem, handle.info):
            continue
        try:
            err = reference.max_error(run(handle, solver, problem, t, bufs), expect)
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
