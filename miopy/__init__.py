"""miopy: deep-learning primitives for OpenCL devices, in the mould of MIOpen."""
from .activation import ActivationMode, activation_backward, activation_forward
from .conv import (
                   ConvAlgoPerf,
                   ConvDesc,
                   ConvProblem,
                   Direction,
                   conv2d,
                   conv_transpose2d,
                   convolution_backward_data,
                   convolution_backward_weights,
                   convolution_forward,
                   convolution_plan,
                   find_convolution,
)
from .conv.problem import map_problem
from .device import DeviceInfo
from .errors import (
                   BadParam,
                   CompileError,
                   DeviceNotFound,
                   LaunchError,
                   MiopyError,
                   NotApplicable,
                   NotSupported,
                   OutOfResources,
)
from .find import AlgoPerf, FindResult, compile_solution, find_problem, get_solutions
from .fusion import (
                   ActivationForwardOp,
                   BatchNormInferenceOp,
                   BatchNormMode,
                   BiasForwardOp,
                   ConvForwardOp,
                   FusionPlan,
                   OperatorArgs,
                   conv_bias_activation_forward,
                   convolution_forward_bias,
)
from .handle import Handle
from .plan import Plan, Sequence
from .pooling import (
                   PoolingDesc,
                   PoolingMode,
                   adaptive_avg_pool2d,
                   avg_pool2d,
                   max_pool2d,
                   pooling_backward,
                   pooling_forward,
                   pooling_workspace_size,
)
from .tensor import DataType, TensorDesc
from .version import __version__

__all__ = [
    "ActivationForwardOp", "ActivationMode", "AlgoPerf", "BadParam", "BatchNormInferenceOp", "BatchNormMode",
    "BiasForwardOp", "CompileError", "ConvAlgoPerf", "ConvDesc", "ConvForwardOp", "ConvProblem", "DataType",
    "DeviceInfo", "DeviceNotFound", "Direction", "FindResult", "FusionPlan", "Handle", "LaunchError",
    "MiopyError", "NotApplicable", "NotSupported", "OperatorArgs", "OutOfResources", "Plan", "Sequence",
    "TensorDesc", "__version__", "activation_backward", "activation_forward", "compile_solution", "conv2d",
    "conv_bias_activation_forward", "conv_transpose2d", "convolution_backward_data", "convolution_backward_weights",
    "convolution_forward", "convolution_forward_bias", "convolution_plan", "find_convolution", "find_problem",
    "get_solutions", "map_problem",
    "PoolingDesc", "PoolingMode", "adaptive_avg_pool2d", "avg_pool2d", "max_pool2d", "pooling_backward",
    "pooling_forward", "pooling_workspace_size",
]
