"""Activation modes: host formulas, and the standalone forward / backward ops against them in float64."""
import numpy as np
import pytest

import miopy
from miopy import ActivationMode, BadParam, TensorDesc
from miopy.accuracy import max_error
from miopy.activation import activation_backward, activation_forward
from miopy.activation.reference import backward_reference, derivative_reference, forward_reference

ALPHA, BETA, GAMMA = 1.3, 0.8, 1.7   # power: (1.3 + 0.8 x)^1.7 is 0 for x below -1.625, so both branches run
TOLERANCE = 1e-5                     # hybrid |a-e|/(1+|e|); every formula is a few float32 operations
DIMS = (2, 3, 5, 7)


def _random(seed: int, scale: float = 3.0) -> np.ndarray:
    return (scale * np.random.default_rng(seed).standard_normal(DIMS)).astype(np.float32)


def test_modes_have_miopen_values():
    assert [(m.name, int(m)) for m in ActivationMode][:4] == [("PASSTHRU", 0), ("LOGISTIC", 1), ("TANH", 2),
                                                              ("RELU", 3)]
    assert ActivationMode.ELU == 9 and ActivationMode.of("leaky_relu") is ActivationMode.LEAKY_RELU
    with pytest.raises(BadParam) as info:
        ActivationMode.of(42)
    assert info.value.field == "mode"


@pytest.mark.parametrize("mode", list(ActivationMode), ids=lambda m: m.name)
def test_derivative_matches_finite_differences(mode):
    """The host derivative formulas agree with the forward ones (away from kinks)."""
    x = np.linspace(-4, 4, 801) + 1e-3
    x = x[np.abs(ALPHA + BETA * x) > 1e-2] if mode is ActivationMode.POWER else x
    x = x[(np.abs(x) > 1e-2) & (np.abs(x - ALPHA) > 1e-2)]
    step = 1e-6
    numeric = (forward_reference(mode, x + step, ALPHA, BETA, GAMMA)
               - forward_reference(mode, x - step, ALPHA, BETA, GAMMA)) / (2 * step)
    assert np.allclose(derivative_reference(mode, x, ALPHA, BETA, GAMMA), numeric, atol=1e-5)


@pytest.mark.parametrize("mode", list(ActivationMode), ids=lambda m: m.name)
def test_forward_and_backward_match_float64(handle, mode):
    desc = TensorDesc("FP32", DIMS)
    x, dy = _random(int(mode)), _random(100 + int(mode), 1.0)
    xa, ya, dxa = handle.to_device(x), handle.to_device(np.full(DIMS, np.nan, np.float32)), handle.to_device(
        np.full(DIMS, np.nan, np.float32))
    activation_forward(handle, mode, ALPHA, BETA, GAMMA, desc, xa, desc, ya)
    y = ya.get()
    assert max_error(y, forward_reference(mode, x, ALPHA, BETA, GAMMA)) <= TOLERANCE
    activation_backward(handle, mode, ALPHA, BETA, GAMMA, desc, ya, desc, handle.to_device(dy), desc, xa, desc, dxa)
    assert max_error(dxa.get(), backward_reference(mode, dy, x, ALPHA, BETA, GAMMA)) <= TOLERANCE


def test_strided_and_in_place(handle):
    x = _random(7)
    strided = TensorDesc("FP32", DIMS, (200, 60, 10, 1))   # each row padded from 7 to 10
    host = np.full(2 * 200, np.nan, np.float32)
    view = np.lib.stride_tricks.as_strided(host, DIMS, tuple(4 * s for s in strided.strides))
    view[...] = x
    buf = handle.to_device(host)
    activation_forward(handle, "tanh", ALPHA, BETA, GAMMA, strided, buf, strided, buf)   # in place
    got = np.lib.stride_tricks.as_strided(buf.get(), DIMS, view.strides)
    assert max_error(got, forward_reference("tanh", x, ALPHA, BETA, GAMMA)) <= TOLERANCE


def test_new_alpha_compiles_nothing(handle):
    desc = TensorDesc("FP32", DIMS)
    xa, ya = handle.to_device(_random(8)), handle.empty(DIMS)
    activation_forward(handle, "leaky_relu", 0.1, 0, 0, desc, xa, desc, ya)
    before = handle.cache_stats()["compiled"]
    activation_forward(handle, "leaky_relu", 0.3, 0, 0, desc, xa, desc, ya)
    assert handle.cache_stats()["compiled"] == before
    assert max_error(ya.get(), forward_reference("leaky_relu", xa.get(), 0.3)) <= TOLERANCE


@pytest.mark.parametrize("field,call", [
    ("y_desc.dims", lambda h, d, a: activation_forward(h, 3, 1, 1, 1, d, a, TensorDesc("FP32", (2, 3, 5, 6)), a)),
    ("alpha", lambda h, d, a: activation_forward(h, 3, float("nan"), 1, 1, d, a, d, a)),
    ("mode", lambda h, d, a: activation_forward(h, "swish", 1, 1, 1, d, a, d, a)),
    ("y", lambda h, d, a: activation_forward(h, 3, 1, 1, 1, d, a, d, h.empty((3,)))),
    ("dx", lambda h, d, a: activation_backward(h, 3, 1, 1, 1, d, a, d, a, d, a, d, h.empty((2,)))),
])
def test_bad_arguments_name_the_field(handle, field, call):
    desc = TensorDesc("FP32", DIMS)
    with pytest.raises(BadParam) as info:
        call(handle, desc, handle.to_device(_random(9)))
    assert info.value.field == field


def test_public_names():
    assert miopy.activation_forward is activation_forward and miopy.ActivationMode is ActivationMode


def test_functional_forms_match_reference_and_name_their_arguments(handle):
    from miopy.activation import elu, hardtanh, leaky_relu, relu, sigmoid
    x = _random(7)
    xa = handle.to_device(x)
    cases = [(relu(xa), forward_reference("relu", x)), (sigmoid(xa), forward_reference("logistic", x)),
             (leaky_relu(xa, 0.2), forward_reference("leaky_relu", x, 0.2)),
             (elu(xa, 0.7), forward_reference("elu", x, 0.7)), (hardtanh(xa, -0.5, 2.0), np.clip(x, -0.5, 2.0))]
    for got, want in cases:
        assert max_error(got.get(), want) <= TOLERANCE
    for call, field in ((lambda: leaky_relu(xa, float("nan")), "negative_slope"),
                        (lambda: hardtanh(xa, "low", 1.0), "min_val")):
        with pytest.raises(BadParam) as info:
            call()
        assert info.value.field == field
