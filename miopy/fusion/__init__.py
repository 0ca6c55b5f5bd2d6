"""Fusion: plans that run a convolution with bias, batch-norm inference, a residual add and activation in
one kernel (MIOpen's fusion plans), or batch-norm inference (+ add, + activation) on its own."""
from .api import conv_bias_activation_forward, convolution_forward_bias
from .descriptor import (
    ActivationForwardOp,
    BatchNormInferenceOp,
    BiasForwardOp,
    ConvForwardOp,
    FusionPlan,
    OperatorArgs,
    TensorAddOp,
)
from .epilogue import BatchNormMode, Epilogue
from .functional import conv2d_bias_activation
from .problem import FusedProblem
from .registry import REGISTRY

# The names miopy re-exports (miopy.<name>); the rest stay miopy.fusion.<name>.
TOP_LEVEL = ("ActivationForwardOp", "BatchNormInferenceOp", "BiasForwardOp", "ConvForwardOp", "FusionPlan",
             "OperatorArgs", "TensorAddOp", "conv_bias_activation_forward", "convolution_forward_bias")
__all__ = ["REGISTRY", "ActivationForwardOp", "BatchNormInferenceOp", "BatchNormMode", "BiasForwardOp",
           "ConvForwardOp", "Epilogue", "FusedProblem", "FusionPlan", "OperatorArgs", "TensorAddOp",
           "conv2d_bias_activation", "conv_bias_activation_forward", "convolution_forward_bias"]
