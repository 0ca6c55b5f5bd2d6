"""Element-wise kernels over N x C x H x W tensors (activation.cl, fusion_pointwise.cl, ...): shape
defines, launch geometry and argument checks, shared by every family.

Each tensor's element strides are compile-time defines (``XS_N`` ... for prefix ``X``), so any layout
works and index arithmetic folds; numbers (alpha, epsilon, ...) are kernel arguments, so new values
never recompile.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from .device import INT_LIMIT, index_reason
from .errors import BadParam, NotSupported, check
from .kernel_cache import KernelSpec
from .solver import Arg, KernelLaunch, round_up
from .tensor import DataType, TensorDesc, as_float32

WORK_GROUP = 256
MAX_ELEMENTS = INT_LIMIT - 1
POINTWISE_DTYPES = frozenset({DataType.FLOAT32, DataType.FLOAT16})   # kernels typed by kernels/types.h


def pointwise_defines(dims: tuple[int, ...], tensors: Mapping[str, TensorDesc]) -> dict[str, int]:
    """Dims N C H W plus, for each prefix T, the strides T##S_N ... of its tensor."""
    defines = dict(zip("NCHW", dims))
    for prefix, desc in tensors.items():
        defines.update({f"{prefix}S_{axis}": stride for axis, stride in zip("NCHW", desc.strides)})
    return defines


def pointwise_launch(file: str, name: str, tensors: Mapping[str, TensorDesc], defines: Mapping[str, int],
                     args: tuple[Arg, ...]) -> KernelLaunch:
    """One work-item per element of the (equal-dims) tensors; the first tensor gives the dims and the storage
    type (MIOPY_HALF, kernels/types.h)."""
    first = next(iter(tensors.values()))
    reason = index_reason(*(desc.element_span for desc in tensors.values()))
    if reason is not None:   # the kernels' element offsets and work-item ids are 32-bit ints
        raise NotSupported(f"{name}: {reason}")
    spec = KernelSpec.make(file, name, {**first.dtype.defines, **pointwise_defines(first.dims, tensors), **defines})
    dims = first.dims
    count = math.prod(dims)
    return KernelLaunch(spec, (round_up(count, WORK_GROUP),), (WORK_GROUP,), args)


def check_same_dims(reference_field: str, reference: TensorDesc, others: Mapping[str, TensorDesc]) -> None:
    """Every descriptor in others is a TensorDesc with reference's dims and dtype; FP32 or FP16."""
    check(isinstance(reference, TensorDesc), reference_field, "must be a TensorDesc")
    for field, desc in others.items():
        check(isinstance(desc, TensorDesc), field, "must be a TensorDesc")
        check(desc.dims == reference.dims, f"{field}.dims", f"{desc.dims} != {reference_field} dims {reference.dims}")
        check(desc.dtype == reference.dtype, f"{field}.dtype",
              f"{desc.dtype.value} != {reference_field} dtype {reference.dtype.value}")
    if reference.dtype not in POINTWISE_DTYPES:
        raise NotSupported(f"{reference_field}: {reference.dtype.value} is not implemented")
    if reference.element_count > MAX_ELEMENTS:
        raise NotSupported(f"{reference_field}: more than 2^31 - 1 elements")


def scalar(value, field: str, minimum: float | None = None) -> np.float32:
    """value as a finite float32 kernel argument (at least minimum when given), else BadParam(field)."""
    number = as_float32(value, field)   # messages are formatted only when a check fails (a warm call's path)
    if minimum is not None and number < minimum:
        raise BadParam(field, f"must be >= {minimum}, got {number}")
    return number
