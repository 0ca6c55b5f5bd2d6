"""The descriptor API of batch normalisation (MIOpen's miopenBatchNormalization*), on plans.

Arguments follow MIOpen's order. alpha / beta blend each output (out = alpha * result + beta * out; out is
not read when beta is 0), inside the kernels. running_mean / running_var and saved_mean /
saved_inv_variance are optional pairs (None: not updated, not saved, or recomputed). A call is a memo
lookup of a plan by its descriptors and which optional operands are present, then ``Plan.run_values``:
every buffer and number is checked before anything is enqueued, so bad input leaves outputs and running
statistics untouched. The solver is the heuristic's choice (see registry.rank), as in MIOpen.
"""
from __future__ import annotations

import pyopencl as cl

from ..errors import BadParam, check
from ..find import immediate_plan
from ..handle import Handle
from ..plan import Plan, memo_plan, operands
from ..pointwise import scalar
from ..tensor import TensorDesc
from .problem import RUNNING_ROLES, SAVED_ROLES, BatchNormProblem, BnDirection


def batch_normalization_forward_training(handle: Handle, mode, alpha: float, beta: float, x_desc: TensorDesc, x,
                                         y_desc: TensorDesc, y, bn_desc: TensorDesc, scale, bias,
                                         exp_avg_factor: float, running_mean, running_var, epsilon: float,
                                         saved_mean=None, saved_inv_variance=None) -> list[cl.Event]:
    """y = alpha * (scale * (x - mean) / sqrt(var + epsilon) + bias) + beta * y with the batch's statistics.

    With running_mean / running_var: running = (1 - exp_avg_factor) * running + exp_avg_factor * batch,
    the variance's batch term unbiased (times m / (m - 1), m the values per statistic), as MIOpen and
    PyTorch (whose momentum is exp_avg_factor). With saved_mean / saved_inv_variance: the batch mean and
    1 / sqrt(var + epsilon) are stored for the backward.
    """
    running = _pair(running_mean, running_var, RUNNING_ROLES)
    saved = _pair(saved_mean, saved_inv_variance, SAVED_ROLES)
    plan = memo_plan(_checked(handle), ("batchnorm.forward_training", mode, x_desc, y_desc, bn_desc, running, saved),
                     lambda: _plan(handle, BnDirection.FORWARD_TRAINING, mode, x_desc, y_desc, bn_desc, None,
                                   running, saved), (mode,))
    values = ((x, y, scale, bias) + ((running_mean, running_var) if running else ())
              + ((saved_mean, saved_inv_variance) if saved else ()))
    return plan.run_values(values, scalars=forward_scalars(alpha, beta, epsilon, exp_avg_factor))


def batch_normalization_forward_inference(handle: Handle, mode, alpha: float, beta: float, x_desc: TensorDesc, x,
                                          y_desc: TensorDesc, y, bn_desc: TensorDesc, scale, bias, estimated_mean,
                                          estimated_variance, epsilon: float) -> list[cl.Event]:
    """y = alpha * (scale * (x - estimated_mean) / sqrt(estimated_variance + epsilon) + bias) + beta * y.
    Without estimated statistics (both None) the batch's own are used, as MIOpen does."""
    if _pair(estimated_mean, estimated_variance, ("estimated_mean", "estimated_variance")) is False:
        return batch_normalization_forward_training(handle, mode, alpha, beta, x_desc, x, y_desc, y, bn_desc, scale,
                                                    bias, 0.0, None, None, epsilon)
    plan = memo_plan(_checked(handle), ("batchnorm.forward_inference", mode, x_desc, y_desc, bn_desc),
                     lambda: _plan(handle, BnDirection.FORWARD_INFERENCE, mode, x_desc, y_desc, bn_desc),
                     (mode,))
    scalars = {"alpha": scalar(alpha, "alpha"), "beta": scalar(beta, "beta"), "epsilon": epsilon_scalar(epsilon)}
    return plan.run_values((x, y, scale, bias, estimated_mean, estimated_variance), scalars=scalars)


def batch_normalization_backward(handle: Handle, mode, alpha_data: float, beta_data: float, alpha_param: float,
                                 beta_param: float, x_desc: TensorDesc, x, dy_desc: TensorDesc, dy,
                                 dx_desc: TensorDesc, dx, bn_desc: TensorDesc, scale, dscale, dbias, epsilon: float,
                                 saved_mean=None, saved_inv_variance=None) -> list[cl.Event]:
    """dx, dscale, dbias of training-mode batch norm (MIOpen's BatchNormalizationBackward): dx blended with
    alpha_data / beta_data, dscale and dbias with alpha_param / beta_param. The batch statistics come from
    saved_mean / saved_inv_variance when given (epsilon then unused), else are recomputed from x."""
    saved = _pair(saved_mean, saved_inv_variance, SAVED_ROLES)
    plan = memo_plan(_checked(handle), ("batchnorm.backward", mode, x_desc, dy_desc, dx_desc, bn_desc, saved),
                     lambda: _plan(handle, BnDirection.BACKWARD, mode, x_desc, dx_desc, bn_desc, dy_desc, False, saved),
                     (mode,))
    scalars = {"alpha_data": scalar(alpha_data, "alpha_data"), "beta_data": scalar(beta_data, "beta_data"),
               "alpha_param": scalar(alpha_param, "alpha_param"), "beta_param": scalar(beta_param, "beta_param"),
               "epsilon": epsilon_scalar(epsilon)}
    values = (x, dy, dx, scale, dscale, dbias) + ((saved_mean, saved_inv_variance) if saved else ())
    return plan.run_values(values, scalars=scalars)


def batch_normalization_plan(handle: Handle, direction: BnDirection, mode, x_desc: TensorDesc, y_desc: TensorDesc,
                             bn_desc: TensorDesc, dy_desc: TensorDesc | None = None, running: bool = False,
                             saved: bool = False) -> Plan:
    """The memoised plan of one batch-norm call shape (y_desc is dx's in the backward); its operands are
    problem.tensors()'s roles in order, its numbers the solvers' scalar roles (see solvers.common)."""
    key = {BnDirection.FORWARD_TRAINING: ("batchnorm.forward_training", mode, x_desc, y_desc, bn_desc, running, saved),
           BnDirection.FORWARD_INFERENCE: ("batchnorm.forward_inference", mode, x_desc, y_desc, bn_desc),
           BnDirection.BACKWARD: ("batchnorm.backward", mode, x_desc, dy_desc, y_desc, bn_desc, saved)}[direction]
    return memo_plan(_checked(handle), key, lambda: _plan(handle, direction, mode, x_desc, y_desc, bn_desc, dy_desc,
                                                          running, saved), (mode,))


# -- building (the cold path) ---------------------------------------------------------------------------------
def _plan(handle: Handle, direction: BnDirection, mode, x_desc, y_desc, bn_desc, dy_desc=None, running=False,
          saved=False) -> Plan:
    backward = direction is BnDirection.BACKWARD
    names = ("x_desc", "dx_desc" if backward else "y_desc", "bn_desc")
    problem = BatchNormProblem.create(direction, mode, x_desc, y_desc, bn_desc, dy_desc, running, saved, names)
    in_place = dy_desc == y_desc if backward else x_desc == y_desc
    alias = [("dy", "dx") if backward else ("x", "y")] if in_place else []
    return immediate_plan(handle, problem, operands(problem.tensors(), problem.outputs()), may_alias=alias)


def _checked(handle) -> Handle:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    return handle


def _pair(first, second, roles: tuple[str, str]) -> bool:
    """Whether an optional pair of operands is given; BadParam naming the missing one when only one is."""
    if (first is None) != (second is None):
        missing, given = roles if first is None else roles[::-1]
        raise BadParam(missing, f"must be given together with {given} (or both left out)")
    return first is not None


def epsilon_scalar(value) -> object:
    return scalar(value, "epsilon", minimum=0.0)


def forward_scalars(alpha, beta, epsilon, factor) -> dict:
    factor32 = scalar(factor, "exp_avg_factor", minimum=0.0)
    if factor32 > 1.0:
        raise BadParam("exp_avg_factor", f"must be in [0, 1], got {factor}")
    return {"alpha": scalar(alpha, "alpha"), "beta": scalar(beta, "beta"), "epsilon": epsilon_scalar(epsilon),
            "factor": factor32}
