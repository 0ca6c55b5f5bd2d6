"""Fused solvers: the kernel families that run a fusion plan.

A fused solver works on a ``FusedProblem`` (an optional forward convolution, then an epilogue of bias,
batch-norm inference, a residual add of z and activation). Like a convolution solver it is stateless, has a
stable id and states its applicability as one-line guards, so a plan that cannot be fused says why.

- ``ConvEpilogueFused`` wraps any registered convolution solver with ``supports_epilogue``: its kernel
  applies the epilogue before storing y. One instance per such solver, in registry order, so a new
  solver that implements the hook is fused the moment it is registered.
- ``BatchNormActivInference`` runs batch-norm inference (+ add, + activation) alone, one pointwise kernel.
  Every convolution solver with the hook serves the residual add (``ConvSolver.epilogue_ops``); one that
  could not would leave "add" out of its epilogue_ops, and its fused wrapper then says so.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..conv import REGISTRY as CONV_REGISTRY
from ..conv.problem import ConvProblem, Direction
from ..conv.solver import ConvSolver
from ..device import DeviceInfo, index_reason
from ..find import params_for
from ..handle import Handle
from ..plan import checked_solution
from ..pointwise import pointwise_launch
from ..solver import Applicable, Params, Solution, require, require_none
from ..tensor import DataType, TensorDesc
from .epilogue import Epilogue


@dataclass(frozen=True)
class FusedProblem:
    """What a fusion plan computes: x -> [forward convolution] -> epilogue -> y."""

    x: TensorDesc
    y: TensorDesc
    epilogue: Epilogue
    conv: ConvProblem | None = None

    def key(self) -> str:
        if self.conv is not None:
            base = self.conv.key()
        else:
            base = "x".join(map(str, self.x.dims)) + f"-{self.x.dtype.value}"
            if not (self.x.is_packed and self.y.is_packed):
                base += "-s" + "_".join(",".join(map(str, d.strides)) for d in (self.x, self.y))
        return f"{base}+{self.epilogue.key()}"

    def describe(self) -> str:
        """The op sequence in words, e.g. "conv -> bias -> activation(RELU)"."""
        ep = self.epilogue
        steps = (["conv"] if self.conv is not None else []) + (["bias"] if ep.bias else [])
        steps += [f"batchnorm({ep.batchnorm.name})"] if ep.batchnorm is not None else []
        steps += ["add(z)"] if ep.add else []
        steps += [f"activation({ep.activation.name})"] if ep.activation is not None else []
        return " -> ".join(steps)


FUSED_DTYPES = frozenset({DataType.FLOAT32, DataType.FLOAT16})


class FusedSolver(Applicable):
    """Base of fused solvers: applicability with reasons, params, and a prepared (built) solution."""

    id: str
    algorithm: str

    def applicability(self, fp: FusedProblem, dev: DeviceInfo) -> None:
        require(fp.x.dtype in FUSED_DTYPES, f"{fp.x.dtype.value} is not implemented")

    def params(self, fp: FusedProblem, handle: Handle) -> tuple[Params, str]:
        """(params, source) for fp; untunable by default."""
        return {}, "default"

    def solution(self, handle: Handle, fp: FusedProblem, params: Params) -> Solution:
        """The solution for fp (its launches name the roles x, y, w and the epilogue's args)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.id


class ConvEpilogueFused(FusedSolver):
    """A convolution solver's own kernel, storing epilogue(conv(x, w)) instead of conv(x, w).

    Costs nothing over the plain convolution but the epilogue's reads (one bias or four batch-norm values
    per output), and saves the unfused path's extra passes over y. Applies wherever the wrapped solver
    applies in the forward direction and its hook serves every op of the epilogue.
    """

    def __init__(self, conv: ConvSolver):
        self.conv = conv
        self.id = f"{conv.id}Fused"
        self.algorithm = conv.algorithm

    def applicability(self, fp: FusedProblem, dev: DeviceInfo) -> None:
        super().applicability(fp, dev)
        conv = fp.conv
        require(conv is not None, "needs a convolution as the plan's first op")
        assert conv is not None
        require(conv.direction is Direction.FORWARD, "fuses forward convolutions only")
        require(self.conv.supports_epilogue, f"{self.conv.id} has no epilogue hook")
        missing = sorted(fp.epilogue.ops - self.conv.epilogue_ops)
        require(not missing, f"{self.conv.id}'s epilogue does not fuse {', '.join(missing)}")
        require_none(index_reason(conv.y.element_span))   # the epilogue's operand offsets are 32-bit
        self.conv.applicability(conv, dev)

    def params(self, fp: FusedProblem, handle: Handle) -> tuple[Params, str]:
        assert fp.conv is not None
        return params_for(self.conv, fp.conv, handle)

    def solution(self, handle: Handle, fp: FusedProblem, params: Params) -> Solution:
        assert fp.conv is not None
        epilogue = fp.epilogue if fp.epilogue.ops else None
        return checked_solution(handle, fp.conv, self.conv.id, params, epilogue)


class BatchNormActivInference(FusedSolver):
    """Batch-norm inference, optionally followed by a residual add and an activation, as one pointwise
    kernel (fusion_pointwise.cl).

    Memory-bound: reads x once and writes y once, whatever the epilogue. Does not apply after a
    convolution (ConvEpilogueFused folds the epilogue into the convolution instead).
    """

    id = "BatchNormActivInference"
    algorithm = "pointwise"

    def applicability(self, fp: FusedProblem, dev: DeviceInfo) -> None:
        super().applicability(fp, dev)
        require(fp.conv is None, "runs batch norm (+ activation) alone, not after a convolution")
        require(fp.epilogue.batchnorm is not None, "needs a batch-norm op (an activation alone is activation_forward)")
        require(not fp.epilogue.bias, "a bias needs a convolution before it")
        require_none(index_reason(fp.x.element_span, fp.y.element_span))   # 32-bit offsets (fusion_pointwise.cl)

    def solution(self, handle: Handle, fp: FusedProblem, params: Params) -> Solution:
        launch = pointwise_launch("fusion_pointwise.cl", "pointwise_epilogue", {"X": fp.x, "Y": fp.y},
                                  fp.epilogue.defines(), ("x", "y", *fp.epilogue.args))
        return Solution(self.id, {}, (launch,))


def solvers() -> tuple[FusedSolver, ...]:
    """Every fused solver, in preference order: each epilogue-capable convolution solver of the registry
    (after MIOPY_FIND_ONLY_SOLVER / MIOPY_DISABLE_SOLVERS), then the pointwise batch-norm solver."""
    conv = tuple(ConvEpilogueFused(s) for s in CONV_REGISTRY.solvers()
                 if isinstance(s, ConvSolver) and s.supports_epilogue)
    return conv + (BatchNormActivInference(),)
