"""One conformance test over the registry: every solver, every direction it claims, against float64.

For each solver the pool of problems below is filtered by its applicability; each solver-direction pair
must find at least one problem (so a registered solver is tested the moment it is registered). Default
params must be valid and match the reference; tunable solvers also check a random sample of valid grid
points, and invalid points must be rejected by is_valid without compiling.
"""
import numpy as np
import pytest

from miopy.conv import registry
from miopy.conv.problem import Direction
from tests.helpers import (
    check_solution,
    make_problem,
    posed_for,
    random_problem,
    runs_here,
    skip_unless_runs_here,
    with_dtype,
)

SHAPES = [  # (n, c, h, w, k, r, s, pad, stride, dilation, groups): structured cases every family can claim
    (2, 8, 10, 10, 8, 3, 3, 1, 1, 1, 1),
    (2, 16, 9, 11, 12, 3, 3, 0, 1, 1, 1),
    (1, 6, 12, 12, 10, 3, 3, 2, 1, 1, 1),
    (2, 8, 9, 9, 16, 1, 1, 0, 1, 1, 1),
    (2, 12, 9, 9, 8, 1, 1, 0, 2, 1, 1),
    (2, 8, 11, 11, 8, 5, 5, 2, 1, 1, 1),
    (1, 8, 12, 12, 8, 3, 3, 1, 2, 1, 2),
    (2, 6, 13, 13, 4, 3, 3, 2, 1, 2, 1),
    (2, 8, 8, 8, 8, 3, 3, 1, 1, 1, 4),
    (1, 3, 23, 23, 8, 7, 7, 0, 4, 1, 1),
    (33, 72, 1, 1, 13, 1, 1, 0, 1, 1, 1),  # a classifier (fully connected): ConvGemv1x1's image groups, staged
    (3, 40, 1, 1, 9, 1, 1, 0, 1, 1, 1),   # ... and at small batch (its matrix-vector form)
    (2, 8, 10, 9, 8, 3, 3, 1, 1, 1, 8),   # depthwise (MobileNet)
    (1, 4, 11, 9, 8, 5, 5, 2, 2, 1, 4),   # depthwise with a channel multiplier of 2, stride 2
]


def pool(direction: Direction) -> list:
    rng = np.random.default_rng(1234 + int(direction))
    return [make_problem(direction, *shape) for shape in SHAPES] + [random_problem(rng, direction) for _ in range(6)]


CASES = [(s, d) for s in registry.ALL for d in sorted(s.directions)]


@pytest.mark.parametrize("solver,direction", CASES, ids=[f"{s.id}-{d.name}" for s, d in CASES])
def test_default_params_match_reference(handle, solver, direction):
    skip_unless_runs_here(solver, handle.info)
    problems = [q for q in (posed_for(solver, p) for p in pool(direction)) if solver.is_applicable(q, handle.info)]
    assert problems, f"{solver.id} applies to none of the pool's {direction.name} problems"
    for i, problem in enumerate(problems[:5]):
        params = solver.default_params(problem, handle.info)
        assert solver.is_valid(problem, params, handle.info), solver.invalid_reason(problem, params, handle.info)
        check_solution(handle, solver, problem, params, seed=i)


TUNABLE = [(s, d) for s, d in CASES if s.grid]


@pytest.mark.parametrize("solver,direction", TUNABLE, ids=[f"{s.id}-{d.name}" for s, d in TUNABLE])
def test_sampled_grid_points_match_reference(handle, solver, direction):
    skip_unless_runs_here(solver, handle.info)
    problem = next(q for q in (posed_for(solver, p) for p in pool(direction)) if solver.is_applicable(q, handle.info))
    space = solver.sample_space(problem, handle.info, count=3, seed=7)
    assert space
    for params in space:
        check_solution(handle, solver, problem, params)


@pytest.mark.parametrize("solver", [s for s in registry.ALL if s.grid], ids=lambda s: s.id)
def test_invalid_points_rejected_without_compiling(handle, solver):
    skip_unless_runs_here(solver, handle.info)
    problem = next(q for q in (posed_for(solver, p) for d in Direction for p in pool(d))
                   if solver.is_applicable(q, handle.info))
    before = handle.cache_stats()["compiled"]
    bad = {name: values[0] for name, values in solver.grid.items()}
    bad[next(iter(bad))] = "not-a-grid-value"
    assert not solver.is_valid(problem, bad, handle.info)
    assert not solver.is_valid(problem, {}, handle.info)
    assert handle.cache_stats()["compiled"] == before


def test_solution_is_pure(handle):
    """solution() touches no device: same inputs, equal outputs, no compile."""
    before = handle.cache_stats()["compiled"]
    for solver in registry.ALL:
        if not runs_here(solver, handle.info):
            continue   # tests/solvers/test_mma.py, test_cpu_*.py: pure on a described device
        problem = next(q for q in (posed_for(solver, p) for d in Direction for p in pool(d))
                       if solver.is_applicable(q, handle.info))
        params = solver.default_params(problem, handle.info)
        assert solver.solution(problem, params) == solver.solution(problem, params)
    assert handle.cache_stats()["compiled"] == before


ASYMMETRIC = [  # begin != end padding along each axis, in both senses (ONNX pads, auto_pad SAME_*)
    (2, 6, 9, 11, 8, 3, 3, (2, 0, 1, 2), 1, 1, 1),
    (1, 6, 14, 14, 8, 3, 3, (0, 1, 0, 1), 2, 1, 1),   # MIOpen's --pad_mode same: 14x14, 3x3, stride 2
    (2, 8, 10, 10, 8, 3, 3, (0, 1, 0, 1), 1, 1, 1),
    (2, 4, 9, 9, 6, 5, 5, (3, 1, 0, 2), 1, 1, 1),
    (1, 4, 11, 10, 4, 3, 3, (1, 0, 2, 0), (2, 1), 2, 2),
    (1, 4, 12, 12, 6, 3, 3, (1, 2, 2, 1), 2, 1, 1),
    (2, 6, 9, 10, 6, 3, 3, (2, 0, 1, 2), 1, 1, 6),    # depthwise
    (1, 4, 10, 9, 8, 3, 3, (0, 1, 1, 0), 2, 1, 4),    # depthwise, channel multiplier 2, stride 2
    (2, 6, 8, 8, 4, 1, 1, (1, 0, 0, 1), 1, 1, 1),
]


@pytest.mark.parametrize("solver,direction", CASES, ids=[f"{s.id}-{d.name}" for s, d in CASES])
def test_asymmetric_padding_matches_reference(handle, solver, direction):
    skip_unless_runs_here(solver, handle.info)
    problems = [posed_for(solver, make_problem(direction, *shape)) for shape in ASYMMETRIC]
    applicable = [p for p in problems if solver.is_applicable(p, handle.info)]
    if solver.id in ("ConvGemm1x1", "ConvGemv1x1"):   # 1x1 GEMMs read x in place: any padding rules them out
        assert not applicable and "padding" in solver.not_applicable_reason(problems[-1], handle.info)
        return
    assert applicable, f"{solver.id} applies to none of the asymmetric {direction.name} problems"
    for i, problem in enumerate(applicable[:2]):   # the first two pad each axis unevenly both ways
        check_solution(handle, solver, problem, solver.default_params(problem, handle.info), seed=i)


FP16_PER_CASE = 2   # problems per solver-direction in FP16: a sample, so CI grows by about a minute


@pytest.mark.parametrize("solver,direction", CASES, ids=[f"{s.id}-{d.name}" for s, d in CASES])
def test_fp16_matches_reference(handle, solver, direction):
    """FP16 (half storage, fp32 sums) through every solver and direction: a seeded sample of the pool, in
    FP16, against float64 computed from the rounded inputs, at the FP16 bound (tests.helpers.tolerance)."""
    skip_unless_runs_here(solver, handle.info)
    problems = [with_dtype(p, "FP16") for p in pool(direction)]
    applicable = [p for p in problems if solver.is_applicable(p, handle.info)]
    assert applicable, f"{solver.id} applies to none of the pool's FP16 {direction.name} problems"
    rng = np.random.default_rng(sum(map(ord, solver.id)) + int(direction))
    for i in sorted(rng.choice(len(applicable), min(FP16_PER_CASE, len(applicable)), replace=False)):
        problem = applicable[i]
        check_solution(handle, solver, problem, solver.default_params(problem, handle.info), seed=int(i))
