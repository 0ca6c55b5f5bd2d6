"""Every convolution solver on uneven padding (begin != end along each axis, in both senses: ONNX's pads and
auto_pad SAME_*), every direction it implements, against float64 (tests/conformance.py); the 1x1 GEMMs read x
in place and refuse any padding, saying so."""
import pytest

from miopy.conv import registry
from miopy.conv.samples import UNEVEN, pose
from tests.conformance import check_solution
from tests.helpers import posed_for, skip_unless_runs_here

CASES = [(s, d) for s in registry.ALL for d in sorted(s.directions)]


@pytest.mark.parametrize("solver,direction", CASES, ids=[f"{s.id}-{d.name}" for s, d in CASES])
def test_uneven_padding_matches_reference(handle, solver, direction):
    skip_unless_runs_here(solver, handle.info)
    problems = [posed_for(solver, pose(direction, shape)) for shape in UNEVEN]
    applicable = [p for p in problems if solver.is_applicable(p, handle.info)]
    if solver.id in ("ConvGemm1x1", "ConvGemv1x1"):
        assert not applicable and "padding" in solver.not_applicable_reason(problems[-1], handle.info)
        return
    assert applicable, f"{solver.id} applies to none of the uneven {direction.name} problems"
    for i, problem in enumerate(applicable[:2]):   # the first two pad each axis unevenly both ways
        check_solution(handle, solver, problem, solver.default_params(problem, handle.info), seed=i)

