"""miopy: deep-learning convolution primitives for OpenCL devices, in the mould of MIOpen."""
from .activation import ActivationMode, activation_backward, activation_forward
from .api import (conv2d, conv_transpose2d, convolution_backward_data, convolution_backward_weights,
                  convolution_forward, find_convolution)
from .convolution import ConvDesc, ConvProblem, Direction
from .errors import (BadParam, CompileError, DeviceNotFound, LaunchError, MiopyError, NotApplicable,
                     NotSupported)
from .find import ConvAlgoPerf, FindResult, find_problem
from .handle import DeviceInfo, Handle
from .tensor import DataType, TensorDesc
from .version import __version__

__all__ = [
    "ActivationMode", "activation_backward", "activation_forward",
    "BadParam", "CompileError", "ConvAlgoPerf", "ConvDesc", "ConvProblem", "DataType", "DeviceInfo",
    "DeviceNotFound", "Direction", "FindResult", "Handle", "LaunchError", "MiopyError", "NotApplicable",
    "NotSupported", "TensorDesc", "__version__", "conv2d", "conv_transpose2d", "convolution_backward_data",
    "convolution_backward_weights", "convolution_forward", "find_convolution", "find_problem",
]
