"""Train a small CNN on scikit-learn's digits (8x8 images, 1,797 of them; no download) with miopy alone.

    conv 3x3 (1 -> 16) -> batch norm -> ReLU -> max pool 2     8x8 -> 4x4
    conv 3x3 (16 -> 32) -> batch norm -> ReLU -> max pool 2    4x4 -> 2x2
    global average pool -> conv 1x1 (32 -> 10) -> log-softmax -> negative log-likelihood

Every forward and backward op and the SGD (momentum) update runs through miopy on the default device; the
host only shuffles, uploads batches and their one-hot labels, and reads predictions back to count.
A quarter of the data is held out (stratified); the script prints each epoch's loss and held-out accuracy.

    python examples/train_digits.py                 # 12 epochs (about a minute on a 2-core CPU with PoCL)
    python examples/train_digits.py --epochs 4 --batch 64 --lr 0.05
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import miopy
from miopy import ActivationMode, ConvDesc, Direction, TensorDesc
from miopy.batchnorm import batch_norm_backward, native_batch_norm
from miopy.pooling import adaptive_avg_pool2d, adaptive_avg_pool2d_backward, max_pool2d, max_pool2d_backward
from miopy.softmax import log_softmax, log_softmax_backward_data
from miopy.tensor_ops import mul, scale

CLASSES = 10
BN_MOMENTUM, BN_EPS = 0.1, 1e-5


class Conv:
    """One convolution layer's descriptors and its three find records (immediate mode by default, so
    nothing is benchmarked: on a CPU, find would compile every solver)."""

    def __init__(self, handle: miopy.Handle, x_shape, w_shape, pad: int, find_mode: str):
        self.handle = handle
        self.x_desc, self.w_desc, self.conv = TensorDesc("FP32", x_shape), TensorDesc("FP32", w_shape), ConvDesc(pad)
        self.y_desc = self.conv.output_desc(self.x_desc, self.w_desc)
        self.algo = {d: miopy.find_convolution(handle, self.x_desc, self.w_desc, self.conv, d, mode=find_mode)[0]
                     for d in Direction}

    def forward(self, x, w):
        y = self.handle.pooled(self.y_desc.dims, np.dtype(np.float32))
        miopy.convolution_forward(self.handle, self.x_desc, x, self.w_desc, w, self.conv, self.y_desc, y,
                                  algo=self.algo[Direction.FORWARD])
        return y

    def backward(self, x, w, dy, need_dx: bool = True):
        """(dx or None, dw)."""
        f32 = np.dtype(np.float32)
        dw = self.handle.pooled(self.w_desc.dims, f32)
        miopy.convolution_backward_weights(self.handle, self.y_desc, dy, self.x_desc, x, self.conv, self.w_desc, dw,
                                           algo=self.algo[Direction.BACKWARD_WEIGHTS])
        if not need_dx:
            return None, dw
        dx = self.handle.pooled(self.x_desc.dims, f32)
        miopy.convolution_backward_data(self.handle, self.y_desc, dy, self.w_desc, w, self.conv, self.x_desc, dx,
                                        algo=self.algo[Direction.BACKWARD_DATA])
        return dx, dw


class Relu:
    def __init__(self, handle: miopy.Handle, shape):
        self.handle, self.desc = handle, TensorDesc("FP32", shape)

    def forward(self, x):
        y = self.handle.pooled(self.desc.dims, np.dtype(np.float32))
        miopy.activation_forward(self.handle, ActivationMode.RELU, 1, 1, 1, self.desc, x, self.desc, y)
        return y

    def backward(self, x, y, dy):
        dx = self.handle.pooled(self.desc.dims, np.dtype(np.float32))
        d = self.desc
        miopy.activation_backward(self.handle, ActivationMode.RELU, 1, 1, 1, d, y, d, dy, d, x, d, dx)
        return dx


class Model:
    """The network, its parameters (device arrays, He-initialised from seed) and the SGD momentum buffers."""

    PARAMS = ("w1", "g1", "b1", "w2", "g2", "b2", "wf")

    def __init__(self, handle: miopy.Handle, batch: int, seed: int = 0, find_mode: str = "fast"):
        self.handle, self.batch = handle, batch
        rng = np.random.default_rng(seed)
        he = lambda shape: (rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))).astype(np.float32)
        host = {"w1": he((16, 1, 3, 3)), "g1": np.ones(16, np.float32), "b1": np.zeros(16, np.float32),
                "w2": he((32, 16, 3, 3)), "g2": np.ones(32, np.float32), "b2": np.zeros(32, np.float32),
                "wf": he((CLASSES, 32, 1, 1))}
        self.params = {k: handle.to_device(v) for k, v in host.items()}
        self.velocity = {k: handle.to_device(np.zeros_like(v)) for k, v in host.items()}
        self.running = {k: handle.to_device(v) for k, v in (("m1", np.zeros(16, np.float32)),
                                                            ("v1", np.ones(16, np.float32)),
                                                            ("m2", np.zeros(32, np.float32)),
                                                            ("v2", np.ones(32, np.float32)))}
        n = batch
        self.conv1 = Conv(handle, (n, 1, 8, 8), (16, 1, 3, 3), 1, find_mode)
        self.conv2 = Conv(handle, (n, 16, 4, 4), (32, 16, 3, 3), 1, find_mode)
        self.fc = Conv(handle, (n, 32, 1, 1), (CLASSES, 32, 1, 1), 0, find_mode)
        self.relu1, self.relu2 = Relu(handle, (n, 16, 8, 8)), Relu(handle, (n, 32, 4, 4))
        self.saved: dict = {}

    def forward(self, x, training: bool):
        """log-probabilities (N, 10, 1, 1); in training, keeps what the backward needs."""
        p, r, s = self.params, self.running, {"x": x}
        s["c1"] = self.conv1.forward(x, p["w1"])
        s["n1"], s["mean1"], s["inv1"] = native_batch_norm(s["c1"], p["g1"], p["b1"], r["m1"], r["v1"], training,
                                                           BN_MOMENTUM, BN_EPS)
        s["r1"] = self.relu1.forward(s["n1"])
        s["p1"], s["i1"] = max_pool2d(s["r1"], 2, return_indices=True)
        s["c2"] = self.conv2.forward(s["p1"], p["w2"])
        s["n2"], s["mean2"], s["inv2"] = native_batch_norm(s["c2"], p["g2"], p["b2"], r["m2"], r["v2"], training,
                                                           BN_MOMENTUM, BN_EPS)
        s["r2"] = self.relu2.forward(s["n2"])
        s["p2"], s["i2"] = max_pool2d(s["r2"], 2, return_indices=True)
        s["g"] = adaptive_avg_pool2d(s["p2"], 1)
        s["logits"] = self.fc.forward(s["g"], p["wf"])
        s["logp"] = log_softmax(s["logits"], dim=1)
        self.saved = s if training else {}
        return s["logp"]

    def loss_gradient(self, onehot):
        """(mean NLL as a 1x1x1x1 device array, d loss / d logp = -onehot / N): onehot is consumed."""
        n = self.batch
        picked = mul(onehot, self.saved["logp"]).reshape(1, 1, n, CLASSES)
        loss = scale(adaptive_avg_pool2d(picked, 1), -CLASSES)     # -mean over N*10 entries * 10 = NLL
        return loss, scale(onehot, -1.0 / n)

    def backward(self, dlogp) -> dict:
        """Gradients of every parameter (device arrays), from d loss / d logp."""
        s, p = self.saved, self.params
        dlogits = log_softmax_backward_data(dlogp, s["logp"], dim=1)
        dg, dwf = self.fc.backward(s["g"], p["wf"], dlogits)
        dp2 = adaptive_avg_pool2d_backward(dg, s["p2"])
        dr2 = max_pool2d_backward(dp2, s["r2"], s["i2"], 2)
        dn2 = self.relu2.backward(s["n2"], s["r2"], dr2)
        dc2, dg2, db2 = batch_norm_backward(dn2, s["c2"], p["g2"], s["mean2"], s["inv2"], BN_EPS)
        dp1, dw2 = self.conv2.backward(s["p1"], p["w2"], dc2)
        dr1 = max_pool2d_backward(dp1, s["r1"], s["i1"], 2)
        dn1 = self.relu1.backward(s["n1"], s["r1"], dr1)
        dc1, dg1, db1 = batch_norm_backward(dn1, s["c1"], p["g1"], s["mean1"], s["inv1"], BN_EPS)
        _, dw1 = self.conv1.backward(s["x"], p["w1"], dc1, need_dx=False)
        return {"w1": dw1, "g1": dg1, "b1": db1, "w2": dw2, "g2": dg2, "b2": db2, "wf": dwf}

    def step(self, grads: dict, lr: float, momentum: float) -> None:
        """SGD with momentum, in place on the device: v = momentum * v + g; p = p - lr * v."""
        for name in self.PARAMS:
            p, v, g = self.params[name], self.velocity[name], grads[name]
            desc = TensorDesc("FP32", (1, 1, 1, p.size))
            miopy.op_tensor(self.handle, "add", momentum, desc, v, 1.0, desc, g, 0.0, desc, v)
            miopy.op_tensor(self.handle, "add", 1.0, desc, p, -lr, desc, v, 0.0, desc, p)


def load_data(seed: int = 0):
    """(train images, train labels, test images, test labels): a stratified quarter held out; images
    scaled to [0, 1] and standardised with the training set's mean and deviation."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]
    x_train, x_test, y_train, y_test = train_test_split(images, digits.target, test_size=0.25, random_state=seed,
                                                        stratify=digits.target)
    mean, std = x_train.mean(), x_train.std()
    return (x_train - mean) / std, y_train, (x_test - mean) / std, y_test


def onehot(labels: np.ndarray) -> np.ndarray:
    out = np.zeros((len(labels), CLASSES, 1, 1), np.float32)
    out[np.arange(len(labels)), labels] = 1.0
    return out


def evaluate(model: Model, images: np.ndarray, labels: np.ndarray) -> float:
    """Held-out accuracy; the last batch is padded to the batch size (every call keeps one shape)."""
    n, correct = model.batch, 0
    for start in range(0, len(images), n):
        chunk = images[start:start + n]
        padded = np.concatenate([chunk, np.zeros((n - len(chunk),) + chunk.shape[1:], np.float32)])
        logp = model.forward(model.handle.to_device(padded), training=False).get()
        correct += int((logp[:len(chunk), :, 0, 0].argmax(1) == labels[start:start + n]).sum())
    return correct / len(images)


def train(epochs: int = 12, batch: int = 32, lr: float = 0.1, momentum: float = 0.9, seed: int = 0,
          find_mode: str = "fast", verbose: bool = True, handle: miopy.Handle | None = None) -> float:
    """Train and return the final held-out accuracy."""
    handle = handle or miopy.Handle()
    x_train, y_train, x_test, y_test = load_data(seed)
    model = Model(handle, batch, seed, find_mode)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    accuracy = 0.0
    for epoch in range(epochs):
        order = rng.permutation(len(x_train))
        losses = []
        for first in range(0, len(order) - batch + 1, batch):   # full batches only: one shape throughout
            idx = order[first:first + batch]
            model.forward(handle.to_device(x_train[idx]), training=True)
            loss, dlogp = model.loss_gradient(handle.to_device(onehot(y_train[idx])))
            model.step(model.backward(dlogp), lr, momentum)
            losses.append(loss)
        accuracy = evaluate(model, x_test, y_test)
        if verbose:
            mean_loss = float(np.mean([loss.get() for loss in losses]))
            print(f"epoch {epoch + 1:2d}: loss {mean_loss:.4f}, held-out accuracy {100 * accuracy:.1f}% "
                  f"({time.perf_counter() - start:.1f} s)", flush=True)
    return accuracy


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--find", default="fast", choices=("fast", "hybrid", "normal"),
                    help="find mode of the convolutions (fast: heuristic, nothing benchmarked)")
    a = ap.parse_args(argv)
    handle = miopy.Handle()
    print(f"device: {handle.info.name} ({handle.info.platform})")
    accuracy = train(a.epochs, a.batch, a.lr, a.momentum, a.seed, a.find, handle=handle)
    print(f"held-out accuracy {100 * accuracy:.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
