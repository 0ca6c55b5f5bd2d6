"""Activation's test data for the tests over every family (tests/families/__init__.py)."""
from __future__ import annotations

from typing import Any

import miopy
from miopy import TensorDesc
from miopy.activation import functional as F
from tests.families.common import HANDLE, Arg, Call, Driver, Functional, Warm, poisoned


def element_wise(queue, function: Any, modes: tuple[str, ...], roles: int) -> Call:
    """A call of the shape (handle, mode, alpha, beta, gamma, desc, buffer, ...) on one small tensor shape."""
    desc = TensorDesc("FP32", (1, 2, 3, 4))
    args = [Arg("handle", HANDLE), Arg("mode", modes[0]), Arg("scalar", 0.5), Arg("scalar", 0.0), Arg("scalar", 1.0)]
    for _ in range(roles):
        args += [Arg("desc", desc), Arg("buffer", poisoned(queue, desc), len(args))]
    return Call(function, args)


PUBLIC_CALLS = {
    "activation_forward": lambda q: element_wise(q, miopy.activation_forward, ("relu", "tanh", "leaky_relu"), 2),
    "activation_backward": lambda q: element_wise(q, miopy.activation_backward, ("relu", "logistic"), 4),
}

# The activations with a keyword argument: those without one (relu, relu6, sigmoid, tanh, softplus, hardswish)
# take the same path (functional._forward) but have too few distinct bad inputs (57: one array, spoiled up to
# twice) for the 100 cases the fuzz test asks of each entry.
SHAPE = [(2, 3, 4, 4)]
FUNCTIONAL = {
    "leaky_relu": Functional(F.leaky_relu, SHAPE, {"negative_slope": 0.1}),
    "elu": Functional(F.elu, SHAPE, {"alpha": 0.5}),
    "hardtanh": Functional(F.hardtanh, SHAPE, {"min_val": -0.5, "max_val": 0.5}),
}

WARM = {
    "activation mode": Warm(lambda h, a, v: miopy.activation_forward(h, v, 1.0, 0.0, 0.0, a.d, a.x, a.d, a.y), 1, True),
    "leaky_relu negative_slope": Warm(lambda h, a, v: F.leaky_relu(a.x, v, handle=h), 0.5, True),
}

DRIVER = {"activ": Driver()}
