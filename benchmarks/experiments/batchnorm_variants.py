"""Spatial batch-norm training variants on one device: every applicable solver (register-resident, one
work-group a channel, split) and the split's GROUP values (channels whose stages run back to back, so the
element-wise pass can re-read a group from the cache), at ResNet-50's sizes, with the copy bandwidth
measured in the same run. Ranking data for the heuristic and the split's default GROUP; PyTorch's times for
the same shapes are benchmarks.primitives's ("batchnorm train", "batchnorm bwd").

    python -m benchmarks.experiments.batchnorm_variants --batch 32 128 --out benchmarks/results/bn-variants-h100.json
    python -m benchmarks.experiments.batchnorm_variants --batch 2 --shrink 8 --iters 3      # CPU (PoCL) smoke run
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import miopy
from benchmarks import harness
from miopy import TensorDesc
from miopy.batchnorm import REGISTRY, BatchNormProblem, BnDirection, derive_bn_tensor_descriptor
from miopy.batchnorm.solvers.spatial_split import GROUP_GRID
from miopy.plan import Plan, operands

SHAPES = [(64, 112, 112), (256, 56, 56), (512, 28, 28), (2048, 7, 7)]   # ResNet-50's batch norms (C, H, W)
MAX_GROUPS = 64   # split variants of more launch groups than this are left out (hundreds of launches a call)
ONE, ZERO = np.float32(1), np.float32(0)
SCALARS = {BnDirection.FORWARD_TRAINING: {"alpha": ONE, "beta": ZERO, "epsilon": np.float32(1e-5),
                                          "factor": np.float32(0.1)},
           BnDirection.BACKWARD: {"alpha_data": ONE, "beta_data": ZERO, "alpha_param": ONE, "beta_param": ZERO,
                                  "epsilon": np.float32(1e-5)}}


def problem_of(direction: BnDirection, dims: tuple[int, ...]) -> BatchNormProblem:
    """Training forward with running and saved statistics, or the backward from saved ones (as networks run)."""
    x = TensorDesc("FP32", dims)
    backward = direction is BnDirection.BACKWARD
    return BatchNormProblem.create(direction, "spatial", x, x, derive_bn_tensor_descriptor(x, "spatial"),
                                   x if backward else None, not backward, True)


def candidates(problem: BatchNormProblem, info) -> list[tuple[str, dict]]:
    """(solver id, params): each applicable solver's defaults, and the split at every valid GROUP of at most
    MAX_GROUPS launch groups."""
    out = []
    for solver in REGISTRY.ALL:
        if not solver.is_applicable(problem, info):
            continue
        params = solver.default_params(problem, info)
        out.append((solver.id, params))
        if solver.id == "BatchNormSpatialSplit":
            out += [(solver.id, {**params, "GROUP": g}) for g in GROUP_GRID
                    if g and problem.x.c // g <= MAX_GROUPS and solver.is_valid(problem, {**params, "GROUP": g}, info)]
    return out


def time_variant(handle: miopy.Handle, problem: BatchNormProblem, solver_id: str, params: dict, warmup: int,
                 iters: int) -> float:
    solution = REGISTRY.get(solver_id).solution(problem, params)
    plan = Plan(handle, solution, operands(problem.tensors(), problem.outputs()), problem=problem)
    rng = np.random.default_rng(0)
    values = tuple(handle.to_device((rng.random(d.element_span) + 0.5).astype(np.float32))
                   for d in problem.tensors().values())
    scalars = SCALARS[problem.direction]
    return harness.device_ms(handle, lambda: plan.run_values(values, scalars=scalars), warmup=warmup, iters=iters)


def run(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, nargs="+", default=[32, 128])
    ap.add_argument("--shrink", type=int, default=1, help="divide spatial sizes by this (quick CPU runs)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    handle = miopy.Handle()
    copy_gbs = harness.copy_bandwidth_gbs(handle)
    print(f"device: {handle.info.name}; copy bandwidth {copy_gbs:.1f} GB/s")
    rows = []
    for n in a.batch:
        for c, h, w in SHAPES:
            dims = (n, c, max(h // a.shrink, 1), max(w // a.shrink, 1))
            for direction in (BnDirection.FORWARD_TRAINING, BnDirection.BACKWARD):
                problem = problem_of(direction, dims)
                nbytes = problem.x.nbytes * (3 if direction is BnDirection.BACKWARD else 2)
                for solver_id, params in candidates(problem, handle.info):
                    ms = time_variant(handle, problem, solver_id, params, a.warmup, a.iters)
                    gbs = nbytes / ms / 1e6
                    rows.append({"dims": list(dims), "direction": direction.name, "solver": solver_id,
                                 "params": params, "ms": ms, "gbs": gbs, "pct_copy": 100 * gbs / copy_gbs})
                    print(f"{'x'.join(map(str, dims)):18} {direction.name:17} {solver_id:26} {json.dumps(params):40} "
                          f"{ms:8.4f} ms {gbs:8.1f} GB/s {100 * gbs / copy_gbs:5.1f}%", flush=True)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        harness.write_json(a.out, harness.new_record(handle, copy_gbs=copy_gbs, rows=rows))
    return 0


if __name__ == "__main__":
    sys.exit(run())
