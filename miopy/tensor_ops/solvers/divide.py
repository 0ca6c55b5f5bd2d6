"""OpTensorDivide: c = (alpha1 * a) / (alpha2 * b) + beta * c, B broadcast over A, any strides."""
from __future__ import annotations

from ...device import DeviceInfo
from ...kernel_cache import KernelSpec
from ...pointwise import pointwise_defines
from ...solver import KernelLaunch, Params, Solution, Solver, require, round_up
from ..descriptor import TensorOp
from ..problem import DTYPES, TensorOpProblem
from .packed import SCALARS, WG, require_index_range


class OpTensorDivide(Solver[TensorOpProblem]):
    """Division, which MIOpen's OpTensor lacks (ONNX's Div, torch.div): one work-item per element with 4-D
    indexing, A, B and C addressed by their own strides and B's broadcast dims by stride 0
    (tensor_ops_div.cl). IEEE division, so a zero divisor gives inf or NaN as NumPy does. Applies to the
    DIV op only; the other ops run on OpTensorPacked / OpTensorGeneric."""

    id = "OpTensorDivide"
    algorithm = "elementwise_strided"
    dtypes = DTYPES

    def applicability(self, problem: TensorOpProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(problem.op is TensorOp.DIV, f"op {problem.op.name} (OpTensorDivide divides only)")
        require_index_range(problem)

    def solution(self, problem: TensorOpProblem, params: Params) -> Solution:
        b = problem.b
        b_strides = tuple(0 if size == 1 else stride for size, stride in zip(b.dims, b.strides))
        defines = {**pointwise_defines(problem.a.dims, {"A": problem.a, "C": problem.c}),
                   **{f"BS_{axis}": s for axis, s in zip("NCHW", b_strides)}, **problem.dtype.defines}
        spec = KernelSpec.make("tensor_ops_div.cl", "op_tensor_div", defines)
        launch = KernelLaunch(spec, (round_up(problem.a.element_count, WG),), (WG,), ("a", "b", "c", *SCALARS))
        return Solution(self.id, params, (launch,))
