"""The pooling family's ordered solver registry: the global-average reductions first (where they apply:
small planes staged many per work-group, then a work-group per plane; the backward's even spread), the
windowed kernel that applies to every problem last. Ids are stable strings."""
from __future__ import annotations

from ..solver import Registry
from .problem import PoolingProblem
from .reference import prepare_inputs, reference_outputs
from .solvers.global_average import PoolingGlobalAverage
from .solvers.global_average_backward import PoolingGlobalAverageBackward
from .solvers.global_average_staged import PoolingGlobalAverageStaged
from .solvers.windowed import PoolingWindowed

REGISTRY = Registry("pooling", PoolingProblem, (
    PoolingGlobalAverageStaged(),
    PoolingGlobalAverage(),
    PoolingGlobalAverageBackward(),
    PoolingWindowed(),
), reference=reference_outputs, prepare=prepare_inputs)
