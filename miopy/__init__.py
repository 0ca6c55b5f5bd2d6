"""miopy: deep-learning primitives for OpenCL devices, in the mould of MIOpen.

The top level holds the shared machinery (Handle, TensorDesc, find, plans, errors) and every family's
``TOP_LEVEL`` names (miopy.families.FAMILIES: convolution, pooling, softmax, ...); each family's other
public names (its functional forms, problems, registry) live in its package, e.g. ``miopy.softmax.softmax``.
"""
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
from .families import FAMILIES
from .find import AlgoPerf, FindResult, compile_solution, find_problem, get_solutions
from .handle import Handle
from .plan import Plan, Sequence
from .tensor import DataType, TensorDesc
from .version import __version__

__all__ = [
    "AlgoPerf", "BadParam", "CompileError", "DataType", "DeviceInfo", "DeviceNotFound", "FindResult", "Handle",
    "LaunchError", "MiopyError", "NotApplicable", "NotSupported", "OutOfResources", "Plan", "Sequence", "TensorDesc",
    "__version__", "compile_solution", "find_problem", "get_solutions",
]

for _family in FAMILIES:
    _package = _family.module()
    globals().update({_name: getattr(_package, _name) for _name in _family.exports})
    __all__ += _family.exports
del _family, _package
