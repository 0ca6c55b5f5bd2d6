"""Pooling's test data for the tests over every family (tests/families/__init__.py)."""
from __future__ import annotations

import miopy
from miopy import TensorDesc
from tests.families.common import HANDLE, Arg, Call, Driver, Functional, Warm, array, poisoned


def _pooling_forward(queue) -> Call:
    x, y = TensorDesc("FP32", (1, 2, 4, 4)), TensorDesc("FP32", (1, 2, 2, 2))
    return Call(miopy.pooling_forward, [
        Arg("handle", HANDLE), Arg("pool", miopy.PoolingDesc("max", 2)), Arg("scalar", 1.0), Arg("desc", x),
        Arg("buffer", poisoned(queue, x), 3), Arg("scalar", 0.0), Arg("desc", y),
        Arg("buffer", poisoned(queue, y), 6)])


def _pooling_backward(queue) -> Call:
    x, y = TensorDesc("FP32", (1, 2, 4, 4)), TensorDesc("FP32", (1, 2, 2, 2))
    return Call(miopy.pooling_backward, [
        Arg("handle", HANDLE), Arg("pool", miopy.PoolingDesc("average", 2)), Arg("scalar", 1.0), Arg("desc", y),
        Arg("buffer", poisoned(queue, y), 3), Arg("desc", y), Arg("buffer", poisoned(queue, y), 5),
        Arg("desc", x), Arg("buffer", poisoned(queue, x), 7), Arg("scalar", 0.0), Arg("desc", x),
        Arg("buffer", poisoned(queue, x), 10)])


PUBLIC_CALLS = {
    "pooling_forward": _pooling_forward,
    "pooling_backward": _pooling_backward,
}

FUNCTIONAL = {
    "max_pool2d": Functional(miopy.max_pool2d, [(1, 2, 4, 4)], {"kernel_size": 2}),
    "avg_pool2d": Functional(miopy.avg_pool2d, [(1, 2, 4, 4)], {"kernel_size": 2, "padding": 1}),
    "adaptive_avg_pool2d": Functional(miopy.adaptive_avg_pool2d, [(1, 2, 4, 4)], {"output_size": 1}),
    "avg_pool2d_backward": Functional(miopy.pooling.avg_pool2d_backward, [(1, 2, 2, 2), (1, 2, 4, 4)],
                                      {"kernel_size": 2}),
}

WARM = {
    "max_pool2d stride": Warm(lambda h, a, v: miopy.max_pool2d(a.x, 2, stride=v, handle=h), 1, True),
    "max_pool2d ceil_mode": Warm(lambda h, a, v: miopy.max_pool2d(a.x, 2, ceil_mode=v, handle=h), False, 0),
    "avg_pool2d kernel": Warm(lambda h, a, v: miopy.avg_pool2d(a.x, v, handle=h), 1, True),
    "pooling_forward do_backward": Warm(lambda h, a, v: miopy.pooling_forward(
        h, miopy.PoolingDesc("average", 2), 1.0, a.d, a.x, 0.0, TensorDesc("FP32", (1, 4, 3, 3)),
        array(h, 1, 4, 3, 3), v), False, 0),
}

DRIVER = {"pool": Driver()}
