"""miopy: deep-learning primitives for OpenCL devices, in the mould of MIOpen."""
from .activation import ActivationMode, activation_backward, activation_forward
from .batchnorm import (
                   BatchNormMode,
                   batch_norm,
                   batch_norm_backward,
                   batch_normalization_backward,
                   batch_normalization_forward_inference,
                   batch_normalization_forward_training,
                   derive_bn_tensor_descriptor,
                   native_batch_norm,
)
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
from .dropout import (
                   DropoutDescriptor,
                   dropout_backward,
                   dropout_forward,
                   dropout_get_reserve_space_size,
                   dropout_get_states_size,
                   restore_dropout_descriptor,
                   set_dropout_descriptor,
)
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
                   BiasForwardOp,
                   ConvForwardOp,
                   FusionPlan,
                   OperatorArgs,
                   TensorAddOp,
                   conv_bias_activation_forward,
                   convolution_forward_bias,
)
from .handle import Handle
from .lrn import LRNDesc, LRNMode, local_response_norm, lrn_backward, lrn_forward, lrn_workspace_size
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
from .softmax import SoftmaxAlgorithm, SoftmaxMode, softmax_backward, softmax_forward
from .tensor import DataType, TensorDesc
from .tensor_ops import TensorOp, op_tensor, scale_tensor, set_tensor, transform_tensor
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
    # batch normalisation
    "batch_norm", "batch_norm_backward", "batch_normalization_backward", "batch_normalization_forward_inference",
    "batch_normalization_forward_training", "derive_bn_tensor_descriptor", "native_batch_norm",
    # tensor operations (functional: miopy.tensor_ops.add, mul, minimum, maximum, fill, scale)
    "TensorAddOp", "TensorOp", "op_tensor", "scale_tensor", "set_tensor", "transform_tensor",
    # dropout (functional: miopy.dropout.dropout, native_dropout, native_dropout_backward, Generator)
    "DropoutDescriptor", "dropout_backward", "dropout_forward", "dropout_get_reserve_space_size",
    "dropout_get_states_size", "restore_dropout_descriptor", "set_dropout_descriptor",
    "PoolingDesc", "PoolingMode", "adaptive_avg_pool2d", "avg_pool2d", "max_pool2d", "pooling_backward",
    "pooling_forward", "pooling_workspace_size",
    "SoftmaxAlgorithm", "SoftmaxMode", "softmax_backward", "softmax_forward",
    "LRNDesc", "LRNMode", "local_response_norm", "lrn_backward", "lrn_forward", "lrn_workspace_size",
]
