"""Adding a family touches only its package, its kernels, its tests and one entry in miopy.families.FAMILIES.

A toy family (tests/toy_family: y = scale * x^2 and its gradient, written on the template that docs/design.md
describes, its kernel beside it) is added to the list here and nowhere else; then the conformance check passes
its solver, and the driver, miopy-tune, find, the descriptor API (its plans in the plan cache under its own key
space) and the functional form all run it.
"""
import numpy as np
import pytest

import miopy
from miopy import families
from miopy.cli import driver as driver_cli
from miopy.cli import tune as tune_cli
from miopy.families import Family
from miopy.find import find_problem, params_for
from miopy.tensor import DataType, TensorDesc
from tests.conformance import check_solution

TOY = Family("toy", package="tests.toy_family")
TEMPLATE = ("descriptor", "problem", "solvers", "registry", "reference", "api", "functional", "driver", "samples")


@pytest.fixture
def with_toy(monkeypatch):
    monkeypatch.setattr(families, "FAMILIES", (*families.FAMILIES, TOY))
    return TOY


def test_every_family_has_the_template_modules():
    for family in (*families.FAMILIES, TOY):
        for part in TEMPLATE:
            family.module(part)
        assert family.registry.family == family.name
        assert set(family.exports) <= set(family.module().__all__), family.name


def test_the_toy_solvers_conform(handle):
    """The conformance test's check, on the toy family's samples: defaults and every grid point."""
    samples = TOY.module("samples")
    for solver in TOY.registry.ALL:
        for i, problem in enumerate(samples.problems(DataType.FLOAT32)):
            check_solution(handle, solver, problem, solver.default_params(problem, handle.info), seed=i)
            for params in solver.search_space(problem, handle.info):
                check_solution(handle, solver, problem, params, seed=i)


def test_the_driver_runs_the_toy_command(with_toy, capsys):
    assert driver_cli.main(["toy", "-n", "2", "-c", "3", "-H", "4", "-W", "5", "-A", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "Forward Square Verifies OK" in out and "Backward Square Verifies OK" in out


def test_tune_and_find_take_the_toy(with_toy, fresh_dbs, handle, capsys):
    flags = ["toy", "-n", "2", "-c", "3", "-H", "4", "-W", "5", "-F", "1", "--budget", "3", "--jobs", "0"]
    assert tune_cli.main(flags) == 0
    assert "ToySquarePointwise" in capsys.readouterr().out
    problem = tune_cli.drivers()["toy"].problems(tune_cli.parser().parse_args(flags))[0]
    assert params_for(problem.registry.get("ToySquarePointwise"), problem, handle)[1] == "user perf DB"
    result = find_problem(handle, problem, timer=lambda h, plan, b: 1.0)
    assert result[0].solver_id == "ToySquarePointwise" and result.check == "float64 on the host"


def test_the_toy_calls_run_on_plans(with_toy, handle):
    api, functional = TOY.module("api"), TOY.module("functional")
    own = miopy.Handle(device=handle.device, context=handle.context)
    t = TensorDesc("FP32", (2, 3, 4, 5))
    x = np.random.default_rng(3).standard_normal(t.dims).astype(np.float32)
    xa, ya = own.to_device(x), own.empty(t.dims)
    for scale in (0.5, 2.0):   # the second call is warm: a new scale builds nothing
        api.square_forward(own, TOY.module("descriptor").SquareDesc(scale), t, xa, t, ya)
        assert np.allclose(ya.get(), scale * x * x, rtol=1e-6)
    assert [k[0] for k, _ in own.plans.entries("toy")] == ["toy.forward"]
    assert np.allclose(functional.square(xa, 3.0).get(), 3.0 * x * x, rtol=1e-6)
