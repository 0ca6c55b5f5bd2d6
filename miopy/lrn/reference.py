"""Float64 local response normalisation, forward and backward (MIOpen's LRN, PyTorch's
local_response_norm for cross-channel).

Modes by miopenLRNMode_t's values: 0 within-channel (an n x n spatial window, alpha / n^2), 1 cross-channel
(n neighbouring channels, alpha / n). scale = k + alpha / area * sum of x^2 over the window (zero outside
the tensor), y = x * scale^-beta. The window spans `pre` elements before the centre and n - 1 - pre after:
MIOpen's and ONNX's pre is (n - 1) // 2, PyTorch's n // 2 (they differ for even n).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .problem import Direction, LRNProblem

WITHIN, CROSS = 0, 1


def _window_sum(a: np.ndarray, axes: tuple[int, ...], before: int, after: int) -> np.ndarray:
    """sum of a over offsets [-before, after] along each axis, zero outside."""
    out = a
    for axis in axes:
        padded = np.pad(out, [(before, after) if i == axis else (0, 0) for i in range(a.ndim)])
        size = a.shape[axis]
        total = np.zeros_like(out)
        for d in range(before + after + 1):
            total += np.take(padded, range(d, d + size), axis=axis)
        out = total
    return out


def _geometry(mode: int, n: int, pre: int | None) -> tuple[tuple[int, ...], int, int, int]:
    pre = (n - 1) // 2 if pre is None else pre
    axes = (1,) if int(mode) == CROSS else (2, 3)
    return axes, pre, n - 1 - pre, n if int(mode) == CROSS else n * n


def lrn_scale(x, mode: int, n: int, alpha: float, k: float, pre: int | None = None) -> np.ndarray:
    """k + alpha / area * (sum of x^2 over each element's window), in float64."""
    axes, before, after, area = _geometry(mode, n, pre)
    x = np.asarray(x, np.float64)
    return k + alpha / area * _window_sum(x * x, axes, before, after)


def lrn_forward(x, mode: int, n: int, alpha: float, beta: float, k: float,
                pre: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(y, scale) in float64."""
    scale = lrn_scale(x, mode, n, alpha, k, pre)
    return np.asarray(x, np.float64) * scale ** -beta, scale


def lrn_backward(dy, x, mode: int, n: int, alpha: float, beta: float, k: float, pre: int | None = None,
                 scale=None) -> np.ndarray:
    """dx in float64: dy scale^-beta - 2 alpha beta / area * x * sum over the windows holding each element of
    dy x scale^(-beta - 1) (the exact gradient of lrn_forward). scale: the forward's saved scale, else
    computed from x."""
    axes, before, after, area = _geometry(mode, n, pre)
    x, dy = np.asarray(x, np.float64), np.asarray(dy, np.float64)
    scale = lrn_scale(x, mode, n, alpha, k, pre) if scale is None else np.asarray(scale, np.float64)
    terms = dy * x * scale ** (-beta - 1.0)
    return dy * scale ** -beta - 2.0 * alpha * beta / area * x * _window_sum(terms, axes, after, before)


def reference_outputs(problem: LRNProblem, tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The registry's reference hook: {output role: float64 expected} (the backward from the given scale)."""
    d = problem.desc
    geometry = (int(d.mode), d.n, d.alpha, d.beta, d.k, d.pre)
    if problem.direction is Direction.FORWARD:
        y, scale = lrn_forward(tensors["x"], *geometry)
        return {"y": y, "scale": scale} if problem.save_scale else {"y": y}
    return {"dx": lrn_backward(tensors["dy"], tensors["x"], *geometry, scale=tensors["scale"])}
