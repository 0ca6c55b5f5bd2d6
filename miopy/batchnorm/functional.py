"""PyTorch-style batch norm on pyopencl arrays (torch.nn.functional.batch_norm's arguments), on plans.

Inputs may be (N, C), (N, C, L) or (N, C, H, W) (viewed as N x C x H x W with H, W = 1 where missing);
statistics are per channel (spatial mode). weight / bias / running statistics are arrays of C float32.
Outputs come from the handle's memory pool; a warm call builds nothing and allocates no device memory.
"""
from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array

from ..errors import BadParam, NotSupported, check
from ..handle import Handle, functional_handle
from ..tensor import TensorDesc, as_flag
from .api import batch_normalization_plan, epsilon_scalar, forward_scalars
from .descriptor import BatchNormMode, derive_bn_tensor_descriptor
from .problem import BnDirection

SPATIAL = BatchNormMode.SPATIAL


def batch_norm(input: cl_array.Array, running_mean: cl_array.Array | None, running_var: cl_array.Array | None,
               weight: cl_array.Array | None = None, bias: cl_array.Array | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5, handle: Handle | None = None) -> cl_array.Array:
    """torch.nn.functional.batch_norm: training normalises with the batch's statistics (and updates the
    running ones in place when given: running = (1 - momentum) * running + momentum * batch, the variance
    unbiased); otherwise with running_mean / running_var."""
    return native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, handle,
                             save=False)[0]


def native_batch_norm(input: cl_array.Array, weight: cl_array.Array | None, bias: cl_array.Array | None,
                      running_mean: cl_array.Array | None, running_var: cl_array.Array | None, training: bool,
                      momentum: float = 0.1, eps: float = 1e-5, handle: Handle | None = None, *, save: bool = True
                      ) -> tuple[cl_array.Array, cl_array.Array | None, cl_array.Array | None]:
    """torch.native_batch_norm: (output, saved mean, saved inverse standard deviation); the saved pair is
    None in evaluation mode (or with save=False). The pair feeds batch_norm_backward."""
    handle = functional_handle(input, "input", handle)
    training, save = as_flag(training, "training"), as_flag(save, "save")
    if not training:
        check(running_mean is not None and running_var is not None, "running_mean",
              "running_mean and running_var are needed in evaluation mode")
    elif momentum is None:
        raise NotSupported("momentum=None (a cumulative moving average) is not supported; pass a float")
    running = training and (running_mean is not None or running_var is not None)
    direction = BnDirection.FORWARD_TRAINING if training else BnDirection.FORWARD_INFERENCE
    key = ("batchnorm.functional", direction, input.shape, input.dtype, running, save and training)
    memo = handle.plans.get(key)
    if memo is None:
        memo = handle.plans.put(key, _cold(handle, direction, input, running, save and training))
    plan, ones, zeros = memo
    c = input.shape[1]
    scale, shift = (ones if weight is None else weight), (zeros if bias is None else bias)
    y = handle.pooled(input.shape, input.dtype)
    if not training:
        scalars = {"alpha": np.float32(1), "beta": np.float32(0), "epsilon": epsilon_scalar(eps)}
        plan.run_values((input, y, scale, shift, running_mean, running_var), scalars=scalars)
        return y, None, None
    values = (input, y, scale, shift) + ((running_mean, running_var) if running else ())
    saved = (handle.pooled((c,), np.dtype(np.float32)), handle.pooled((c,), np.dtype(np.float32))) if save else ()
    plan.run_values(values + saved, scalars=forward_scalars(1, 0, eps, momentum))
    return (y, *saved) if save else (y, None, None)


def batch_norm_backward(grad_output: cl_array.Array, input: cl_array.Array, weight: cl_array.Array | None = None,
                        save_mean: cl_array.Array | None = None, save_invstd: cl_array.Array | None = None,
                        eps: float = 1e-5, handle: Handle | None = None
                        ) -> tuple[cl_array.Array, cl_array.Array, cl_array.Array]:
    """(grad_input, grad_weight, grad_bias) of training-mode batch_norm. With save_mean / save_invstd (from
    native_batch_norm) the forward's statistics are reused; without, they are recomputed from input."""
    handle = functional_handle(input, "input", handle)
    if not (isinstance(grad_output, cl_array.Array) and grad_output.shape == input.shape):
        raise BadParam("grad_output", f"must be an array of the input's shape {input.shape}")
    if (save_mean is None) != (save_invstd is None):
        raise BadParam("save_invstd" if save_invstd is None else "save_mean", "save_mean and save_invstd go together")
    saved = save_mean is not None
    key = ("batchnorm.functional", BnDirection.BACKWARD, input.shape, input.dtype, False, saved)
    memo = handle.plans.get(key)
    if memo is None:
        memo = handle.plans.put(key, _cold(handle, BnDirection.BACKWARD, input, False, saved))
    plan, ones, _ = memo
    c = input.shape[1]
    grads = (handle.pooled(input.shape, input.dtype), handle.pooled((c,), np.dtype(np.float32)),
             handle.pooled((c,), np.dtype(np.float32)))
    one, zero = np.float32(1), np.float32(0)
    scalars = {"alpha_data": one, "beta_data": zero, "alpha_param": one, "beta_param": zero,
               "epsilon": epsilon_scalar(eps)}
    values = (input, grad_output, grads[0], ones if weight is None else weight, grads[1], grads[2])
    plan.run_values(values + ((save_mean, save_invstd) if saved else ()), scalars=scalars)
    return grads


def _cold(handle: Handle, direction: BnDirection, input, running: bool, saved: bool):
    """(plan, ones, zeros): the plan and the default weight and bias for this call shape."""
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    dims = _dims(input, "input")
    x = TensorDesc(input.dtype, dims)
    param = derive_bn_tensor_descriptor(x, SPATIAL)
    dy = x if direction is BnDirection.BACKWARD else None
    plan = batch_normalization_plan(handle, direction, SPATIAL, x, x, param, dy, running, saved)
    c = dims[1]
    return plan, handle.to_device(np.ones(c, np.float32)), handle.to_device(np.zeros(c, np.float32))


def _dims(array, field: str) -> tuple[int, int, int, int]:
    """The N x C x H x W view of a 2-, 3- or 4-D array."""
    if not isinstance(array, cl_array.Array):
        raise BadParam(field, f"expected a pyopencl Array, got {type(array).__name__}")
    check(2 <= array.ndim <= 4, field, f"expected (N, C), (N, C, L) or (N, C, H, W), got shape {array.shape}")
    dims = tuple(array.shape) + (1,) * (4 - array.ndim)
    return (dims[0], dims[1], dims[2], dims[3])
