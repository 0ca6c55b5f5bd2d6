"""PoolingGlobalAverageStaged: the mean of each small (n, c) plane, many planes per work-group through
local memory."""
from __future__ import annotations

from ...device import INT_LIMIT, DeviceInfo, index_reason, local_memory_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, Solver, ceil_div, require, require_none
from ...tensor import FLOAT_BYTES, DataType
from ..problem import Direction, PoolingProblem
from .common import strides

MAX_PLANE = 1024       # larger planes give PoolingGlobalAverage's one work-group per plane enough to read
DEFAULT_STAGE = 16384  # bytes of staged planes per work-group the default aims at (several groups per unit)


def row_pitch(plane: int) -> int:
    """A staged plane's local row pitch: its length made odd, so a team's rows start in different banks."""
    return plane | 1


class PoolingGlobalAverageStaged(Solver[PoolingProblem]):
    """Global average pooling forward on small planes (ResNet's 2048 x 7 x 7): each work-group reads PLANES
    consecutive (n, c) planes in one coalesced sweep into local memory, then a team of WG / PLANES work-items
    per plane sums it in a fixed order (deterministic).

    Where it wins: planes of a few dozen elements, which give PoolingGlobalAverage's work-group per plane
    only one or two loads per work-item and a tree reduction each. Applies where an average window covers the
    whole unpadded input (output 1x1) and a plane has at most MAX_PLANE elements; forward only.
    """

    id = "PoolingGlobalAverageStaged"
    algorithm = "reduction"
    dtypes = frozenset({DataType.FLOAT32, DataType.FLOAT16})
    grid = {"WG": (64, 128, 256), "PLANES": (8, 16, 32, 64, 128)}
    param_doc = {"WG": "work-items per work-group (a multiple of PLANES)",
                 "PLANES": "(n, c) planes staged and summed per work-group"}

    def applicability(self, problem: PoolingProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        d, x = problem.desc, problem.x
        require(problem.direction is Direction.FORWARD, "forward only")
        require(not d.is_max, "average modes only")
        require(d.window == (x.h, x.w) and not any(d.pads), "window is not the whole unpadded input")
        require(x.h * x.w <= MAX_PLANE, f"planes of more than {MAX_PLANE} elements")
        require(x.n * x.c < INT_LIMIT, "more than 2^31 planes")
        require_none(index_reason(x.element_span, problem.y.element_span))

    def invalid_reason(self, problem: PoolingProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason:
            return reason
        wg, planes = params["WG"], params["PLANES"]
        if wg % planes:
            return f"WG={wg} is not a multiple of PLANES={planes}"
        return work_group_reason(dev, (wg,)) or local_memory_reason(dev, self._local_bytes(problem, params))

    def default_params(self, problem: PoolingProblem, dev: DeviceInfo) -> Params:
        """256 work-items and the most planes (up to 64) whose staging takes at most DEFAULT_STAGE bytes."""
        pitch = row_pitch(problem.x.h * problem.x.w)
        planes = next((p for p in (64, 32, 16) if p * pitch * FLOAT_BYTES <= DEFAULT_STAGE), 8)
        params = {"WG": 256, "PLANES": planes}
        return params if self.is_valid(problem, params, dev) else {"WG": 64, "PLANES": 8}

    def solution(self, problem: PoolingProblem, params: Params) -> Solution:
        x = problem.x
        wg, planes = params["WG"], params["PLANES"]
        defines = {"WG": wg, "PLANES": planes, "NC": x.n * x.c, "C": x.c, "H": x.h, "W": x.w,
                   "HWP": row_pitch(x.h * x.w), "X_PACKED": int(x.is_packed), **strides("X", x),
                   **strides("Y", problem.y), **problem.dtype.defines}
        spec = KernelSpec.make("pooling_global_staged.cl", "pool_global_avg_staged", defines)
        groups = ceil_div(x.n * x.c, planes)
        return Solution(self.id, dict(params), (KernelLaunch(spec, (groups * wg,), (wg,), ("x", "y")),))

    @staticmethod
    def _local_bytes(problem: PoolingProblem, params: Params) -> int:
        return (params["PLANES"] * row_pitch(problem.x.h * problem.x.w) + params["WG"]) * FLOAT_BYTES
