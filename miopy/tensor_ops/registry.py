"""The tensor-op family's ordered solver registry: the flat kernel where it applies, else the strided one;
division on its own kernel."""
from __future__ import annotations

from ..solver import Registry
from .problem import TensorOpProblem
from .reference import reference_outputs
from .solvers.divide import OpTensorDivide
from .solvers.generic import OpTensorGeneric
from .solvers.packed import OpTensorPacked

REGISTRY = Registry("tensor_ops", TensorOpProblem, (
    OpTensorPacked(),
    OpTensorGeneric(),
    OpTensorDivide(),
), reference=reference_outputs)
