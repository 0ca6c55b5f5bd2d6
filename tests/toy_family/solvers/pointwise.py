"""SquarePointwise: one work-item per element."""
from __future__ import annotations

from pathlib import Path

from miopy.device import DeviceInfo, index_reason, work_group_reason
from miopy.kernel_cache import KernelSpec
from miopy.pointwise import pointwise_defines
from miopy.solver import KernelLaunch, Params, Solution, Solver, require_none, round_up

from ..problem import ROLES, Direction, SquareProblem

KERNEL = str(Path(__file__).parents[1] / "kernels" / "toy_square.cl")   # in-tree families: miopy/kernels/*.cl
PREFIX = {"x": "X", "y": "Y", "dx": "DX", "dy": "DY"}


class SquarePointwise(Solver[SquareProblem]):
    """y = scale * x^2 (or its gradient) with one work-item per element, any strides."""

    id = "ToySquarePointwise"
    algorithm = "pointwise"
    grid = {"WG": (64, 128, 256)}
    param_doc = {"WG": "work-group size"}

    def applicability(self, problem: SquareProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require_none(index_reason(*(t.element_span for t in problem.tensors().values())))

    def invalid_reason(self, problem: SquareProblem, params: Params, dev: DeviceInfo) -> str | None:
        return super().invalid_reason(problem, params, dev) or work_group_reason(dev, (params["WG"],))

    def default_params(self, problem: SquareProblem, dev: DeviceInfo) -> Params:
        return {"WG": 128}

    def solution(self, problem: SquareProblem, params: Params) -> Solution:
        tensors = {PREFIX[role]: desc for role, desc in problem.tensors().items()}
        x = problem.tensors()["x"]
        defines = {**pointwise_defines(x.dims, tensors), **x.dtype.defines}
        forward = problem.direction is Direction.FORWARD
        spec = KernelSpec.make(KERNEL, "square_fwd" if forward else "square_bwd", defines)
        wg = params["WG"]
        launch = KernelLaunch(spec, (round_up(x.element_count, wg),), (wg,), (*ROLES[problem.direction], "scale"))
        return Solution(self.id, dict(params), (launch,))
