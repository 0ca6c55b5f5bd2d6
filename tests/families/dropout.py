"""Dropout's test data for the tests over every family (tests/families/__init__.py)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl.array as cl_array

import miopy
from miopy import TensorDesc
from tests.families.common import HANDLE, Arg, Call, Driver, Functional, Warm, poisoned

_HANDLES: dict[int, miopy.Handle] = {}


def _dropout(function: Any, queue) -> Call:
    x = TensorDesc("FP32", (2, 3, 4, 4))
    handle = _HANDLES.get(queue.int_ptr)   # one handle on the states' context for every example
    if handle is None:
        handle = _HANDLES[queue.int_ptr] = miopy.Handle(context=queue.context)
    states = cl_array.to_device(queue, np.zeros(miopy.dropout_get_states_size(handle), np.uint8))
    desc = miopy.set_dropout_descriptor(handle, 0.5, states, seed=7)
    reserve = cl_array.to_device(queue, np.ones(miopy.dropout_get_reserve_space_size(x), np.uint8))
    return Call(function, [Arg("handle", HANDLE), Arg("dropout", desc), Arg("noise", None), Arg("desc", x),
                           Arg("buffer", poisoned(queue, x), 3), Arg("desc", x), Arg("buffer", poisoned(queue, x), 5),
                           Arg("raw", reserve)], watch=[desc.states])


PUBLIC_CALLS = {
    "dropout_forward": lambda q: _dropout(miopy.dropout_forward, q),
    "dropout_backward": lambda q: _dropout(miopy.dropout_backward, q),
}

FUNCTIONAL = {
    "dropout": Functional(miopy.dropout.dropout, [(2, 3, 4, 4)], {"p": 0.5, "training": True}),
}

WARM = {
    "dropout p": Warm(lambda h, a, v: miopy.dropout.dropout(a.x, v, handle=h), 0.0, False),
    "dropout training": Warm(lambda h, a, v: miopy.dropout.dropout(a.x, 0.5, training=v, handle=h), False, 0),
}

DRIVER = {"dropout": Driver(seeds=("-l", "-m"), big=lambda c: ["--input_dim", f"{c},1024,1024"])}
