"""Fusion: plans that run a convolution with bias, batch-norm inference, a residual add and activation in
one kernel."""
from .api import conv_bias_activation_forward, convolution_forward_bias
from .epilogue import BatchNormMode, Epilogue
from .plan import (
    ActivationForwardOp,
    BatchNormInferenceOp,
    BiasForwardOp,
    ConvForwardOp,
    FusionPlan,
    OperatorArgs,
    TensorAddOp,
)

# The names miopy re-exports (miopy.<name>); the rest stay miopy.fusion.<name>.
TOP_LEVEL = ("ActivationForwardOp", "BatchNormInferenceOp", "BiasForwardOp", "ConvForwardOp", "FusionPlan",
            "OperatorArgs", "TensorAddOp", "conv_bias_activation_forward", "convolution_forward_bias")
__all__ = ["ActivationForwardOp", "BatchNormInferenceOp", "BatchNormMode", "BiasForwardOp", "ConvForwardOp",
           "Epilogue", "FusionPlan", "OperatorArgs", "TensorAddOp", "conv_bias_activation_forward",
           "convolution_forward_bias"]
