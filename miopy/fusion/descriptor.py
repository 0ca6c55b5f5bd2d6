"""Fusion plans (MIOpen's FusionPlan): a forward convolution followed by bias, batch-norm inference, the
residual add of a second tensor z and activation in one kernel, or batch-norm inference (+ add,
+ activation) on its own.

    plan = FusionPlan(handle, x_desc)
    conv = plan.add_conv_forward(conv_desc, w_desc)
    bias = plan.add_bias_forward()
    relu = plan.add_activation_forward(ActivationMode.RELU)
    plan.compile()                       # picks and builds a fused solver; NotSupported says why none fits
    args = OperatorArgs().set_conv_forward(conv, w).set_bias_forward(bias, b).set_activation_forward(relu)
    plan.execute(x, y, args)             # new argument values: nothing is compiled again

A ResNet block's tail, relu(bn(conv(x)) + identity), is conv_forward -> batchnorm_inference -> tensor_add
-> activation_forward with the identity as z (``OperatorArgs.set_tensor_add(op, z)``).

Ops follow data-flow order conv_forward -> bias_forward -> batchnorm_inference -> tensor_add ->
activation_forward, each at most once; an order no fused solver can run is refused when the op is added.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import pyopencl as cl

from ..activation import ActivationMode
from ..conv.problem import ConvDesc, ConvProblem, Direction
from ..errors import BadParam, MiopyError, NotSupported, check
from ..find import Timer, default_timer, params_for, random_buffers
from ..handle import Handle
from ..plan import Operand, Plan, buffer_of, checked_solution
from ..pointwise import scalar
from ..solver import Solver
from ..tensor import DataType, TensorDesc
from .epilogue import ACTIVATION_ROLES, ADD_ROLES, BATCHNORM_ROLES, BatchNormMode, Epilogue
from .problem import FusedProblem
from .registry import REGISTRY


# -- ops ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ConvForwardOp:
    """Forward convolution (the plan's first op); argument: the weights w."""

    conv_desc: ConvDesc
    w_desc: TensorDesc
    name: ClassVar[str] = "conv_forward"
    rank: ClassVar[int] = 0

    def bind(self, w) -> dict:
        buffer_of(w, "args.w", self.w_desc)
        return {"w": w}

    def operands(self) -> tuple[Operand, ...]:
        return (Operand("w", "args.w", self.w_desc),)


@dataclass(frozen=True, eq=False)
class BiasForwardOp:
    """y += bias[k]; argument: bias (1 x K x 1 x 1)."""

    bias_desc: TensorDesc
    name: ClassVar[str] = "bias_forward"
    rank: ClassVar[int] = 1

    def bind(self, bias) -> dict:
        buffer_of(bias, "args.bias", self.bias_desc)
        return {"bias": bias}

    def operands(self) -> tuple[Operand, ...]:
        return (Operand("bias", "args.bias", self.bias_desc),)


@dataclass(frozen=True, eq=False)
class BatchNormInferenceOp:
    """y = scale * (y - mean) / sqrt(variance + epsilon) + shift with estimated mean and variance."""

    mode: BatchNormMode
    param_desc: TensorDesc   # 1 x C x 1 x 1 (spatial) or 1 x C x H x W (per-activation)
    name: ClassVar[str] = "batchnorm_inference"
    rank: ClassVar[int] = 2

    def bind(self, scale, shift, mean, variance, epsilon) -> dict:
        bound = dict(zip(BATCHNORM_ROLES, (scale, shift, mean, variance)))
        for role, value in bound.items():
            buffer_of(value, f"args.{role}", self.param_desc)
        bound["bn_epsilon"] = scalar(epsilon, "args.bn_epsilon", minimum=0.0)
        return bound

    def operands(self) -> tuple[Operand, ...]:
        return tuple(Operand(role, f"args.{role}", self.param_desc) for role in BATCHNORM_ROLES[:4])


@dataclass(frozen=True, eq=False)
class TensorAddOp:
    """y += alpha * z, z a tensor of y's shape and layout (MIOpen's "z" term; a ResNet block's identity);
    arguments: z and alpha."""

    z_desc: TensorDesc
    name: ClassVar[str] = "tensor_add"
    rank: ClassVar[int] = 3

    def bind(self, z, alpha) -> dict:
        buffer_of(z, "args.z", self.z_desc)
        return {"z": z, "z_alpha": scalar(alpha, "args.z_alpha")}

    def operands(self) -> tuple[Operand, ...]:
        return (Operand("z", "args.z", self.z_desc),)


@dataclass(frozen=True, eq=False)
class ActivationForwardOp:
    """y = f(y) with f one of the activation modes; arguments: alpha, beta, gamma."""

    mode: ActivationMode
    name: ClassVar[str] = "activation_forward"
    rank: ClassVar[int] = 4

    def bind(self, alpha, beta, gamma) -> dict:
        return {role: scalar(value, f"args.{role}") for role, value in zip(ACTIVATION_ROLES, (alpha, beta, gamma))}

    def operands(self) -> tuple[Operand, ...]:
        return ()


Op = ConvForwardOp | BiasForwardOp | BatchNormInferenceOp | TensorAddOp | ActivationForwardOp
OpT = TypeVar("OpT", ConvForwardOp, BiasForwardOp, BatchNormInferenceOp, TensorAddOp, ActivationForwardOp)


class OperatorArgs:
    """Argument values of a plan's ops (MIOpen's OperatorArgs), checked against the op when set.

    One OperatorArgs may be reused and changed between executions; values are bound, not compiled in.
    """

    def __init__(self):
        self._bound: dict[Op, dict] = {}

    def set_conv_forward(self, op: ConvForwardOp, w) -> OperatorArgs:
        return self._set(op, ConvForwardOp, w)

    def set_bias_forward(self, op: BiasForwardOp, bias) -> OperatorArgs:
        return self._set(op, BiasForwardOp, bias)

    def set_batchnorm_inference(self, op: BatchNormInferenceOp, scale, shift, mean, variance,
                                epsilon: float = 1e-5) -> OperatorArgs:
        return self._set(op, BatchNormInferenceOp, scale, shift, mean, variance, epsilon)

    def set_tensor_add(self, op: TensorAddOp, z, alpha: float = 1.0) -> OperatorArgs:
        """z (y's shape and layout) and its scale alpha: y += alpha * z."""
        return self._set(op, TensorAddOp, z, alpha)

    def set_activation_forward(self, op: ActivationForwardOp, alpha: float = 1.0, beta: float = 1.0,
                               gamma: float = 1.0) -> OperatorArgs:
        """alpha, beta, gamma as in the mode's formula (see ActivationMode); unused ones are ignored."""
        return self._set(op, ActivationForwardOp, alpha, beta, gamma)

    def bound(self, op: Op) -> dict:
        """Role -> the Array / Buffer or scalar set for op; BadParam when its arguments were never set."""
        values = self._bound.get(op)
        if values is None:
            raise BadParam(f"args.{op.name}", f"not set: call set_{op.name}() for this op")
        return values

    def _set(self, op, kind: type, *values) -> OperatorArgs:
        check(isinstance(op, kind), "op", f"expected a {kind.__name__}, got {type(op).__name__}")
        self._bound[op] = op.bind(*values)
        return self


# -- the plan ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FusedChoice:
    """The fused solver a plan runs, its params and its measured time (0 when not timed)."""

    solver_id: str
    algorithm: str
    params: dict
    time_ms: float
    plan: Plan = field(repr=False)


class FusionPlan:
    """An ordered chain of ops on one input tensor, compiled into a single fused kernel launch."""

    def __init__(self, handle: Handle, input_desc: TensorDesc):
        check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
        check(isinstance(input_desc, TensorDesc), "input_desc", "must be a TensorDesc")
        self.handle, self.input_desc = handle, input_desc
        self.ops: list[Op] = []
        self.skipped: dict[str, str] = {}
        self._dims = input_desc.dims
        self._choice: FusedChoice | None = None

    @property
    def output_desc(self) -> TensorDesc:
        """The packed descriptor of the plan's output y."""
        return TensorDesc(self.input_desc.dtype, self._dims)

    @property
    def choice(self) -> FusedChoice | None:
        return self._choice

    # -- building --------------------------------------------------------------------------------------
    def add_conv_forward(self, conv_desc: ConvDesc, w_desc: TensorDesc) -> ConvForwardOp:
        self._check_can_add(ConvForwardOp)
        check(isinstance(conv_desc, ConvDesc), "conv_desc", "must be a ConvDesc")
        if conv_desc.mode != "conv":
            raise NotSupported("conv_forward: transpose convolutions are not fused")
        out = conv_desc.output_desc(self.input_desc, w_desc)
        return self._add(ConvForwardOp(conv_desc, w_desc), out.dims)

    def add_bias_forward(self, bias_desc: TensorDesc | None = None) -> BiasForwardOp:
        self._check_can_add(BiasForwardOp)
        desc = self._param_desc("bias_desc", bias_desc, (1, self._dims[1], 1, 1), self.input_desc.dtype)
        return self._add(BiasForwardOp(desc))

    def add_batchnorm_inference(self, mode: BatchNormMode | int | str,
                                param_desc: TensorDesc | None = None) -> BatchNormInferenceOp:
        """param_desc describes scale, shift, mean and variance; derived from the data flow when omitted."""
        self._check_can_add(BatchNormInferenceOp)
        mode = BatchNormMode.of(mode)
        _, c, h, w = self._dims
        dims = (1, c, 1, 1) if mode is BatchNormMode.SPATIAL else (1, c, h, w)
        return self._add(BatchNormInferenceOp(mode, self._param_desc("bn_desc", param_desc, dims, DataType.FLOAT32)))

    def add_tensor_add(self, z_desc: TensorDesc | None = None) -> TensorAddOp:
        """y += alpha * z (the residual add); z_desc must be the data's descriptor at this point (packed,
        derived when omitted)."""
        self._check_can_add(TensorAddOp)
        desc = z_desc if z_desc is not None else self.output_desc
        check(isinstance(desc, TensorDesc), "z_desc", "must be a TensorDesc")
        check(desc == self.output_desc, "z_desc", f"expected {self.output_desc} (the data at this point, packed), "
                                                  f"got {desc}")
        return self._add(TensorAddOp(desc))

    def add_activation_forward(self, mode: ActivationMode | int | str) -> ActivationForwardOp:
        self._check_can_add(ActivationForwardOp)
        return self._add(ActivationForwardOp(ActivationMode.of(mode)))

    def _check_can_add(self, kind: Any) -> None:
        check(self._choice is None, "plan", "already compiled: make a new plan to add ops")
        last = self.ops[-1] if self.ops else None
        if kind is ConvForwardOp and last is not None:
            raise NotSupported(f"conv_forward after {last.name}: a plan fuses one convolution, as its first op")
        if kind is BiasForwardOp and not any(isinstance(op, ConvForwardOp) for op in self.ops):
            raise NotSupported("bias_forward needs a conv_forward before it (bias without a convolution)")
        if last is not None and kind.rank <= last.rank:
            raise NotSupported(f"{kind.name} after {last.name}: ops follow conv_forward -> bias_forward -> "
                               "batchnorm_inference -> tensor_add -> activation_forward, each at most once")

    def _param_desc(self, field: str, desc: TensorDesc | None, dims: tuple[int, ...], dtype: DataType) -> TensorDesc:
        desc = desc if desc is not None else TensorDesc(dtype, dims)
        return checked_param_desc(field, desc, dims, dtype)

    def _add(self, op: OpT, dims: tuple[int, int, int, int] | None = None) -> OpT:
        self.ops.append(op)
        self._dims = dims or self._dims
        return op

    # -- compiling ---------------------------------------------------------------------------------------
    def fused_problem(self) -> FusedProblem:
        """The plan as a FusedProblem (what fused solvers judge); NotSupported for an empty plan."""
        if not self.ops:
            raise NotSupported("empty plan: add ops before compiling")
        kinds: dict[type, Any] = {type(op): op for op in self.ops}
        bn, activ, conv = kinds.get(BatchNormInferenceOp), kinds.get(ActivationForwardOp), kinds.get(ConvForwardOp)
        plane = self._dims[2] * self._dims[3]
        epilogue = Epilogue(bias=BiasForwardOp in kinds, batchnorm=bn.mode if bn else None,
                            activation=activ.mode if activ else None,
                            plane=plane if bn and bn.mode is BatchNormMode.PER_ACTIVATION else 0,
                            add=TensorAddOp in kinds)
        problem = None
        if conv is not None:
            problem = ConvProblem.create(Direction.FORWARD, self.input_desc, conv.w_desc, conv.conv_desc,
                                         self.output_desc, self.handle.math_mode)
        return FusedProblem(self.input_desc, self.output_desc, epilogue, problem)

    def compile(self, timer: Timer | None = None, benchmark: bool = True) -> FusedChoice:
        """Pick a fused solver that applies and build it: the fastest when benchmark is set and there is a
        choice (timed like find, with timer or the default one), else the first in preference order that
        builds (as MIOpen's fusion compile does; no timing).

        Raises NotSupported, with each fused solver's reason, when none can run the plan.
        """
        check(self._choice is None, "plan", "already compiled")
        fp = self.fused_problem()
        candidates, skipped = [], {}
        for solver in REGISTRY.solvers():
            reason = solver.not_applicable_reason(fp, self.handle.info)
            if reason is None:
                candidates.append(solver)
            else:
                skipped[solver.id] = reason
        timing = benchmark and (timer is not None or len(candidates) > 1)
        ops = (Operand("x", "x", self.input_desc), Operand("y", "y", self.output_desc, written=True),
               *(operand for op in self.ops for operand in op.operands()))
        alias = [("x", "y")] if fp.conv is None and fp.x == fp.y else []   # element-wise: in place is safe
        alias += [("z", "y")] if fp.epilogue.add else []   # each y element is stored once, right after z[yi] is read
        choices = _measure(self.handle, fp, candidates, ops, alias, (timer or default_timer) if timing else None,
                           skipped)
        self.skipped = skipped
        if not choices:
            raise NotSupported(f"no fused solver runs {fp.describe()} on {fp.key()}: "
                               + "; ".join(f"{sid}: {why}" for sid, why in skipped.items()))
        self._choice = min(choices, key=lambda c: c.time_ms)
        return self._choice

    # -- running -------------------------------------------------------------------------------------------
    def execute(self, x, y, args: OperatorArgs) -> list[cl.Event]:
        """y = plan(x) with the op arguments in args; checks everything before enqueueing anything."""
        if self._choice is None:
            raise BadParam("plan", "not compiled: call compile() first")
        check(isinstance(args, OperatorArgs), "args", "must be an OperatorArgs")
        bound = {"x": x, "y": y}
        for op in self.ops:
            bound.update(args.bound(op))
        plan = self._choice.plan
        return plan.run_values(tuple(bound[op.role] for op in plan.operands),
                               scalars={r: v for r, v in bound.items() if r in _SCALAR_ROLES})


def checked_param_desc(field: str, desc: TensorDesc, dims: tuple[int, ...], dtype: DataType) -> TensorDesc:
    """desc (of bias or batch-norm operands) is packed, has dims and dtype; else BadParam(field...). A bias has
    the data's dtype; batch-norm operands are FP32 whatever the data (MIOpen's rule, as miopy.batchnorm's)."""
    check(isinstance(desc, TensorDesc), field, "must be a TensorDesc")
    check(desc.dims == dims, f"{field}.dims", f"expected {dims} for this point of the data flow, got {desc.dims}")
    check(desc.dtype == dtype, f"{field}.dtype", f"{desc.dtype.value}, expected {dtype.value}")
    check(desc.is_packed, f"{field}.strides", "must be packed")
    return desc


_SCALAR_ROLES = frozenset(ACTIVATION_ROLES + BATCHNORM_ROLES[4:] + ADD_ROLES[1:])


def _measure(handle: Handle, fp: FusedProblem, candidates: list[Solver], ops: tuple[Operand, ...],
             alias: list, timer: Timer | None, skipped: dict[str, str]) -> list[FusedChoice]:
    """With a timer: build and time every candidate. Without: the first candidate that builds, untimed.
    A candidate that fails to build or run is recorded in skipped and left out (failures are data)."""
    workspace = max((s.workspace_bytes(fp) for s in candidates), default=0)
    buffers = random_buffers(handle, fp, workspace) if timer is not None else {}
    choices = []
    for solver in candidates:
        try:
            params, _ = params_for(solver, fp, handle)
            plan = Plan(handle, checked_solution(handle, fp, solver.id, params), ops, may_alias=alias, problem=fp)
            time_ms = timer(handle, plan, buffers) if timer is not None else 0.0
        except MiopyError as exc:
            skipped[solver.id] = f"{type(exc).__name__}: {exc}"
            continue
        choices.append(FusedChoice(solver.id, solver.algorithm, dict(params), float(time_ms), plan))
        if timer is None:
            break
    return choices
