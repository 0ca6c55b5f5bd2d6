"""Tensor operations (MIOpen's OpTensor, SetTensor, ScaleTensor, TransformTensor): descriptor API, functional
form (add, mul, div, minimum, maximum, fill, scale) and the OpTensor solvers."""
from .api import (
           op_tensor,
           op_tensor_plan,
           scale_tensor,
           set_tensor,
           transform_tensor,
           transform_tensor_plan,
           unary_plan,
)
from .descriptor import TensorOp
from .functional import add, div, fill, maximum, minimum, mul, scale
from .problem import TensorOpProblem
from .registry import REGISTRY

# The names miopy re-exports (miopy.<name>); the rest stay miopy.tensor_ops.<name>.
TOP_LEVEL = ("TensorOp", "op_tensor", "scale_tensor", "set_tensor", "transform_tensor")
__all__ = ["REGISTRY", "TensorOp", "TensorOpProblem", "add", "div", "fill", "maximum", "minimum", "mul", "op_tensor",
           "op_tensor_plan", "scale", "scale_tensor", "set_tensor", "transform_tensor",
           "transform_tensor_plan", "unary_plan"]
