"""miopenBatchNormMode_t and MIOpen's derived descriptor of the per-channel (or per-element) operands."""
from __future__ import annotations

import enum

from ..errors import check
from ..tensor import DataType, TensorDesc, enum_member


class BatchNormMode(enum.IntEnum):
    """miopenBatchNormMode_t: values are MIOpen's."""

    PER_ACTIVATION = 0   # scale / bias / mean / variance per (channel, h, w) element: shape 1 x C x H x W
    SPATIAL = 1          # per channel: shape 1 x C x 1 x 1

    @classmethod
    def of(cls, value: BatchNormMode | int | str, field: str = "bn_mode") -> BatchNormMode:
        return enum_member(cls, value, field, "batch-norm mode")


def derive_bn_tensor_descriptor(x_desc: TensorDesc, mode: BatchNormMode | int | str) -> TensorDesc:
    """The descriptor of scale, bias, means and variances for data x_desc (MIOpen's DeriveBNTensorDescriptor):
    1 x C x 1 x 1 (spatial) or 1 x C x H x W (per-activation), packed, FP32 whatever x's type (as MIOpen,
    whose half-precision batch norm keeps its statistics and parameters in float)."""
    check(isinstance(x_desc, TensorDesc), "x_desc", "must be a TensorDesc")
    mode = BatchNormMode.of(mode)
    _, c, h, w = x_desc.dims
    dims = (1, c, 1, 1) if mode is BatchNormMode.SPATIAL else (1, c, h, w)
    return TensorDesc(DataType.FLOAT32, dims)
