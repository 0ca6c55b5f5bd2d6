"""The dropout family's ordered solver registry: the packed kernel where it applies, else the strided one."""
from __future__ import annotations

from ..solver import Registry
from .problem import DropoutProblem
from .reference import prepare_inputs, reference_outputs
from .solvers.generic import DropoutGeneric
from .solvers.packed import DropoutPacked

REGISTRY = Registry("dropout", DropoutProblem, (
    DropoutPacked(),
    DropoutGeneric(),
), reference=reference_outputs, prepare=prepare_inputs)
