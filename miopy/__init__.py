"""miopy: deep-learning convolution primitives for OpenCL devices, in the mould of MIOpen."""
from .activation import ActivationMode, activation_backward, activation_forward
from .api import (conv2d, conv_transpose2d, convolution_backward_data, convolution_backward_weights,
                  convolution_forward, find_convolution)
from .convolution import ConvDesc, ConvProblem, Direction
from .errors import (BadParam, CompileError, DeviceNotFound, LaunchError, MiopyError, NotApplicable,
                     NotSupported)
from .epilogue import BatchNormMode
from .find import ConvAlgoPerf, FindResult, compile_solution, find_problem, get_solutions
from .fusion import (ActivationForwardOp, BatchNormInferenceOp, BiasForwardOp, ConvForwardOp, FusionPlan,
                     OperatorArgs, conv_bias_activation_forward, convolution_forward_bias)
from .handle import DeviceInfo, Handle
from .tensor import DataType, TensorDesc
from .version import __version__

__all__ = [
    "ActivationForwardOp", "ActivationMode", "BadParam", "BatchNormInferenceOp", "BatchNormMode",
    "BiasForwardOp", "CompileError", "ConvAlgoPerf", "ConvDesc", "ConvForwardOp", "ConvProblem", "DataType",
    "DeviceInfo", "DeviceNotFound", "Direction", "FindResult", "FusionPlan", "Handle", "LaunchError",
    "MiopyError", "NotApplicable", "NotSupported", "OperatorArgs", "TensorDesc", "__version__",
    "activation_backward", "activation_forward", "conv2d", "conv_bias_activation_forward", "conv_transpose2d",
    "convolution_backward_data", "convolution_backward_weights", "convolution_forward",
    "convolution_forward_bias", "compile_solution", "find_convolution", "find_problem", "get_solutions",
]
