"""What every batch-norm solver shares: the base class, data defines, optional operands and scalar roles."""
from __future__ import annotations

from typing import ClassVar

from ...device import DeviceInfo, index_reason
from ...solver import Solver, require, require_none
from ...tensor import DataType, TensorDesc
from ..descriptor import BatchNormMode
from ..problem import DATA_DTYPES, RUNNING_ROLES, SAVED_ROLES, BatchNormProblem, BnDirection

ELEMENTWISE_WG = 256   # work-group of the element-wise passes
# Per-call numbers, bound by role at run time (never compiled in).
FORWARD_SCALARS = ("alpha", "beta", "epsilon", "factor")
BACKWARD_SCALARS = ("alpha_data", "beta_data", "alpha_param", "beta_param", "epsilon")
INFERENCE_SCALARS = ("alpha", "beta", "epsilon")


class BatchNormSolver(Solver[BatchNormProblem]):
    """A batch-norm kernel family: the computations and modes it implements."""

    directions: ClassVar[frozenset[BnDirection]]
    modes: ClassVar[frozenset[BatchNormMode]] = frozenset(BatchNormMode)
    dtypes: ClassVar[frozenset[DataType]] = DATA_DTYPES

    def applicability(self, problem: BatchNormProblem, dev: DeviceInfo) -> None:
        require(problem.direction in self.directions, f"{problem.direction.name} is not implemented")
        require(problem.mode in self.modes, f"{problem.mode.name} mode is not implemented")
        super().applicability(problem, dev)
        require_none(index_reason(*(d.element_span for d in problem.tensors().values())))


def data_defines(problem: BatchNormProblem) -> dict[str, int]:
    """Dims, storage type, and each data tensor's strides and plane flag (batchnorm.h)."""
    x = problem.x
    defines = {"N": x.n, "C": x.c, "H": x.h, "W": x.w, **x.dtype.defines}
    tensors = {"X": x}
    if problem.direction is BnDirection.BACKWARD:
        assert problem.dy is not None
        tensors.update(DY=problem.dy, DX=problem.y)
    else:
        tensors["Y"] = problem.y
    for prefix, desc in tensors.items():
        defines.update(_strides(prefix, desc))
    return defines


def _strides(prefix: str, desc: TensorDesc) -> dict[str, int]:
    out = {f"{prefix}S_{axis}": stride for axis, stride in zip("NCHW", desc.strides)}
    out[f"{prefix}_PLANE"] = int(desc.strides[3] == 1 and (desc.h == 1 or desc.strides[2] == desc.w))
    return out


def stat_defines(problem: BatchNormProblem) -> dict[str, int]:
    """batchnorm_stats.h's RUNNING, SAVED and COUNT (plus BACKWARD for the backward kernels)."""
    defines = {"RUNNING": int(problem.running), "SAVED": int(problem.saved), "COUNT": problem.count}
    if problem.direction is BnDirection.BACKWARD:
        defines["BACKWARD"] = 1
    return defines


def optional_roles(problem: BatchNormProblem) -> tuple[str, ...]:
    """Running then saved statistics roles, as the kernels' RUNNING_PARAMS SAVED_PARAMS declare them."""
    return (RUNNING_ROLES if problem.running else ()) + (SAVED_ROLES if problem.saved else ())
