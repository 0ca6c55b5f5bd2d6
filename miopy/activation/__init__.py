"""Activation: MIOpen's ten activation modes, standalone forward and backward ops."""
from .api import activation_backward, activation_forward
from .descriptor import ActivationMode, enum_member

# The names miopy re-exports (miopy.<name>); the rest stay miopy.activation.<name>.
TOP_LEVEL = ("ActivationMode", "activation_backward", "activation_forward")
__all__ = ["ActivationMode", "activation_backward", "activation_forward", "enum_member"]
