"""Fusion's test data for the tests over every family (tests/families/__init__.py). Fusion has no functional
layer; its driver commands take conv's flags."""
from __future__ import annotations

import miopy
from miopy import ConvDesc, TensorDesc
from tests.families.common import HANDLE, Arg, Call, Driver, Warm, conv_dims, poisoned


def _conv_bias_activation(queue) -> Call:
    x, w = TensorDesc("FP32", (1, 4, 6, 6)), TensorDesc("FP32", (4, 4, 3, 3))
    bias = TensorDesc("FP32", (1, 4, 1, 1))
    return Call(miopy.conv_bias_activation_forward, [
        Arg("handle", HANDLE), Arg("desc", x), Arg("buffer", poisoned(queue, x), 1), Arg("desc", w),
        Arg("buffer", poisoned(queue, w), 3), Arg("conv", ConvDesc(1)), Arg("desc", bias),
        Arg("buffer", poisoned(queue, bias), 6), Arg("mode", "relu"), Arg("scalar", 0.0), Arg("scalar", 0.0),
        Arg("scalar", 0.0), Arg("desc", x), Arg("buffer", poisoned(queue, x), 12)])


def _forward_bias(queue) -> Call:
    y, bias = TensorDesc("FP32", (1, 4, 6, 6)), TensorDesc("FP32", (1, 4, 1, 1))
    return Call(miopy.convolution_forward_bias, [Arg("handle", HANDLE), Arg("desc", bias),
                                                  Arg("buffer", poisoned(queue, bias), 1), Arg("desc", y),
                                                  Arg("buffer", poisoned(queue, y), 3)])


PUBLIC_CALLS = {
    "conv_bias_activation_forward": _conv_bias_activation,
    "convolution_forward_bias": _forward_bias,
}

FUNCTIONAL: dict = {}

WARM = {
    "conv_bias_activation mode": Warm(lambda h, a, v: miopy.conv_bias_activation_forward(
        h, a.d, a.x, TensorDesc("FP32", (4, 4, 3, 3)), a.w, ConvDesc(1), a.bn, a.bias, v, 0.0, 0.0, 0.0, a.d, a.y),
        3, True),
}

DRIVER = {
    "CBAInfer": Driver(big=conv_dims),
    "CBAInferfp16": Driver(big=lambda c: conv_dims(2 * c)),
}
