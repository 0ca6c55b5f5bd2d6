"""PyTorch-style dropout on pyopencl arrays: dropout, native_dropout (output and mask) and
native_dropout_backward,
drawing from a seeded Generator (a device RNG state that every draw advances)."""
from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array

from ..errors import BadParam, check
from ..handle import Handle, functional_handle
from ..tensor import TensorDesc, as_flag
from .api import dropout_plan, set_dropout_descriptor
from .descriptor import rate_scalars
from .problem import STATE_BYTES, DropoutDirection


class Generator:
    """A seeded dropout RNG state on one handle's device (like a torch.Generator for dropout): each draw
    advances it on the device, so successive calls draw fresh masks; the same seed replays the same ones."""

    def __init__(self, handle: Handle, seed: int = 0):
        check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
        self.handle = handle
        self.states = handle.empty((STATE_BYTES,), np.uint8)
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> Generator:
        """Restart the sequence of draws from seed."""
        set_dropout_descriptor(self.handle, 0.0, self.states, seed)
        self.seed = seed
        return self


def default_generator(handle: Handle) -> Generator:
    """The handle's own generator, seeded 0 when first used."""
    generator = handle.state.get("dropout.generator")
    if generator is None:
        generator = handle.state["dropout.generator"] = Generator(handle, 0)
    return generator


def dropout(input: cl_array.Array, p: float = 0.5, training: bool = True, generator: Generator | None = None,
            handle: Handle | None = None) -> cl_array.Array:
    """torch.nn.functional.dropout (inverted: kept values scaled by 1 / (1 - p)); input itself when not
    training."""
    return native_dropout(input, p, training, generator, handle)[0]


def native_dropout(input: cl_array.Array, p: float, train: bool = True, generator: Generator | None = None,
                   handle: Handle | None = None) -> tuple[cl_array.Array, cl_array.Array | None]:
    """(output, mask) like torch.native_dropout; mask is uint8 (1 kept) of input's shape, for
    native_dropout_backward. Not training: (input, None)."""
    threshold, scale = rate_scalars(p, "p")
    if not as_flag(train, "training"):
        return input, None
    handle = functional_handle(input, "input", handle)
    generator = generator or default_generator(handle)
    plan = _plan(handle, DropoutDirection.FORWARD, input)
    out, mask = handle.pooled(input.shape, input.dtype), handle.pooled(input.shape, np.dtype(np.uint8))
    plan.run_values((input, out, mask, generator.states), scalars={"threshold": threshold, "scale": scale})
    return out, mask


def native_dropout_backward(grad_output: cl_array.Array, mask: cl_array.Array, p: float,
                     handle: Handle | None = None) -> cl_array.Array:
    """grad_input = grad_output * mask / (1 - p), mask from native_dropout."""
    _, scale = rate_scalars(p, "p")
    handle = functional_handle(grad_output, "input", handle)
    if not (isinstance(mask, cl_array.Array) and mask.shape == grad_output.shape):
        raise BadParam("mask", f"must be native_dropout's mask, of grad_output's shape {grad_output.shape}")
    plan = _plan(handle, DropoutDirection.BACKWARD, grad_output)
    grad = handle.pooled(grad_output.shape, grad_output.dtype)
    plan.run_values((grad_output, grad, mask), scalars={"scale": scale})
    return grad


def _plan(handle: Handle, direction: DropoutDirection, array):
    key = ("dropout.functional", direction, array.shape, array.dtype)
    plan = handle.plans.get(key)
    if plan is None:
        check(1 <= array.ndim <= 4, "input", f"expected 1 to 4 dims, got shape {array.shape}")
        desc = TensorDesc(array.dtype, (1,) * (4 - array.ndim) + tuple(array.shape))
        plan = handle.plans.put(key, dropout_plan(handle, direction, desc, desc, state_evo=True))
    return plan
