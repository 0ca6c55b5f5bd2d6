"""Pooling, softmax and LRN against PyTorch itself (float64 on its CPU), where torch is installed (the GPU
machine): the functional ops' outputs and gradients, ceil_mode and count_include_pad edges, max indices,
every softmax dim, even LRN windows. Skipped without torch; the float64 references cover the same ground
everywhere else."""
import numpy as np
import pytest

from miopy.accuracy import max_error
from miopy.lrn import local_response_norm, local_response_norm_backward
from miopy.pooling import (
    adaptive_avg_pool2d,
    adaptive_avg_pool2d_backward,
    avg_pool2d,
    avg_pool2d_backward,
    max_pool2d,
    max_pool2d_backward,
)
from miopy.softmax import log_softmax, log_softmax_backward_data, softmax, softmax_backward_data

torch = pytest.importorskip("torch")
F = torch.nn.functional
TOLERANCE = 1e-5


def _pair(handle, shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return x, torch.tensor(x, dtype=torch.float64, requires_grad=True), handle.to_device(x)


def _grad(out, leaf, dy):
    (grad,) = torch.autograd.grad(out, leaf, torch.tensor(dy, dtype=torch.float64))
    return grad.numpy()


@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", [(3, 2, 1, False), (3, 2, 1, True), (2, 2, 0, True),
                                                             ((3, 2), (2, 1), (1, 0), True)])
def test_max_pool2d(handle, kernel, stride, padding, ceil_mode):
    x, xt, xa = _pair(handle, (2, 3, 9, 8), 1)
    want, want_idx = F.max_pool2d(xt, kernel, stride, padding, ceil_mode=ceil_mode, return_indices=True)
    y, idx = max_pool2d(xa, kernel, stride, padding, ceil_mode=ceil_mode, return_indices=True)
    assert y.shape == tuple(want.shape) and max_error(y.get(), want.detach().numpy()) <= TOLERANCE
    assert (idx.get() == want_idx.numpy()).all()
    dy = np.random.default_rng(2).standard_normal(y.shape).astype(np.float32)
    dx = max_pool2d_backward(handle.to_device(dy), xa, idx, kernel, stride, padding, ceil_mode)
    assert max_error(dx.get(), _grad(want, xt, dy)) <= TOLERANCE


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", [(3, 2, 1, True), (3, 2, 1, False), (2, 3, 1, True)])
def test_avg_pool2d(handle, kernel, stride, padding, ceil_mode, count_include_pad):
    x, xt, xa = _pair(handle, (2, 3, 8, 9), 3)
    want = F.avg_pool2d(xt, kernel, stride, padding, ceil_mode, count_include_pad)
    y = avg_pool2d(xa, kernel, stride, padding, ceil_mode, count_include_pad)
    assert y.shape == tuple(want.shape) and max_error(y.get(), want.detach().numpy()) <= TOLERANCE
    dy = np.random.default_rng(4).standard_normal(y.shape).astype(np.float32)
    dx = avg_pool2d_backward(handle.to_device(dy), xa, kernel, stride, padding, ceil_mode, count_include_pad)
    assert max_error(dx.get(), _grad(want, xt, dy)) <= TOLERANCE


def test_adaptive_avg_pool2d(handle):
    x, xt, xa = _pair(handle, (2, 5, 7, 6), 5)
    want = F.adaptive_avg_pool2d(xt, 1)
    assert max_error(adaptive_avg_pool2d(xa, 1).get(), want.detach().numpy()) <= TOLERANCE
    dy = np.random.default_rng(6).standard_normal((2, 5, 1, 1)).astype(np.float32)
    assert max_error(adaptive_avg_pool2d_backward(handle.to_device(dy), xa).get(), _grad(want, xt, dy)) <= TOLERANCE


@pytest.mark.parametrize("dim", [0, 1, 2, 3, -1])
def test_softmax_and_log_softmax(handle, dim):
    x, xt, xa = _pair(handle, (2, 4, 3, 5), 7)
    dy = np.random.default_rng(8).standard_normal(x.shape).astype(np.float32)
    for ours, backward, theirs in ((softmax, softmax_backward_data, F.softmax),
                                   (log_softmax, log_softmax_backward_data, F.log_softmax)):
        want = theirs(xt, dim)
        y = ours(xa, dim)
        assert max_error(y.get(), want.detach().numpy()) <= TOLERANCE
        assert max_error(backward(handle.to_device(dy), y, dim).get(), _grad(want, xt, dy)) <= TOLERANCE


@pytest.mark.parametrize("size", [2, 4, 5])
def test_local_response_norm(handle, size):
    x, xt, xa = _pair(handle, (2, 7, 4, 5), 9)
    want = F.local_response_norm(xt, size, alpha=0.5, beta=0.75, k=1.5)
    y, scale = local_response_norm(xa, size, 0.5, 0.75, 1.5, return_scale=True)
    assert max_error(y.get(), want.detach().numpy()) <= TOLERANCE
    dy = np.random.default_rng(10).standard_normal(x.shape).astype(np.float32)
    dx = local_response_norm_backward(handle.to_device(dy), xa, scale, size, 0.5, 0.75, 1.5)
    assert max_error(dx.get(), _grad(want, xt, dy)) <= TOLERANCE
