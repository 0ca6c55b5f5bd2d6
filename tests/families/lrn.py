"""Local response normalisation's test data for the tests over every family (tests/families/__init__.py)."""
from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array

import miopy
from miopy import TensorDesc
from tests.families.common import HANDLE, Arg, Call, Driver, Functional, Warm, poisoned, positive

LRN = miopy.LRNDesc("cross", 3)


def _lrn_forward(queue) -> Call:
    x = TensorDesc("FP32", (1, 6, 4, 4))
    return Call(miopy.lrn_forward, [Arg("handle", HANDLE), Arg("lrn", LRN), Arg("scalar", 1.0), Arg("desc", x),
                                    Arg("buffer", poisoned(queue, x), 3), Arg("scalar", 0.0), Arg("desc", x),
                                    Arg("buffer", poisoned(queue, x), 6)])


def _lrn_backward(queue) -> Call:
    """dx from dy, x and the scale a forward with do_backward saved (into a byte workspace) on the call's handle."""
    t = TensorDesc("FP32", (1, 6, 4, 4))
    x, y = positive(queue, t), positive(queue, t)
    workspace = cl_array.to_device(queue, np.zeros(miopy.lrn_workspace_size(t), np.uint8))
    return Call(miopy.lrn_backward, [
        Arg("handle", HANDLE), Arg("lrn", LRN), Arg("scalar", 1.0), Arg("desc", t), Arg("buffer", y, 3),
        Arg("desc", t), Arg("buffer", poisoned(queue, t), 5), Arg("desc", t), Arg("buffer", x, 7), Arg("scalar", 0.0),
        Arg("desc", t), Arg("buffer", poisoned(queue, t), 10), Arg("raw", workspace)],
        setup=lambda handle: miopy.lrn_forward(handle, LRN, 1.0, t, x, 0.0, t, y, True, workspace))


PUBLIC_CALLS = {
    "lrn_forward": _lrn_forward,
    "lrn_backward": _lrn_backward,
}

FUNCTIONAL = {
    "local_response_norm": Functional(miopy.lrn.local_response_norm, [(1, 6, 4, 4)], {"size": 3, "alpha": 1e-3}),
}

WARM = {
    "local_response_norm size": Warm(lambda h, a, v: miopy.local_response_norm(a.x, v, handle=h), 1, True),
    "local_response_norm return_scale": Warm(
        lambda h, a, v: miopy.local_response_norm(a.x, 3, return_scale=v, handle=h), False, 0),
    "lrn_forward do_backward": Warm(lambda h, a, v: miopy.lrn_forward(
        h, miopy.LRNDesc("cross", 3), 1.0, a.d, a.x, 0.0, a.d, a.y, v), False, "no"),
}

DRIVER = {"lrn": Driver()}
