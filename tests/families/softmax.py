"""Softmax's test data for the tests over every family (tests/families/__init__.py)."""
from __future__ import annotations

import miopy
from miopy import TensorDesc
from tests.families.common import HANDLE, Arg, Call, Driver, Functional, Warm, poisoned


def _softmax_forward(queue) -> Call:
    x = TensorDesc("FP32", (2, 5, 2, 3))
    return Call(miopy.softmax_forward, [Arg("handle", HANDLE), Arg("scalar", 1.0), Arg("desc", x),
                                        Arg("buffer", poisoned(queue, x), 2), Arg("scalar", 0.0), Arg("desc", x),
                                        Arg("buffer", poisoned(queue, x), 5), Arg("mode", "accurate"),
                                        Arg("mode", "channel")])


def _softmax_backward(queue) -> Call:
    x = TensorDesc("FP32", (2, 5, 2, 3))
    return Call(miopy.softmax_backward, [Arg("handle", HANDLE), Arg("scalar", 1.0), Arg("desc", x),
                                         Arg("buffer", poisoned(queue, x), 2), Arg("desc", x),
                                         Arg("buffer", poisoned(queue, x), 4), Arg("scalar", 0.0), Arg("desc", x),
                                         Arg("buffer", poisoned(queue, x), 7)])


PUBLIC_CALLS = {
    "softmax_forward": _softmax_forward,
    "softmax_backward": _softmax_backward,
}

FUNCTIONAL = {
    "softmax": Functional(miopy.softmax.softmax, [(2, 5, 2, 3)], {"dim": 1}),
    "log_softmax": Functional(miopy.softmax.log_softmax, [(2, 5, 2, 3)], {"dim": 1}),
    "softmax_backward_data": Functional(miopy.softmax.softmax_backward_data, [(2, 5, 2, 3), (2, 5, 2, 3)],
                                        {"dim": 1}),
}

WARM = {
    "softmax dim": Warm(lambda h, a, v: miopy.softmax.softmax(a.x, v, handle=h), 1, True),
    "log_softmax dim": Warm(lambda h, a, v: miopy.softmax.log_softmax(a.x, v, handle=h), 1, True),
    "softmax_forward algorithm": Warm(lambda h, a, v: miopy.softmax_forward(h, 1.0, a.d, a.x, 0.0, a.d, a.y, v),
                                      1, True),
}

DRIVER = {"softmax": Driver()}
