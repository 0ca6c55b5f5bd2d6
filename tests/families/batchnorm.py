"""Batch normalisation's test data for the tests over every family (tests/families/__init__.py)."""
from __future__ import annotations

import miopy
from miopy import TensorDesc
from tests.families.common import HANDLE, Arg, Call, Driver, Functional, Warm, poisoned, positive


def _batch_norm_inference(queue) -> Call:
    x, bn = TensorDesc("FP32", (2, 3, 4, 4)), TensorDesc("FP32", (1, 3, 1, 1))
    return Call(miopy.batch_normalization_forward_inference, [
        Arg("handle", HANDLE), Arg("mode", "spatial"), Arg("scalar", 1.0), Arg("scalar", 0.0), Arg("desc", x),
        Arg("buffer", poisoned(queue, x), 4), Arg("desc", x), Arg("buffer", poisoned(queue, x), 6),
        Arg("desc", bn), Arg("buffer", poisoned(queue, bn), 8), Arg("buffer", poisoned(queue, bn), 8),
        Arg("buffer", positive(queue, bn), 8), Arg("buffer", positive(queue, bn), 8), Arg("scalar", 1e-5)])


def _batch_norm_training(queue) -> Call:
    x, bn = TensorDesc("FP32", (2, 3, 4, 4)), TensorDesc("FP32", (1, 3, 1, 1))
    return Call(miopy.batch_normalization_forward_training, [
        Arg("handle", HANDLE), Arg("mode", "spatial"), Arg("scalar", 1.0), Arg("scalar", 0.0), Arg("desc", x),
        Arg("buffer", poisoned(queue, x), 4), Arg("desc", x), Arg("buffer", poisoned(queue, x), 6),
        Arg("desc", bn), Arg("buffer", poisoned(queue, bn), 8), Arg("buffer", poisoned(queue, bn), 8),
        Arg("scalar", 0.1), Arg("buffer", poisoned(queue, bn), 8), Arg("buffer", positive(queue, bn), 8),
        Arg("scalar", 1e-5), Arg("buffer", poisoned(queue, bn), 8), Arg("buffer", poisoned(queue, bn), 8)])


def _batch_norm_backward(queue) -> Call:
    x, bn = TensorDesc("FP32", (2, 3, 4, 4)), TensorDesc("FP32", (1, 3, 1, 1))
    return Call(miopy.batch_normalization_backward, [
        Arg("handle", HANDLE), Arg("mode", "spatial"), Arg("scalar", 1.0), Arg("scalar", 0.0), Arg("scalar", 1.0),
        Arg("scalar", 0.0), Arg("desc", x), Arg("buffer", poisoned(queue, x), 6), Arg("desc", x),
        Arg("buffer", poisoned(queue, x), 8), Arg("desc", x), Arg("buffer", poisoned(queue, x), 10),
        Arg("desc", bn), Arg("buffer", poisoned(queue, bn), 12), Arg("buffer", poisoned(queue, bn), 12),
        Arg("buffer", poisoned(queue, bn), 12), Arg("scalar", 1e-5)])


PUBLIC_CALLS = {
    "batch_normalization_forward_inference": _batch_norm_inference,
    "batch_normalization_forward_training": _batch_norm_training,
    "batch_normalization_backward": _batch_norm_backward,
}

FUNCTIONAL = {
    # the running variance (the third array) holds ones: a variance must be > 0
    "batch_norm": Functional(miopy.batch_norm, [(2, 3, 4, 4), (3,), (3,)], {"training": False, "eps": 1e-5},
                             positive=(2,)),
    "batch_norm_backward": Functional(miopy.batchnorm.batch_norm_backward, [(2, 3, 4, 4), (2, 3, 4, 4)],
                                      {"eps": 1e-5}),
}

WARM = {
    "batch norm mode": Warm(lambda h, a, v: miopy.batch_normalization_forward_inference(
        h, v, 1.0, 0.0, a.d, a.x, a.d, a.y, a.bn, *a.stats, 1e-5), 1, True),
    "batch_norm training": Warm(lambda h, a, v: miopy.batch_norm(
        a.x, a.stats[0].reshape(4), a.stats[1].reshape(4), training=v, handle=h), False, 0),
}

DRIVER = {"bnorm": Driver(seeds=("--seed",))}
