"""Float64 softmax and log-softmax, forward and backward, in MIOpen's modes and algorithms.

Modes by miopenSoftmaxMode_t's values: 0 instance (over C, H, W per image), 1 channel (over C per (n, h, w)).
Algorithms by miopenSoftmaxAlgorithm_t's: 0 fast (no max subtracted), 1 accurate, 2 log.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .problem import Direction, SoftmaxProblem

FAST, ACCURATE, LOG = 0, 1, 2
INSTANCE, CHANNEL = 0, 1


def _axes(mode: int) -> tuple[int, ...]:
    return (1, 2, 3) if int(mode) == INSTANCE else (1,)


def softmax_forward(x, algorithm: int, mode: int) -> np.ndarray:
    """y in float64: softmax (fast, accurate) or log-softmax (log) of x over the mode's axes."""
    x = np.asarray(x, np.float64)
    axes = _axes(mode)
    shift = 0.0 if int(algorithm) == FAST else x.max(axis=axes, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x - shift)
        total = e.sum(axis=axes, keepdims=True)
        if int(algorithm) == LOG:
            return x - shift - np.log(total)
        return e / total


def softmax_backward(y, dy, algorithm: int, mode: int) -> np.ndarray:
    """dx in float64 from the forward's output y and dy: y (dy - sum(dy y)) for softmax,
    dy - exp(y) sum(dy) for log-softmax."""
    y, dy = np.asarray(y, np.float64), np.asarray(dy, np.float64)
    axes = _axes(mode)
    if int(algorithm) == LOG:
        return dy - np.exp(y) * dy.sum(axis=axes, keepdims=True)
    return y * (dy - (dy * y).sum(axis=axes, keepdims=True))


def reference_outputs(problem: SoftmaxProblem, tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The registry's reference hook: {output role: float64 expected}."""
    algo, mode = int(problem.desc.algorithm), int(problem.desc.mode)
    if problem.direction is Direction.FORWARD:
        return {"y": softmax_forward(tensors["x"], algo, mode)}
    return {"dx": softmax_backward(tensors["y"], tensors["dy"], algo, mode)}
