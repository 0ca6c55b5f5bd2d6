"""Activation: MIOpen's activation modes (and miopy's HARDSWISH and CLAMP), element-wise forward and backward;
descriptor API and PyTorch-style functional forms (relu, sigmoid, leaky_relu, ...)."""
from .api import activation_backward, activation_forward, backward_plan, forward_plan
from .descriptor import ActivationMode
from .functional import elu, hardswish, hardtanh, leaky_relu, relu, relu6, sigmoid, softplus, tanh
from .problem import ActivationProblem, Direction
from .registry import REGISTRY

# The names miopy re-exports (miopy.<name>); the rest stay miopy.activation.<name>.
TOP_LEVEL = ("ActivationMode", "activation_backward", "activation_forward")
__all__ = ["REGISTRY", "ActivationMode", "ActivationProblem", "Direction", "activation_backward", "activation_forward",
           "backward_plan", "elu", "forward_plan", "hardswish", "hardtanh", "leaky_relu", "relu", "relu6", "sigmoid",
           "softplus", "tanh"]
