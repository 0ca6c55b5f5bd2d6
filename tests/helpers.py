"""Shared test helpers: random problems, poisoned buffers, and a run-and-compare against the reference."""
from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pyopencl as cl
import pytest

from miopy.accuracy import max_error
from miopy.accuracy import tolerance as format_tolerance
from miopy.conv import reference
from miopy.conv.problem import OUTPUT_ROLE, ConvDesc, ConvProblem, Direction
from miopy.plan import plan_of
from miopy.tensor import TensorDesc

DEFAULT_TOLERANCE = 1e-4  # hybrid |a-e|/(1+|e|) of solvers that set no tolerance of their own


def posed_for(solver, problem: ConvProblem) -> ConvProblem:
    """problem as solver's tests pose it: tensor-core solvers see fp32 problems under math mode "tf32"."""
    if getattr(solver, "tensor_cores", False) and problem.math_mode != "tf32":
        return dataclasses.replace(problem, math_mode="tf32") if problem.dtype.value == "FP32" else problem
    return problem


def runs_here(solver, info) -> bool:
    """Whether a registry-wide test can run the solver's kernels on this device (Solver.runs_on)."""
    return solver.runs_on(info)


def skip_unless_runs_here(solver, info) -> None:
    """Skip a registry-wide test of a solver whose kernels cannot run on this device (see runs_here)."""
    if not runs_here(solver, info):
        pytest.skip(f"{solver.id} does not run on a {info.device_type} device of {info.platform}")


def conv_pool(direction, dtype: str = "FP32") -> list[ConvProblem]:
    """The convolution samples (miopy.conv.samples) of one direction, strict math mode."""
    from miopy.conv import samples
    from miopy.tensor import DataType
    return [p for p in samples.problems(DataType.of(dtype)) if p.direction is direction and p.math_mode == "strict"]


def make_problem(direction, n, c, h, w, k, r, s, pad=0, stride=1, dilation=1, groups=1,
                 dtype="FP32") -> ConvProblem:
    x = TensorDesc(dtype, (n, c, h, w))
    wd = TensorDesc(dtype, (k, c // groups, r, s))
    return ConvProblem.create(direction, x, wd, ConvDesc(pad, stride, dilation, groups))


def random_problem(rng: np.random.Generator, direction=Direction.FORWARD) -> ConvProblem:
    """A small random convolution (any pad / stride / dilation / groups) with a non-empty output."""
    from miopy.conv.samples import pose, random_shape
    return pose(direction, random_shape(rng))


def with_dtype(problem: ConvProblem, dtype: str) -> ConvProblem:
    """problem with every tensor of dtype (same dims, packed)."""
    x, w = (TensorDesc(dtype, d.dims) for d in (problem.x, problem.w))
    return ConvProblem.create(problem.direction, x, w, problem.conv)


def random_tensors(problem: ConvProblem, seed: int = 0) -> dict[str, np.ndarray]:
    """Random normal x, w, y in the problem's dtype (for FP16 the reference then sees the rounded values)."""
    rng = np.random.default_rng(seed)
    return {role: rng.standard_normal(desc.dims).astype(desc.dtype.numpy)
            for role, desc in (("x", problem.x), ("w", problem.w), ("y", problem.y))}


def expected(problem: ConvProblem, t: dict[str, np.ndarray]) -> np.ndarray:
    return reference.solve(problem, t)


def tolerance(solver, problem: ConvProblem) -> float:
    """The tests' bound: the solver's fp32 bound (else DEFAULT_TOLERANCE) plus the output's rounding to its
    dtype (2^-11 for FP16; see docs/guide/fp16.md)."""
    return format_tolerance(problem.dtype, 1, "strict", solver.tolerance or DEFAULT_TOLERANCE)


def run_solution(handle, solution, problem: ConvProblem, t: dict[str, np.ndarray], extra=None) -> np.ndarray:
    """Run solution with the output poisoned (NaN) first; returns the output role's host array."""
    out_role = OUTPUT_ROLE[problem.direction]
    host = dict(t)
    host[out_role] = np.full_like(t[out_role], np.nan)
    mf = cl.mem_flags
    bufs = {r: cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a) for r, a in host.items()}
    bufs["workspace"] = handle.alloc(max(solution.workspace_bytes, 4))
    if solution.workspace_bytes:
        poison = np.full(solution.workspace_bytes // 4, np.nan, np.float32)
        cl.enqueue_copy(handle.queue, bufs["workspace"], poison)
    bufs.update(extra or {})
    plan_of(handle, problem, solution).enqueue(bufs)
    out = np.empty_like(host[out_role])
    cl.enqueue_copy(handle.queue, out, bufs[out_role])
    handle.finish()
    return out


def check_solution(handle, solver, problem: ConvProblem, params, seed: int = 0) -> float:
    """Run solver with params on problem against the float64 reference; returns the error (asserts tol)."""
    t = random_tensors(problem, seed)
    got = run_solution(handle, solver.solution(problem, params), problem, t)
    err = max_error(got, expected(problem, t))
    tol = tolerance(solver, problem)
    assert err <= tol, f"{solver.id} {params} on {problem.key()}: error {err:.3g} > {tol}"
    return err


ROOT = Path(__file__).resolve().parents[1]


def load_script(path: str, name: str):
    """A script of examples/ imported as a module by its path (the benchmarks are a package, tested in
    benchmarks/tests/; tests/ imports none of them)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
