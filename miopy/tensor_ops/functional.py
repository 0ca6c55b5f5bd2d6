"""PyTorch-style tensor arithmetic on pyopencl arrays, on OpTensor / SetTensor / ScaleTensor plans.

add, mul, minimum and maximum broadcast like NumPy (shapes aligned at the right) as far as MIOpen's OpTensor
can: one operand must broadcast to the other's shape (each dim equal or 1); two operands that would both
need expanding are refused. div (not commutative) broadcasts other over input only. fill and scale work in
place, like SetTensor and ScaleTensor (and PyTorch's fill_ / mul_). Arrays of 1 to 4 dims, C-contiguous.
"""
from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array

from ..errors import BadParam, check
from ..handle import Handle, functional_handle
from ..pointwise import scalar
from ..tensor import TensorDesc, holds_bool
from .api import op_tensor_plan, unary_plan
from .descriptor import TensorOp


def add(input: cl_array.Array, other: cl_array.Array, alpha: float = 1.0, handle: Handle | None = None
        ) -> cl_array.Array:
    """input + alpha * other (torch.add)."""
    return _binary(TensorOp.ADD, input, other, 1.0, alpha, handle)


def mul(input: cl_array.Array, other: cl_array.Array, handle: Handle | None = None) -> cl_array.Array:
    """input * other (torch.mul)."""
    return _binary(TensorOp.MUL, input, other, 1.0, 1.0, handle)


def minimum(input: cl_array.Array, other: cl_array.Array, handle: Handle | None = None) -> cl_array.Array:
    """Element-wise minimum (torch.minimum; with a NaN, the other value, as IEEE fmin)."""
    return _binary(TensorOp.MIN, input, other, 1.0, 1.0, handle)


def maximum(input: cl_array.Array, other: cl_array.Array, handle: Handle | None = None) -> cl_array.Array:
    """Element-wise maximum (torch.maximum; with a NaN, the other value, as IEEE fmax)."""
    return _binary(TensorOp.MAX, input, other, 1.0, 1.0, handle)


def div(input: cl_array.Array, other: cl_array.Array, handle: Handle | None = None) -> cl_array.Array:
    """input / other (torch.div; IEEE: a zero divisor gives inf or NaN); other broadcasts over input."""
    return _binary(TensorOp.DIV, input, other, 1.0, 1.0, handle)


def fill(input: cl_array.Array, value: float, handle: Handle | None = None) -> cl_array.Array:
    """Every element of input = value, in place (SetTensor; torch's fill_); returns input."""
    return _unary("set_tensor", input, value, handle)


def scale(input: cl_array.Array, factor: float, handle: Handle | None = None) -> cl_array.Array:
    """input *= factor, in place (ScaleTensor; torch's mul_ by a number); returns input."""
    return _unary("scale_tensor", input, factor, handle)


def _unary(kernel: str, input, value, handle: Handle | None):
    handle = functional_handle(input, "input", handle)
    key = (f"tensor_ops.functional_{kernel}", input.shape, input.dtype)
    plan = handle.plans.get(key)
    if plan is None:
        plan = handle.plans.put(key, unary_plan(handle, kernel, _desc(input, "input")))
    plan.run_values((input,), scalars={"value": scalar(value, "value")})
    return input


def _binary(op: TensorOp, input, other, alpha_input: float, alpha_other: float, handle: Handle | None):
    handle = functional_handle(input, "input", handle)
    try:
        key = ("tensor_ops.functional", op, input.shape, other.shape, input.dtype, other.dtype)
        memo = handle.plans.get(key)
    except AttributeError:   # not arrays: the cold path says which
        key, memo = None, None
    if memo is None:
        memo = _cold(handle, op, input, other)
        if key is not None:
            handle.plans.put(key, memo)
    plan, shape, swapped = memo
    out = handle.pooled(shape, input.dtype)
    alphas = (alpha_other, alpha_input) if swapped else (alpha_input, alpha_other)
    operands = (other, input) if swapped else (input, other)
    one = alphas == (1.0, 1.0) and not holds_bool(alphas)
    scalars = {"alpha1": np.float32(1) if one else scalar(alphas[0], "alpha"),
               "alpha2": np.float32(1) if one else scalar(alphas[1], "alpha"), "beta": np.float32(0)}
    plan.run_values((*operands, out), scalars=scalars)
    return out


def _cold(handle: Handle, op: TensorOp, input, other):
    """(plan, output shape, swapped): OpTensor's B is whichever operand broadcasts to the other's shape."""
    a, b = _shape4(input, "input"), _shape4(other, "other")
    check(input.dtype == other.dtype, "other", f"dtype {other.dtype} != input dtype {input.dtype}")
    if _fits(b, a):
        swapped = False
    elif _fits(a, b) and op is not TensorOp.DIV:
        swapped = True
    elif op is TensorOp.DIV:
        raise BadParam("other", f"shapes {input.shape} and {other.shape}: div broadcasts other over input (each "
                                "of other's dims equal to input's or 1)")
    else:
        raise BadParam("other", f"shapes {input.shape} and {other.shape}: OpTensor broadcasts one operand over the "
                                "other (each dim equal or 1), never both")
    a_desc, b_desc = TensorDesc(input.dtype, b if swapped else a), TensorDesc(input.dtype, a if swapped else b)
    return op_tensor_plan(handle, op, a_desc, b_desc, a_desc), (other if swapped else input).shape, swapped


def _fits(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    return all(s in (1, g) for s, g in zip(small, big))


def _shape4(array, field: str) -> tuple[int, int, int, int]:
    if not isinstance(array, cl_array.Array):
        raise BadParam(field, f"expected a pyopencl Array, got {type(array).__name__}")
    check(1 <= array.ndim <= 4, field, f"expected 1 to 4 dims, got shape {array.shape}")
    return tuple((1,) * (4 - array.ndim) + tuple(array.shape))  # type: ignore[return-value]


def _desc(array, field: str) -> TensorDesc:
    shape = _shape4(array, field)
    check(array.flags.c_contiguous, field, "must be C-contiguous")
    return TensorDesc(array.dtype, shape)
