"""Batch normalisation (MIOpen's miopenBatchNormalization*): spatial and per-activation modes, forward
training, forward inference and backward; descriptor API, functional form and solvers."""
from .api import (
    batch_normalization_backward,
    batch_normalization_forward_inference,
    batch_normalization_forward_training,
    batch_normalization_plan,
)
from .descriptor import BatchNormMode, derive_bn_tensor_descriptor
from .functional import batch_norm, batch_norm_backward, native_batch_norm
from .problem import BatchNormProblem, BnDirection
from .registry import REGISTRY

# The names miopy re-exports (miopy.<name>); the rest stay miopy.batchnorm.<name>.
TOP_LEVEL = ("BatchNormMode", "batch_norm", "batch_norm_backward", "batch_normalization_backward",
            "batch_normalization_forward_inference", "batch_normalization_forward_training",
            "derive_bn_tensor_descriptor", "native_batch_norm")
__all__ = ["REGISTRY", "BatchNormMode", "BatchNormProblem", "BnDirection", "batch_norm", "batch_norm_backward",
           "batch_normalization_backward", "batch_normalization_forward_inference",
           "batch_normalization_forward_training", "batch_normalization_plan", "derive_bn_tensor_descriptor",
           "native_batch_norm"]
