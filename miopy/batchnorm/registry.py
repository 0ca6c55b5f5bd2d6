"""The batch-norm family's ordered solver registry; order is the preference when the ranking ties."""
from __future__ import annotations

from collections.abc import Sequence

from ..solver import Registry, Solver
from .problem import BatchNormProblem
from .reference import reference_outputs
from .solvers.inference import BatchNormInference
from .solvers.per_activation import BatchNormPerActivation
from .solvers.spatial_resident import BatchNormSpatialResident
from .solvers.spatial_single import BatchNormSpatialSingle
from .solvers.spatial_split import BatchNormSpatialSplit

# Spatial statistics over more values than this per channel go to the split reduction first.
SINGLE_MAX_COUNT = 32768


def rank(problem: BatchNormProblem, candidates: Sequence[Solver]) -> list[Solver]:
    """Registry order (a channel held in registers where it fits, then one work-group a channel), except that
    a large N*H*W prefers the split reduction over one work-group a channel."""
    if problem.count <= SINGLE_MAX_COUNT:
        return list(candidates)
    return sorted(candidates, key=lambda s: not isinstance(s, BatchNormSpatialSplit))


REGISTRY = Registry("batchnorm", BatchNormProblem, (
    BatchNormInference(),
    BatchNormPerActivation(),
    BatchNormSpatialResident(),
    BatchNormSpatialSingle(),
    BatchNormSpatialSplit(),
), reference=reference_outputs, rank=rank)
