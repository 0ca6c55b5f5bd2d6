"""Dropout (MIOpen's miopenDropout*): seeded counter-based masks in a reserve space, inverted scaling;
descriptor API, functional form (dropout, native_dropout, dropout_backward, Generator) and solvers."""
from .api import (
    dropout_backward,
    dropout_forward,
    dropout_get_reserve_space_size,
    dropout_get_states_size,
    dropout_plan,
    restore_dropout_descriptor,
    set_dropout_descriptor,
)
from .descriptor import DropoutDescriptor
from .functional import Generator, default_generator, dropout, native_dropout, native_dropout_backward
from .problem import DropoutDirection, DropoutProblem
from .registry import REGISTRY

# The names miopy re-exports (miopy.<name>); the rest stay miopy.dropout.<name>.
TOP_LEVEL = ("DropoutDescriptor", "dropout_backward", "dropout_forward", "dropout_get_reserve_space_size",
            "dropout_get_states_size", "restore_dropout_descriptor", "set_dropout_descriptor")
__all__ = ["REGISTRY", "DropoutDescriptor", "DropoutDirection", "DropoutProblem", "Generator", "default_generator",
           "dropout", "dropout_backward", "dropout_forward", "dropout_get_reserve_space_size",
           "dropout_get_states_size", "dropout_plan", "native_dropout", "native_dropout_backward",
           "restore_dropout_descriptor", "set_dropout_descriptor"]
