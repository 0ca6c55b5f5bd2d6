"""OpTensorPacked: A, B and C packed with equal dims: a flat, vectorised element-wise kernel."""
from __future__ import annotations

import numpy as np

from ...device import DeviceInfo, index_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, Solver, require, require_none, round_up
from ..descriptor import TensorOp
from ..problem import DTYPES, TensorOpProblem

WG = 256
SCALARS = ("alpha1", "alpha2", "beta")


def require_index_range(problem: TensorOpProblem) -> None:
    """tensor_ops.cl's element indices and work-item ids are 32-bit ints: NotApplicable past 2^31 elements."""
    require_none(index_reason(*(d.element_span for d in (problem.a, problem.b, problem.c))))


class OpTensorPacked(Solver[TensorOpProblem]):
    """Flat indexing, VEC elements per work-item with vector loads (tensor_ops.cl, op_tensor_packed): no
    index arithmetic at all. Applies only when A, B and C are packed with A's dims (no broadcast)."""

    id = "OpTensorPacked"
    algorithm = "elementwise_flat"
    dtypes = DTYPES
    grid = {"VEC": (1, 4)}
    param_doc = {"VEC": "elements per work-item (vector width)"}

    def applicability(self, problem: TensorOpProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(problem.op is not TensorOp.DIV, "division runs on OpTensorDivide")
        require(not problem.broadcast, "B is broadcast (OpTensorGeneric handles it)")
        require(all(d.is_packed for d in (problem.a, problem.b, problem.c)), "a tensor is not packed")
        require_index_range(problem)

    def invalid_reason(self, problem: TensorOpProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason is None and problem.a.element_count % params["VEC"]:
            reason = f"{problem.a.element_count} elements are not a multiple of VEC={params['VEC']}"
        return reason

    def default_params(self, problem: TensorOpProblem, dev: DeviceInfo) -> Params:
        return {"VEC": 4 if problem.a.element_count % 4 == 0 else 1}

    def solution(self, problem: TensorOpProblem, params: Params) -> Solution:
        vec = params["VEC"]
        defines = {"OPTENSOR": 1, "VEC": vec, "COUNT": problem.a.element_count, **problem.dtype.defines}
        spec = KernelSpec.make("tensor_ops.cl", "op_tensor_packed", defines)
        items = problem.a.element_count // vec
        launch = KernelLaunch(spec, (round_up(items, WG),), (WG,), ("a", "b", "c", np.int32(problem.op), *SCALARS))
        return Solution(self.id, params, (launch,))
