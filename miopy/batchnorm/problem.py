"""The batch-normalisation problem: which computation (forward training, forward inference, backward),
which mode, the data and parameter descriptors, and which optional operands are present.

Roles (the kernels' argument names and the descriptor API's argument names):
  forward training:  x, y, scale, bias [, running_mean, running_var] [, saved_mean, saved_inv_variance]
  forward inference: x, y, scale, bias, estimated_mean, estimated_variance
  backward:          x, dy, dx, scale, dscale, dbias [, saved_mean, saved_inv_variance]
Numbers (alpha, beta, epsilon, the exponential average factor) are per-call kernel arguments, never part
of the problem.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..device import INT_LIMIT
from ..errors import BadParam, NotSupported, check
from ..solver import Registry
from ..tensor import DataType, TensorDesc
from .descriptor import BatchNormMode, derive_bn_tensor_descriptor


class BnDirection(enum.Enum):
    FORWARD_TRAINING = "fwdtrain"
    FORWARD_INFERENCE = "fwdinfer"
    BACKWARD = "bwd"


RUNNING_ROLES = ("running_mean", "running_var")
SAVED_ROLES = ("saved_mean", "saved_inv_variance")
ESTIMATED_ROLES = ("estimated_mean", "estimated_variance")
DATA_DTYPES = frozenset({DataType.FLOAT32, DataType.FLOAT16})


# epsilon and the running average's factor find, tuning and the tests run with (the reference hook's).
CHECK_EPSILON, CHECK_FACTOR = 1e-5, 0.1

@dataclass(frozen=True)
class BatchNormProblem:
    """One batch-norm computation. x is the forward input; y the forward output (dx in backward); dy the
    backward's incoming gradient (None forward); param the descriptor of every per-channel operand.

    running: forward training updates running_mean / running_var. saved: forward training writes
    saved_mean / saved_inv_variance, or backward reads them (else it recomputes the batch statistics).
    """

    direction: BnDirection
    mode: BatchNormMode
    x: TensorDesc
    y: TensorDesc
    param: TensorDesc
    dy: TensorDesc | None = None
    running: bool = False
    saved: bool = False
    _key: str = field(init=False, repr=False, compare=False)
    registry: ClassVar[Registry]

    def __post_init__(self):
        object.__setattr__(self, "_key", self._make_key())

    @classmethod
    def create(cls, direction: BnDirection, mode, x: TensorDesc, y: TensorDesc, param: TensorDesc,
               dy: TensorDesc | None = None, running: bool = False, saved: bool = False,
               names: tuple[str, str, str] = ("x_desc", "y_desc", "bn_desc")) -> BatchNormProblem:
        """A validated problem; names are the user's names for the x, y (or dx) and parameter descriptors."""
        mode = BatchNormMode.of(mode)
        x_name, y_name, param_name = names
        check(isinstance(x, TensorDesc), x_name, "must be a TensorDesc")
        check(dy is not None or direction is not BnDirection.BACKWARD, "dy_desc", "must be a TensorDesc")
        others = {y_name: y} if dy is None else {"dy_desc": dy, y_name: y}
        for name, desc in others.items():
            check(isinstance(desc, TensorDesc), name, "must be a TensorDesc")
            check(desc.dims == x.dims, f"{name}.dims", f"{desc.dims} != {x_name} dims {x.dims}")
            check(desc.dtype is x.dtype, f"{name}.dtype", f"{desc.dtype.value} != {x_name} dtype {x.dtype.value}")
        if x.dtype not in DATA_DTYPES:
            raise NotSupported(f"{x_name}: batch norm of {x.dtype.value} is not implemented")
        check(isinstance(param, TensorDesc), param_name, "must be a TensorDesc")
        derived = derive_bn_tensor_descriptor(x, mode)
        check(param.dims == derived.dims, f"{param_name}.dims",
              f"{mode.name} batch norm of {x.dims} needs {derived.dims}, got {param.dims}")
        check(param.dtype is DataType.FLOAT32, f"{param_name}.dtype",
              f"scale, bias, means and variances are FP32 (see derive_bn_tensor_descriptor), got {param.dtype.value}")
        check(param.is_packed, f"{param_name}.strides", "must be packed")
        if max(d.element_span for d in (x, y, *([dy] if dy else []))) >= INT_LIMIT:
            raise NotSupported(f"{x_name}: tensors of 2^31 elements or more are not supported (32-bit indices)")
        check(not running or direction is BnDirection.FORWARD_TRAINING, "running_mean",
              "running statistics belong to the training forward")
        check(not saved or direction is not BnDirection.FORWARD_INFERENCE, "saved_mean",
              "saved statistics belong to the training forward and the backward")
        count = x.n * x.h * x.w if mode is BatchNormMode.SPATIAL else x.n
        if count < 2 and direction is BnDirection.FORWARD_TRAINING:
            what = "channel" if mode is BatchNormMode.SPATIAL else "element"
            raise BadParam(f"{x_name}.dims", f"training batch norm needs more than 1 value per {what}, got {x.dims}")
        return cls(direction, mode, x, y, param, dy, running, saved)

    # -- the Problem protocol -------------------------------------------------------------------------
    @property
    def dtype(self) -> DataType:
        return self.x.dtype

    def key(self) -> str:
        return self._key

    def _make_key(self) -> str:
        flags = (f"-r{int(self.running)}" if self.direction is BnDirection.FORWARD_TRAINING else "") + \
                (f"-s{int(self.saved)}" if self.direction is not BnDirection.FORWARD_INFERENCE else "")
        key = (f"bn-{self.direction.value}-{self.mode.name.lower()}-{'x'.join(map(str, self.x.dims))}"
               f"-{self.x.dtype.value}{flags}")
        descs = (self.x, self.y) + ((self.dy,) if self.dy is not None else ())
        if not all(d.is_packed for d in descs):
            key += "-s" + "_".join(",".join(map(str, d.strides)) for d in descs)
        return key

    def tensors(self) -> dict[str, TensorDesc]:
        p = self.param
        if self.direction is BnDirection.BACKWARD:
            assert self.dy is not None
            out = {"x": self.x, "dy": self.dy, "dx": self.y, "scale": p, "dscale": p, "dbias": p}
        else:
            out = {"x": self.x, "y": self.y, "scale": p, "bias": p}
        if self.direction is BnDirection.FORWARD_INFERENCE:
            out.update(dict.fromkeys(ESTIMATED_ROLES, p))
        if self.running:
            out.update(dict.fromkeys(RUNNING_ROLES, p))
        if self.saved:
            out.update(dict.fromkeys(SAVED_ROLES, p))
        return out

    def outputs(self) -> tuple[str, ...]:
        if self.direction is BnDirection.BACKWARD:
            return ("dx", "dscale", "dbias")
        if self.direction is BnDirection.FORWARD_INFERENCE:
            return ("y",)
        return ("y",) + (RUNNING_ROLES if self.running else ()) + (SAVED_ROLES if self.saved else ())

    def reduction_length(self) -> int:
        if self.direction is BnDirection.FORWARD_INFERENCE:
            return 1
        return self.count

    def updated_roles(self) -> tuple[str, ...]:
        """Outputs read before they are written: the running statistics (an exponential average)."""
        return RUNNING_ROLES if self.running else ()

    def positive_roles(self) -> tuple[str, ...]:
        """Inputs random data must keep positive: variances and the saved inverse standard deviation."""
        return ("estimated_variance", "running_var", "saved_inv_variance")

    def scalars(self) -> dict[str, np.float32]:
        """The per-call arguments with the values find, tuning and the tests bind (no blending, CHECK_EPSILON and
        CHECK_FACTOR): what the reference hook answers for."""
        if self.direction is BnDirection.BACKWARD:
            values = {"alpha_data": 1.0, "beta_data": 0.0, "alpha_param": 1.0, "beta_param": 0.0,
                      "epsilon": CHECK_EPSILON}
        elif self.direction is BnDirection.FORWARD_INFERENCE:
            values = {"alpha": 1.0, "beta": 0.0, "epsilon": CHECK_EPSILON}
        else:
            values = {"alpha": 1.0, "beta": 0.0, "epsilon": CHECK_EPSILON, "factor": CHECK_FACTOR}
        return {role: np.float32(value) for role, value in values.items()}

    # -- shape helpers -------------------------------------------------------------------------------
    @property
    def count(self) -> int:
        """Values each statistic is taken over: N*H*W (spatial) or N (per-activation)."""
        x = self.x
        return x.n * x.h * x.w if self.mode is BatchNormMode.SPATIAL else x.n

    @property
    def spatial(self) -> bool:
        return self.mode is BatchNormMode.SPATIAL
