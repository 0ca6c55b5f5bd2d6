"""One conformance test over every registry of every family (miopy.families): every solver, every direction
and dtype it claims, against its family's float64 reference with poisoned outputs and a guarded workspace of
exactly the declared size (tests/conformance.py).

Problems come from each family's samples module, filtered by the solver's applicability: each claimed
(direction, dtype) must find at least one, so a registered solver is tested the moment it is registered.
Default params must be valid and match the reference; tunable solvers also check a random sample of valid grid
points, and invalid points must be rejected without compiling. Solvers whose kernels cannot run on this device
(Solver.runs_on: tensor cores off NVIDIA, CPU solvers on a GPU) are skipped here and covered where they run.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

from miopy.families import FAMILIES
from miopy.tensor import DataType
from tests.conformance import check_solution

PER_CASE = {DataType.FLOAT32: 5, DataType.FLOAT16: 2}   # problems per solver, direction and dtype (a sample)


@functools.cache
def samples(family_name: str, dtype: DataType) -> tuple:
    family = next(f for f in FAMILIES if f.name == family_name)
    return tuple(family.module("samples").problems(dtype))


def _cases():
    """(family, solver, dtype, direction or None): None where the solver claims no directions of its own."""
    for family in FAMILIES:
        for solver in family.registry.ALL:
            for dtype in sorted(solver.dtypes, key=lambda d: d.value):
                claimed = solver.directions
                for direction in sorted(claimed, key=lambda d: d.name) if claimed is not None else [None]:
                    yield family, solver, dtype, direction


CASES = list(_cases())
IDS = [f"{f.name}-{s.id}-{t.value}" + (f"-{d.name}" if d is not None else "") for f, s, t, d in CASES]


def applicable(handle, family, solver, dtype, direction) -> list:
    if not solver.runs_on(handle.info):
        pytest.skip(f"{solver.id} does not run on a {handle.info.device_type} device of {handle.info.platform}")
    pool = samples(family.name, dtype)
    found = [p for p in pool
             if (direction is None or p.direction == direction) and solver.is_applicable(p, handle.info)]
    assert found, f"{solver.id} applies to none of {family.name}'s {dtype.value} samples" + \
        (f" in direction {direction.name}" if direction is not None else "")
    return found


def chosen(solver, problems: list, count: int, salt: int) -> list:
    """A seeded sample of count problems (all when fewer), in pool order."""
    rng = np.random.default_rng(sum(map(ord, solver.id)) + salt)
    picks = sorted(rng.choice(len(problems), min(count, len(problems)), replace=False))
    return [problems[i] for i in picks]


@pytest.mark.parametrize("family,solver,dtype,direction", CASES, ids=IDS)
def test_default_params_match_reference(handle, family, solver, dtype, direction):
    problems = applicable(handle, family, solver, dtype, direction)
    salt = sum(map(ord, direction.name)) if direction is not None else 0
    for i, problem in enumerate(chosen(solver, problems, PER_CASE[dtype], salt)):
        params = solver.default_params(problem, handle.info)
        assert solver.is_valid(problem, params, handle.info), solver.invalid_reason(problem, params, handle.info)
        check_solution(handle, solver, problem, params, seed=i)


TUNABLE = [(c, i) for c, i in zip(CASES, IDS) if c[1].grid and c[2] is DataType.FLOAT32]


@pytest.mark.parametrize("family,solver,dtype,direction", [c for c, _ in TUNABLE], ids=[i for _, i in TUNABLE])
def test_sampled_grid_points_match_reference(handle, family, solver, dtype, direction):
    problem = applicable(handle, family, solver, dtype, direction)[0]
    space = solver.sample_space(problem, handle.info, count=3, seed=7)
    assert space, f"{solver.id} has no valid grid point on {problem.key()}"
    for params in space:
        check_solution(handle, solver, problem, params)


TUNABLE_SOLVERS = [(f, s) for f in FAMILIES for s in f.registry.ALL if s.grid]


@pytest.mark.parametrize("family,solver", TUNABLE_SOLVERS, ids=[s.id for _, s in TUNABLE_SOLVERS])
def test_invalid_points_rejected_without_compiling(handle, family, solver):
    dtype = DataType.FLOAT32 if DataType.FLOAT32 in solver.dtypes else next(iter(solver.dtypes))
    problem = applicable(handle, family, solver, dtype, None)[0]
    before = handle.cache_stats()["compiled"]
    bad = {name: values[0] for name, values in solver.grid.items()}
    bad[next(iter(bad))] = "not-a-grid-value"
    assert not solver.is_valid(problem, bad, handle.info)
    assert not solver.is_valid(problem, {}, handle.info)
    assert handle.cache_stats()["compiled"] == before


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_solution_is_pure(handle, family):
    """solution() touches no device: same inputs, equal outputs, no compile."""
    before = handle.cache_stats()["compiled"]
    for solver in family.registry.ALL:
        if not solver.runs_on(handle.info):
            continue   # tests/solvers/test_mma.py, test_cpu_*.py: pure on a described device
        dtype = DataType.FLOAT32 if DataType.FLOAT32 in solver.dtypes else next(iter(solver.dtypes))
        problem = applicable(handle, family, solver, dtype, None)[0]
        params = solver.default_params(problem, handle.info)
        assert solver.solution(problem, params) == solver.solution(problem, params)
    assert handle.cache_stats()["compiled"] == before


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_samples_pose_every_direction_in_every_dtype(family):
    """A family's samples cover each of its directions in FP32 and FP16 (so every claim can be checked), and
    problems_on poses every direction on a given tensor."""
    for dtype in (DataType.FLOAT32, DataType.FLOAT16):
        pool = samples(family.name, dtype)
        directions = {p.direction for p in pool}
        assert directions == set(type(next(iter(directions)))), (family.name, dtype, directions)
        assert all(p.dtype is dtype for p in pool)
