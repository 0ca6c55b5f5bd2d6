"""OpTensorGeneric: any strides, B broadcast over A: one work-item per element with 4-D indexing."""
from __future__ import annotations

import numpy as np

from ...device import DeviceInfo
from ...kernel_cache import KernelSpec
from ...pointwise import pointwise_defines
from ...solver import KernelLaunch, Params, Solution, Solver, require, round_up
from ..descriptor import TensorOp
from ..problem import DTYPES, TensorOpProblem
from .packed import SCALARS, WG, require_index_range


class OpTensorGeneric(Solver[TensorOpProblem]):
    """Decomposes each element's index into (n, c, h, w) and addresses A, B and C by their own strides; B's
    broadcast dims get stride 0 (tensor_ops.cl, op_tensor_generic). Any layout, in place allowed; pays the
    index arithmetic the packed kernel avoids."""

    id = "OpTensorGeneric"
    algorithm = "elementwise_strided"
    dtypes = DTYPES

    def applicability(self, problem: TensorOpProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(problem.op is not TensorOp.DIV, "division runs on OpTensorDivide")
        require_index_range(problem)

    def solution(self, problem: TensorOpProblem, params: Params) -> Solution:
        b = problem.b
        b_strides = tuple(0 if size == 1 else stride for size, stride in zip(b.dims, b.strides))
        defines = {**pointwise_defines(problem.a.dims, {"A": problem.a, "C": problem.c}),
                   **{f"BS_{axis}": s for axis, s in zip("NCHW", b_strides)}, "OPTENSOR": 1,
                   **problem.dtype.defines}
        spec = KernelSpec.make("tensor_ops.cl", "op_tensor_generic", defines)
        args = ("a", "b", "c", np.int32(problem.op), *SCALARS)
        launch = KernelLaunch(spec, (round_up(problem.a.element_count, WG),), (WG,), args)
        return Solution(self.id, params, (launch,))
