"""Warm calls of batch norm, tensor ops, dropout and the residual fusion (descriptor API and functional
form): after one call of each, repeated calls compile nothing, query no DB, allocate no device memory,
build no problem, key or descriptor."""
import numpy as np
import pyopencl as cl

import miopy
from miopy import ConvDesc, TensorDesc, db
from miopy.batchnorm import BatchNormProblem, batch_norm, batch_norm_backward, native_batch_norm
from miopy.dropout import DropoutProblem, Generator, native_dropout, native_dropout_backward
from miopy.kernel_cache import KernelCache
from miopy.tensor_ops import TensorOpProblem, add, fill, maximum, scale


def _forbid(monkeypatch, target, name):
    def forbidden(*args, **kwargs):
        raise AssertionError(f"a warm call reached {target.__name__}.{name}")
    monkeypatch.setattr(target, name, forbidden)


def test_warm_calls_compile_query_allocate_and_build_nothing(handle, monkeypatch):
    rng = np.random.default_rng(0)
    xd = TensorDesc("FP32", (2, 4, 5, 5))
    bd = miopy.derive_bn_tensor_descriptor(xd, "spatial")
    dev = lambda shape: handle.to_device(rng.standard_normal(shape).astype(np.float32))
    x, y, dy, dx = dev(xd.dims), dev(xd.dims), dev(xd.dims), dev(xd.dims)
    sc, bi, rm, sm, si, ds, db_ = (dev(bd.dims) for _ in range(7))
    rv = handle.to_device(np.ones(bd.dims, np.float32))
    states = handle.empty((16,), np.uint8)
    drop = miopy.set_dropout_descriptor(handle, 0.3, states, 5, state_evo=True)
    reserve = handle.empty((xd.element_count,), np.uint8)
    wd, conv = TensorDesc("FP32", (4, 4, 3, 3)), ConvDesc(1)
    w, bias, bias_desc = dev(wd.dims), dev((1, 4, 1, 1)), TensorDesc("FP32", (1, 4, 1, 1))
    gen = Generator(handle, 1)
    calls = [
        lambda: miopy.batch_normalization_forward_training(handle, 1, 1, 0, xd, x, xd, y, bd, sc, bi, 0.1, rm, rv,
                                                           1e-5, sm, si),
        lambda: miopy.batch_normalization_forward_inference(handle, 1, 0.5, 0.5, xd, x, xd, y, bd, sc, bi, rm, rv,
                                                            1e-5),
        lambda: miopy.batch_normalization_backward(handle, 1, 1, 0, 1, 0, xd, x, xd, dy, xd, dx, bd, sc, ds, db_,
                                                   1e-5, sm, si),
        lambda: batch_norm_backward(dy, x, None, *native_batch_norm(x, None, None, None, None, True)[1:]),
        lambda: batch_norm(x, rm, rv, training=False),
        lambda: miopy.op_tensor(handle, "mul", 1, xd, x, 2, bd, sc, 1, xd, y),
        lambda: miopy.transform_tensor(handle, 1, xd, x, 0, xd, y),
        lambda: add(x, sc, alpha=0.5),
        lambda: maximum(sc, x),
        lambda: scale(fill(dx, 2.0), 0.5),
        lambda: miopy.dropout_forward(handle, drop, xd, xd, x, xd, y, reserve),
        lambda: miopy.dropout_backward(handle, drop, xd, xd, dy, xd, dx, reserve),
        lambda: native_dropout_backward(dy, native_dropout(x, 0.25, generator=gen)[1], 0.25),
        lambda: miopy.conv_bias_activation_forward(handle, xd, x, wd, w, conv, bias_desc, bias, "relu", 1, 1, 1, xd,
                                                   y, z=dy, alpha2=0.5),
    ]
    for call in calls:
        call()
    handle.finish()
    pooled = handle.pool.managed_bytes
    for target, name in ((KernelCache, "kernel"), (KernelCache, "new_kernel"), (db.Store, "query"),
                         (db.Store, "write"), (cl, "Buffer"), (BatchNormProblem, "create"),
                         (BatchNormProblem, "_make_key"), (TensorOpProblem, "create"), (DropoutProblem, "create"),
                         (TensorDesc, "__init__")):
        _forbid(monkeypatch, target, name)
    for _ in range(3):
        for call in calls:
            call()
    handle.finish()
    assert handle.pool.managed_bytes == pooled, "a functional call allocated device memory on a warm call"
