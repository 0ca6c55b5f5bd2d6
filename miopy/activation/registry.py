"""The activation family's solver registry: one element-wise kernel serves every mode and direction."""
from __future__ import annotations

from ..solver import Registry
from .problem import ActivationProblem
from .reference import prepare_inputs, reference_outputs
from .solvers.pointwise import ActivationPointwise

REGISTRY = Registry("activation", ActivationProblem, (
    ActivationPointwise(),
), reference=reference_outputs, prepare=prepare_inputs)
