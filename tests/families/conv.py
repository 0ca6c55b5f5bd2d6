"""Convolution's test data for the tests over every family (tests/families/__init__.py).

The descriptor calls (convolution_forward, _backward_data, _backward_weights) and conv2d have their own
property tests in tests/reliability/test_bad_input_fuzz.py (a coherent random problem, spoiled), so no
PUBLIC_CALLS here; conv's own driver checks (-g, -t / -V choices, miopy-tune) stay in test_validation.py.
"""
from __future__ import annotations

import numpy as np

import miopy
from tests.families.common import Driver, Functional, Warm, conv_dims

PUBLIC_CALLS: dict = {}

FUNCTIONAL = {
    "conv_transpose2d": Functional(miopy.conv_transpose2d, [(1, 4, 5, 5), (4, 2, 3, 3)], {"stride": 2, "padding": 1}),
}

WARM = {
    "conv2d stride": Warm(lambda h, a, v: miopy.conv2d(a.x, a.w, stride=v, padding=1, handle=h), 1, True),
    "conv2d groups": Warm(lambda h, a, v: miopy.conv2d(a.x, a.w, groups=v, handle=h), 1, np.bool_(True)),
    "conv2d padding": Warm(lambda h, a, v: miopy.conv2d(a.x, a.w, padding=v, handle=h), (0, 0), (False, 0)),
}

DRIVER = {
    "conv": Driver(big=conv_dims),
    "convfp16": Driver(big=lambda c: conv_dims(2 * c)),
}
