"""Tensor operations' test data for the tests over every family (tests/families/__init__.py)."""
from __future__ import annotations

from typing import Any

import miopy
from miopy import TensorDesc
from tests.families.common import HANDLE, Arg, Call, Driver, Functional, Warm, poisoned


def _op_tensor(queue) -> Call:
    a, b = TensorDesc("FP32", (2, 3, 4, 4)), TensorDesc("FP32", (1, 3, 1, 1))
    return Call(miopy.op_tensor, [Arg("handle", HANDLE), Arg("mode", "add"), Arg("scalar", 1.0), Arg("desc", a),
                                  Arg("buffer", poisoned(queue, a), 3), Arg("scalar", 2.0), Arg("desc", b),
                                  Arg("buffer", poisoned(queue, b), 6), Arg("scalar", 0.0), Arg("desc", a),
                                  Arg("buffer", poisoned(queue, a), 9)])


def _one_tensor(function: Any):
    def call(queue) -> Call:
        y = TensorDesc("FP32", (2, 3, 4, 4))
        return Call(function, [Arg("handle", HANDLE), Arg("desc", y), Arg("buffer", poisoned(queue, y), 1),
                               Arg("scalar", 0.5)])
    return call


def _transform_tensor(queue) -> Call:
    x, y = TensorDesc("FP32", (2, 3, 4, 4)), TensorDesc("FP32", (2, 3, 4, 4), (48, 1, 12, 3))   # to NHWC
    return Call(miopy.transform_tensor, [Arg("handle", HANDLE), Arg("scalar", 1.0), Arg("desc", x),
                                         Arg("buffer", poisoned(queue, x), 2), Arg("scalar", 0.0), Arg("desc", y),
                                         Arg("buffer", poisoned(queue, y), 5)])


PUBLIC_CALLS = {
    "op_tensor": _op_tensor,
    "set_tensor": _one_tensor(miopy.set_tensor),
    "scale_tensor": _one_tensor(miopy.scale_tensor),
    "transform_tensor": _transform_tensor,
}

FUNCTIONAL = {
    "tensor_ops.add": Functional(miopy.tensor_ops.add, [(2, 3, 4, 4), (1, 3, 1, 1)], {"alpha": 2.0}),
    "tensor_ops.scale": Functional(miopy.tensor_ops.scale, [(2, 3, 4, 4)], {"factor": 0.5}),
}

WARM = {
    "op_tensor op": Warm(lambda h, a, v: miopy.op_tensor(h, v, 1.0, a.d, a.x, 1.0, a.d, a.x, 0.0, a.d, a.y), 1, True),
    "tensor_ops.add alpha": Warm(lambda h, a, v: miopy.tensor_ops.add(a.x, a.y, alpha=v, handle=h), 1.0, True),
}

DRIVER = {"tensorop": Driver(seeds=("--seed",))}
