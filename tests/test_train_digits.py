"""examples/train_digits.py: the whole model's gradients against float64 finite differences at start, and
training to at least 95% held-out accuracy (fewer epochs than the example's default; the bar is the same)."""
import numpy as np
import pytest

from miopy.batchnorm import reference as bn_ref
from miopy.conv import reference as conv_ref
from tests.helpers import load_script


def _example():
    return load_script("examples/train_digits.py", "train_digits")


def _loss64(p: dict, x: np.ndarray, labels: np.ndarray, eps: float) -> float:
    """The example's model in float64 NumPy: mean negative log-likelihood of the labels."""
    def block(inp, w, g, b):
        c = conv_ref.conv_forward(inp, w, (1, 1))
        n = bn_ref.forward_training(c, g.reshape(1, -1, 1, 1), b.reshape(1, -1, 1, 1), eps, True)["y"]
        r = np.maximum(n, 0.0)
        nb, ch, h, w_ = r.shape
        return r.reshape(nb, ch, h // 2, 2, w_ // 2, 2).max(axis=(3, 5))
    pooled = block(block(x, p["w1"], p["g1"], p["b1"]), p["w2"], p["g2"], p["b2"])
    logits = conv_ref.conv_forward(pooled.mean(axis=(2, 3), keepdims=True), p["wf"])[:, :, 0, 0]
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-logp[np.arange(len(labels)), labels].mean())


def test_model_gradients_match_float64_finite_differences(handle):
    td = _example()
    batch, rng = 8, np.random.default_rng(0)
    model = td.Model(handle, batch, seed=1)
    x = rng.standard_normal((batch, 1, 8, 8)).astype(np.float32)
    labels = rng.integers(0, td.CLASSES, batch)
    model.forward(handle.to_device(x), training=True)
    loss, dlogp = model.loss_gradient(handle.to_device(td.onehot(labels)))
    grads = {k: g.get().astype(np.float64) for k, g in model.backward(dlogp).items()}
    params = {k: v.get().astype(np.float64) for k, v in model.params.items()}
    x64 = x.astype(np.float64)
    assert abs(float(loss.get().ravel()[0]) - _loss64(params, x64, labels, td.BN_EPS)) <= 1e-5
    step = 1e-6
    for name, value in params.items():
        flat = value.ravel()
        picks = rng.choice(flat.size, size=min(flat.size, 24), replace=False)
        numeric = []
        for i in picks:
            saved = flat[i]
            flat[i] = saved + step
            up = _loss64(params, x64, labels, td.BN_EPS)
            flat[i] = saved - step
            down = _loss64(params, x64, labels, td.BN_EPS)
            flat[i] = saved
            numeric.append((up - down) / (2 * step))
        numeric = np.array(numeric)
        got = grads[name].ravel()[picks]
        scale = max(np.abs(numeric).max(), 1e-3)
        assert np.abs(got - numeric).max() <= 1e-4 * scale, (name, got, numeric)


def test_training_reaches_95_percent_held_out(handle):
    pytest.importorskip("sklearn")
    accuracy = _example().train(epochs=6, verbose=False, handle=handle)
    assert accuracy >= 0.95
