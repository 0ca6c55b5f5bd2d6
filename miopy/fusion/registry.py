"""The fusion family's ordered solver registry: a fused wrapper of each convolution solver with the epilogue hook
(in the convolution registry's order), then the pointwise batch-norm solver."""
from __future__ import annotations

from ..solver import Registry
from .problem import FusedProblem
from .reference import reference_outputs
from .solvers.batchnorm_activation import BatchNormActivInference
from .solvers.conv_epilogue import conv_fused_solvers

REGISTRY = Registry("fusion", FusedProblem, (
    *conv_fused_solvers(),
    BatchNormActivInference(),
), reference=reference_outputs)
