"""The float64 answer to a convolution problem (its family's reference hook) from miopy.reference.conv."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..reference import conv as ref
from ..reference import max_error
from ..reference.conv import conv_backward_data, conv_backward_weights, conv_forward, transpose_forward
from .problem import OUTPUT_ROLE, ConvProblem, Direction


def solve(problem: ConvProblem, tensors: Mapping[str, np.ndarray]) -> np.ndarray:
    """Float64 output of problem's direction; tensors maps the forward roles x, w, y to host arrays."""
    c = problem.conv
    geo = dict(pad=c.pads, stride=c.stride, dilation=c.dilation, groups=c.groups)
    if problem.direction is Direction.FORWARD:
        return ref.conv_forward(tensors["x"], tensors["w"], **geo)
    if problem.direction is Direction.BACKWARD_DATA:
        return ref.conv_backward_data(tensors["y"], tensors["w"], problem.x.dims, **geo)
    return ref.conv_backward_weights(tensors["x"], tensors["y"], problem.w.dims, **geo)


def reference_outputs(problem: ConvProblem, tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The registry's reference hook: {output role: float64 expected}."""
    return {OUTPUT_ROLE[problem.direction]: solve(problem, tensors)}


__all__ = ["conv_backward_data", "conv_backward_weights", "conv_forward", "max_error", "reference_outputs", "solve",
           "tolerance", "transpose_forward"]


def tolerance(solver, problem: ConvProblem | None = None) -> float:
    """The max_error solver's fp32 result may have against float64 on problem (see Registry.tolerance)."""
    if problem is None:
        from ..solver import DEFAULT_TOLERANCE
        return solver.tolerance or DEFAULT_TOLERANCE
    return problem.registry.tolerance(solver, problem)
