"""PoolingGlobalAverage: the mean of each (n, c) plane by a work-group reduction."""
from __future__ import annotations

from ...device import INT_LIMIT, DeviceInfo, index_reason, local_memory_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, Solver, require, require_none
from ...tensor import FLOAT_BYTES, DataType
from ..problem import Direction, PoolingProblem
from .common import strides


class PoolingGlobalAverage(Solver[PoolingProblem]):
    """Global average pooling forward (adaptive_avg_pool2d to 1x1, ONNX GlobalAveragePool): one work-group
    per (n, c) plane, a strided coalesced read of the plane and a tree reduction in local memory.

    Applies when an average window covers the whole unpadded input (output 1x1). It reads each plane with
    consecutive work-items on consecutive elements, where the windowed solver gives one work-item a whole
    plane. The backward is an even spread, which the windowed solver does.
    """

    id = "PoolingGlobalAverage"
    algorithm = "reduction"
    dtypes = frozenset({DataType.FLOAT32, DataType.FLOAT16})
    grid = {"WG": (32, 64, 128, 256)}
    param_doc = {"WG": "work-items per (n, c) plane (a power of two)"}

    def applicability(self, problem: PoolingProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        d = problem.desc
        require(problem.direction is Direction.FORWARD, "forward only")
        require(not d.is_max, "average modes only")
        require(d.window == (problem.x.h, problem.x.w) and not any(d.pads), "window is not the whole unpadded input")
        require(problem.x.n * problem.x.c < INT_LIMIT, "more than 2^31 planes")
        require_none(index_reason(problem.x.element_span, problem.y.element_span))

    def invalid_reason(self, problem: PoolingProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason:
            return reason
        return work_group_reason(dev, (params["WG"],)) or local_memory_reason(dev, params["WG"] * FLOAT_BYTES)

    def default_params(self, problem: PoolingProblem, dev: DeviceInfo) -> Params:
        """The smallest work-group that gives each work-item at most a few elements (32 to 256)."""
        plane = problem.x.h * problem.x.w
        wg = 32
        while wg < 256 and wg * 4 < plane:
            wg *= 2
        return {"WG": wg}

    def solution(self, problem: PoolingProblem, params: Params) -> Solution:
        x = problem.x
        wg = params["WG"]
        defines = {"WG": wg, "C": x.c, "H": x.h, "W": x.w, **strides("X", x), **strides("Y", problem.y),
                   **problem.dtype.defines}
        spec = KernelSpec.make("pooling_global.cl", "pool_global_avg", defines)
        launch = KernelLaunch(spec, (x.n * x.c * wg,), (wg,), ("x", "y"))
        return Solution(self.id, dict(params), (launch,))
