"""PoolingGlobalAverageBackward: the gradient of a global average, dy / (H x W) over each plane."""
from __future__ import annotations

from ...device import INT_LIMIT, DeviceInfo, index_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, Solver, require, require_none, round_up
from ...tensor import DataType
from ..problem import Direction, PoolingProblem
from .common import strides


class PoolingGlobalAverageBackward(Solver[PoolingProblem]):
    """Global average pooling backward: one work-item per element of dx writes its plane's dy / (H x W)
    (pooling_global_bwd.cl), consecutive work-items on consecutive pixels. Where it wins: everywhere it
    applies; PoolingWindowed finds the windows holding each element by index arithmetic instead. Applies to
    the backward of an average whose window covers the whole unpadded input (output 1x1)."""

    id = "PoolingGlobalAverageBackward"
    algorithm = "broadcast"
    dtypes = frozenset({DataType.FLOAT32, DataType.FLOAT16})
    grid = {"WG": (64, 128, 256)}
    param_doc = {"WG": "work-group size (1-D)"}

    def applicability(self, problem: PoolingProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        d, x = problem.desc, problem.x
        require(problem.direction is Direction.BACKWARD, "backward only")
        require(not d.is_max, "average modes only")
        require(d.window == (x.h, x.w) and not any(d.pads), "window is not the whole unpadded input")
        require(x.element_count < INT_LIMIT, "more than 2^31 elements")
        require_none(index_reason(x.element_span, problem.y.element_span))

    def invalid_reason(self, problem: PoolingProblem, params: Params, dev: DeviceInfo) -> str | None:
        return super().invalid_reason(problem, params, dev) or work_group_reason(dev, (params["WG"],))

    def default_params(self, problem: PoolingProblem, dev: DeviceInfo) -> Params:
        return {"WG": 256}

    def solution(self, problem: PoolingProblem, params: Params) -> Solution:
        x, wg = problem.x, params["WG"]
        defines = {"C": x.c, "H": x.h, "W": x.w, "COUNT": x.element_count, "X_PACKED": int(x.is_packed),
                   **strides("X", x), **strides("Y", problem.y), **problem.dtype.defines}
        spec = KernelSpec.make("pooling_global_bwd.cl", "pool_global_avg_bwd", defines)
        launch = KernelLaunch(spec, (round_up(x.element_count, wg),), (wg,), ("dx", "dy"))
        return Solution(self.id, dict(params), (launch,))
