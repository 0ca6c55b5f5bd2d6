"""The descriptor API of dropout (MIOpen's miopenDropout*), on plans.

The RNG state is a 16-byte device buffer: key (seed) and a 64-bit offset. ``set_dropout_descriptor`` writes
the seed into it (offset 0); ``restore_dropout_descriptor`` binds a state already there. The forward draws
its mask from the state with a counter-based generator (Philox-4x32-10 keyed by the seed, counting by
element index and offset: deterministic, identical whatever the solver or device) and stores it in the
reserve space, one byte per element; the backward reads it back. Without state evolution every forward
draws the same mask (as MIOpen); with it, each forward advances the offset on the device afterwards.
"""
from __future__ import annotations

from typing import cast

import numpy as np
import pyopencl as cl

from ..errors import BadParam, check
from ..find import immediate_plan
from ..handle import Handle
from ..plan import Plan, buffer_of, memo_plan, operands
from ..tensor import TensorDesc, as_flag, as_int
from .descriptor import SEED_LIMIT, DropoutDescriptor
from .problem import STATE_BYTES, DropoutDirection, DropoutProblem


def dropout_get_states_size(handle: Handle) -> int:
    """Bytes of the RNG state buffer (MIOpen's DropoutGetStatesSize)."""
    _checked(handle)
    return STATE_BYTES


def dropout_get_reserve_space_size(x_desc: TensorDesc) -> int:
    """Bytes of the reserve space: one mask byte per element (MIOpen's DropoutGetReserveSpaceSize)."""
    check(isinstance(x_desc, TensorDesc), "x_desc", "must be a TensorDesc")
    return x_desc.element_count


def set_dropout_descriptor(handle: Handle, dropout: float, states, seed: int = 0, use_mask: bool = False,
                           state_evo: bool = False) -> DropoutDescriptor:
    """A descriptor, with states (at least dropout_get_states_size bytes) initialised from seed."""
    desc = restore_dropout_descriptor(handle, dropout, states, seed, use_mask, state_evo)
    buf = buffer_of(states, "states", nbytes=STATE_BYTES, context=handle.context)
    words = np.array([seed & 0xFFFFFFFF, seed >> 32, 0, 0], np.uint32)
    cl.enqueue_copy(handle.queue, buf, words, is_blocking=True)
    return desc


def restore_dropout_descriptor(handle: Handle, dropout: float, states, seed: int = 0, use_mask: bool = False,
                               state_evo: bool = False) -> DropoutDescriptor:
    """A descriptor on states as they are (MIOpen's RestoreDropoutDescriptor: no re-initialisation)."""
    _checked(handle)
    seed = as_int(seed, "seed")
    check(0 <= seed < SEED_LIMIT, "seed", f"must be in [0, 2^64), got {seed}")
    buffer_of(states, "states", nbytes=STATE_BYTES, context=handle.context)
    return DropoutDescriptor(dropout, seed, as_flag(use_mask, "use_mask"), as_flag(state_evo, "state_evo"), states)


def dropout_forward(handle: Handle, dropout_desc: DropoutDescriptor, noise_shape: TensorDesc | None,
                    x_desc: TensorDesc, x, y_desc: TensorDesc, y, reserve_space) -> list[cl.Event]:
    """y = x * mask / (1 - p), the mask drawn from the descriptor's state into reserve_space (or read from it
    with use_mask). x and y may be the same buffer."""
    check(isinstance(dropout_desc, DropoutDescriptor), "dropout_desc", "must be a DropoutDescriptor")
    _reserve(reserve_space)
    plan = memo_plan(_checked(handle), ("dropout.forward", x_desc, y_desc, noise_shape, dropout_desc.use_mask,
                                        dropout_desc.state_evo),
                     lambda: dropout_plan(handle, DropoutDirection.FORWARD, x_desc, y_desc, noise_shape,
                                          dropout_desc.use_mask, dropout_desc.state_evo))
    return plan.run_values((x, y, reserve_space, dropout_desc.states),
                           scalars={"threshold": dropout_desc.threshold, "scale": dropout_desc.scale})


def dropout_backward(handle: Handle, dropout_desc: DropoutDescriptor, noise_shape: TensorDesc | None,
                     dy_desc: TensorDesc, dy, dx_desc: TensorDesc, dx, reserve_space) -> list[cl.Event]:
    """dx = dy * mask / (1 - p) with the mask the forward left in reserve_space."""
    check(isinstance(dropout_desc, DropoutDescriptor), "dropout_desc", "must be a DropoutDescriptor")
    _reserve(reserve_space)
    plan = memo_plan(_checked(handle), ("dropout.backward", dy_desc, dx_desc, noise_shape),
                     lambda: dropout_plan(handle, DropoutDirection.BACKWARD, dy_desc, dx_desc, noise_shape))
    return plan.run_values((dy, dx, reserve_space), scalars={"scale": dropout_desc.scale})


def dropout_plan(handle: Handle, direction: DropoutDirection, x_desc: TensorDesc, y_desc: TensorDesc,
                 noise_shape: TensorDesc | None = None, use_mask: bool = False, state_evo: bool = False) -> Plan:
    """A (not memoised) plan of one dropout call shape; operands as DropoutProblem.tensors(), numbers
    threshold and scale (forward) or scale (backward)."""
    names = ("x_desc", "y_desc") if direction is DropoutDirection.FORWARD else ("dy_desc", "dx_desc")
    problem = DropoutProblem.create(direction, x_desc, y_desc, noise_shape, use_mask, state_evo, names)
    data = ("x", "y") if direction is DropoutDirection.FORWARD else ("dy", "dx")
    alias = [data] if x_desc == y_desc else []
    # The byte buffers' ByteBufferDesc offer what a plan checks of a descriptor: nbytes and dtype.numpy.
    ops = operands(cast(dict[str, TensorDesc], problem.tensors()), problem.outputs())
    return immediate_plan(handle, problem, ops, may_alias=alias)


def _reserve(reserve_space) -> None:
    if reserve_space is None:
        raise BadParam("reserve_space", "the reserve space (the forward's mask) is needed: size it with "
                                        "dropout_get_reserve_space_size")


def _checked(handle) -> Handle:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    return handle
