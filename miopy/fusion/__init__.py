"""Fusion: plans that run a convolution with bias, batch-norm inference and activation in one kernel."""
from .api import conv_bias_activation_forward, convolution_forward_bias
from .epilogue import BatchNormMode, Epilogue
from .plan import ActivationForwardOp, BatchNormInferenceOp, BiasForwardOp, ConvForwardOp, FusionPlan, OperatorArgs

__all__ = ["ActivationForwardOp", "BatchNormInferenceOp", "BatchNormMode", "BiasForwardOp", "ConvForwardOp",
           "Epilogue", "FusionPlan", "OperatorArgs", "conv_bias_activation_forward", "convolution_forward_bias"]
