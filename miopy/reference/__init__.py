"""Float64 NumPy ground truth, one module per family (conv, activation, ...), used by the tests, by
``miopy-driver -V``, by tuning's final check and by find's accuracy check. Pure NumPy: it knows no
descriptor, problem or device, so every layer may use it."""
from __future__ import annotations

import numpy as np

from . import activation, batchnorm, conv, dropout, lrn, pooling, softmax, tensor_ops

__all__ = ["activation", "batchnorm", "conv", "dropout", "lrn", "max_error", "pooling", "softmax", "strided_view",
           "tensor_ops"]


def max_error(actual, expected) -> float:
    """Largest |actual - expected| / (1 + |expected|): the hybrid relative/absolute error of Boda."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if actual.size == 0:
        return 0.0
    err = np.abs(actual - expected) / (1.0 + np.abs(expected))
    return float(np.nan_to_num(err, nan=np.inf).max())


def strided_view(flat: np.ndarray, dims, strides) -> np.ndarray:
    """The logical tensor of dims laid out in flat by element strides."""
    byte_strides = tuple(s * flat.itemsize for s in strides)
    return np.lib.stride_tricks.as_strided(flat, shape=tuple(dims), strides=byte_strides)
