"""What every convolution solver shares: the ConvSolver base (what a convolution kernel family adds to the
shared Solver interface) and the defines every convolution kernel takes (problem sizes and the storage type as
compile-time constants).

A convolution solver states the directions it implements, and may apply a fusion epilogue (bias,
batch-norm inference, a residual add, activation) before it stores the forward output: ``solution(problem, params,
epilogue)`` receives any object with ``defines()`` and ``args`` (miopy.fusion.Epilogue).
"""
from __future__ import annotations

from typing import Any, ClassVar

from ...device import DeviceInfo
from ...solver import Params, Solution, Solver, require
from ...tensor import DataType
from ..problem import ConvProblem, Direction


class ConvSolver(Solver[ConvProblem]):
    """A family of kernels for convolution problems (see miopy.solver.Solver for the interface)."""

    directions: ClassVar[frozenset[Direction]] = frozenset({Direction.FORWARD})
    # Every convolution kernel is typed by kernels/types.h: half storage, float arithmetic.
    dtypes: ClassVar[frozenset[DataType]] = frozenset({DataType.FLOAT32, DataType.FLOAT16})
    # Which epilogue ops (miopy.fusion.Epilogue.ops) the hook serves, when supports_epilogue is set.
    epilogue_ops: ClassVar[frozenset[str]] = frozenset({"bias", "batchnorm", "add", "activation"})
    supports_epilogue: ClassVar[bool] = False
    # The device type ("CPU") a solver is written for and applies to only; the heuristic ranks it first there.
    device_class: ClassVar[str | None] = None
    # Whether the kernels multiply on tensor cores: fp32 operands are then rounded to TF32, so such a solver
    # applies to fp32 problems only under math_mode "tf32" (fp16 products are exact: no mode needed).
    tensor_cores: ClassVar[bool] = False

    def runs_on(self, dev: DeviceInfo) -> bool:
        """Not a tensor-core solver on a device without PTX mma, nor a solver for another class of device."""
        if self.tensor_cores and not dev.ptx_mma:
            return False
        return self.device_class is None or self.device_class in dev.device_type

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        require(problem.direction in self.directions, f"direction {problem.direction.name} not implemented")
        super().applicability(problem, dev)
        require(not self.tensor_cores or problem.dtype is not DataType.FLOAT32 or problem.math_mode == "tf32",
                "tensor cores round fp32 to TF32: needs math_mode='tf32'")

    def solution(self, problem: ConvProblem, params: Params, epilogue: Any = None) -> Solution:
        raise NotImplementedError


def problem_defines(p: ConvProblem) -> dict[str, int]:
    """Sizes, pads, strides, dilations and groups of p as -D defines (so index arithmetic folds), and the
    data type's (MIOPY_HALF, kernels/types.h): the kernel cache key names the dtype through them."""
    return {**p.dtype.defines, "N": p.n, "C": p.c, "H": p.in_h, "W": p.in_w, "K": p.k, "R": p.r, "S": p.s,
            "P": p.out_h, "Q": p.out_w, "G": p.groups, "PAD_H": p.pad_h, "PAD_W": p.pad_w,
            "STRIDE_H": p.stride_h, "STRIDE_W": p.stride_w, "DIL_H": p.dil_h, "DIL_W": p.dil_w}


def stride_defines(p: ConvProblem) -> dict[str, int]:
    """Element strides of x, w and y as XS_*, WS_*, YS_* defines."""
    out = {}
    for prefix, desc, names in (("XS", p.x, "NCHW"), ("WS", p.w, "KCRS"), ("YS", p.y, "NKPQ")):
        out.update({f"{prefix}_{a}": st for a, st in zip(names, desc.strides)})
    return out
