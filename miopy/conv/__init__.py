"""Convolution: descriptors, the problem, solvers and their registry, the descriptor API and functional ops."""
from .api import (
                  ConvAlgoPerf,
                  convolution_backward_data,
                  convolution_backward_weights,
                  convolution_forward,
                  convolution_plan,
                  find,
                  find_convolution,
)
from .descriptor import ConvDesc
from .functional import conv2d, conv_transpose2d
from .problem import ConvProblem, Direction, map_problem
from .registry import REGISTRY

# The names miopy re-exports (miopy.<name>); the rest stay miopy.conv.<name>.
TOP_LEVEL = ("ConvAlgoPerf", "ConvDesc", "ConvProblem", "Direction", "conv2d", "conv_transpose2d",
            "convolution_backward_data", "convolution_backward_weights", "convolution_forward", "convolution_plan",
            "find_convolution", "map_problem")
__all__ = ["REGISTRY", "ConvAlgoPerf", "ConvDesc", "ConvProblem", "Direction", "conv2d", "conv_transpose2d",
           "convolution_backward_data", "convolution_backward_weights", "convolution_forward", "convolution_plan",
           "find", "find_convolution", "map_problem"]
