"""Float64 batch normalisation: forward training, forward inference and backward, spatial (statistics per
channel over N, H, W) or per-activation (per (c, h, w) element over N).

Parameters and statistics have shape (1, C, 1, 1) or (1, C, H, W). The batch variance normalises with the
biased estimate (divide by the count m); the running variance is updated with the unbiased one (m / (m-1)
times it), as MIOpen and PyTorch both do. The saved inverse variance is 1 / sqrt(var + epsilon).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .problem import CHECK_EPSILON, CHECK_FACTOR, BatchNormProblem, BnDirection


def _axes(spatial: bool) -> tuple[int, ...]:
    return (0, 2, 3) if spatial else (0,)


def batch_stats(x, spatial: bool) -> tuple[np.ndarray, np.ndarray]:
    """(mean, biased variance) of x over the statistic's axes, two-pass, keepdims."""
    x = np.asarray(x, np.float64)
    mean = x.mean(axis=_axes(spatial), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=_axes(spatial), keepdims=True)
    return mean, var


def count(shape, spatial: bool) -> int:
    n, _, h, w = shape
    return n * h * w if spatial else n


def forward_training(x, scale, bias, epsilon: float, spatial: bool, factor: float = 0.1, running_mean=None,
                     running_var=None) -> dict[str, np.ndarray]:
    """y, saved_mean, saved_inv_variance and (when given) the updated running_mean, running_var."""
    x = np.asarray(x, np.float64)
    mean, var = batch_stats(x, spatial)
    inv = 1.0 / np.sqrt(var + epsilon)
    out = {"y": np.asarray(scale, np.float64) * (x - mean) * inv + np.asarray(bias, np.float64),
           "saved_mean": mean, "saved_inv_variance": inv}
    if running_mean is not None:
        m = count(x.shape, spatial)
        out["running_mean"] = (1.0 - factor) * np.asarray(running_mean, np.float64) + factor * mean
        out["running_var"] = (1.0 - factor) * np.asarray(running_var, np.float64) + factor * var * m / (m - 1)
    return out


def forward_inference(x, scale, bias, mean, variance, epsilon: float) -> np.ndarray:
    """y = scale * (x - mean) / sqrt(variance + epsilon) + bias with the given (estimated) statistics."""
    x, scale, bias, mean, variance = (np.asarray(a, np.float64) for a in (x, scale, bias, mean, variance))
    return scale * (x - mean) / np.sqrt(variance + epsilon) + bias


def backward(x, dy, scale, epsilon: float, spatial: bool, saved_mean=None,
             saved_inv_variance=None) -> dict[str, np.ndarray]:
    """dx, dscale, dbias of training-mode batch norm; the batch statistics are recomputed from x unless
    saved_mean and saved_inv_variance are given (then epsilon is unused)."""
    x, dy = np.asarray(x, np.float64), np.asarray(dy, np.float64)
    if saved_mean is None:
        mean, var = batch_stats(x, spatial)
        inv = 1.0 / np.sqrt(var + epsilon)
    else:
        mean, inv = np.asarray(saved_mean, np.float64), np.asarray(saved_inv_variance, np.float64)
    axes, m = _axes(spatial), count(x.shape, spatial)
    xhat = (x - mean) * inv
    dbias = dy.sum(axis=axes, keepdims=True)
    dscale = (dy * xhat).sum(axis=axes, keepdims=True)
    dx = np.asarray(scale, np.float64) * inv * (dy - dbias / m - xhat * dscale / m)
    return {"dx": dx, "dscale": dscale, "dbias": dbias}


def reference_outputs(problem: BatchNormProblem, t: Mapping[str, np.ndarray], epsilon: float = CHECK_EPSILON,
                      factor: float = CHECK_FACTOR) -> dict[str, np.ndarray]:
    """{output role: float64 expected} for the tensors t (by role)."""
    if problem.direction is BnDirection.FORWARD_INFERENCE:
        return {"y": forward_inference(t["x"], t["scale"], t["bias"], t["estimated_mean"],
                                           t["estimated_variance"], epsilon)}
    if problem.direction is BnDirection.BACKWARD:
        saved = (t["saved_mean"], t["saved_inv_variance"]) if problem.saved else (None, None)
        return backward(t["x"], t["dy"], t["scale"], epsilon, problem.spatial, *saved)
    running = (t["running_mean"], t["running_var"]) if problem.running else (None, None)
    out = forward_training(t["x"], t["scale"], t["bias"], epsilon, problem.spatial, factor, *running)
    return {role: out[role] for role in problem.outputs()}
