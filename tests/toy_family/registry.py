"""The toy family's registry."""
from __future__ import annotations

from miopy.solver import Registry

from .problem import SquareProblem
from .reference import reference_outputs
from .solvers.pointwise import SquarePointwise

REGISTRY = Registry("toy", SquareProblem, (SquarePointwise(),), reference=reference_outputs)
