"""One-call fused ops (MIOpen's ConvolutionBiasActivationForward, with its residual z, and
ConvolutionForwardBias), on plans."""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..activation import ActivationMode
from ..conv.problem import ConvDesc
from ..errors import check
from ..handle import Handle
from ..plan import Plan, memo_plan
from ..pointwise import check_same_dims, scalar
from ..tensor import TensorDesc
from ..tensor_ops import TensorOp, op_tensor_plan
from .descriptor import FusionPlan, checked_param_desc
from .epilogue import ACTIVATION_ROLES


def conv_bias_activation_forward(handle: Handle, x_desc: TensorDesc, x, w_desc: TensorDesc, w,
                                 conv_desc: ConvDesc, bias_desc: TensorDesc, bias, mode, alpha: float,
                                 beta: float, gamma: float, y_desc: TensorDesc, y, *, z_desc: TensorDesc | None = None,
                                 z=None, alpha2: float = 1.0) -> list[cl.Event]:
    """y = activation(conv(x, w) + bias [+ alpha2 * z]) in one kernel (MIOpen's
    ConvolutionBiasActivationForward; alpha / beta / gamma are the activation's). With z (of y's
    descriptor; z_desc derived when omitted) it is a ResNet block's tail; y may be z itself.

    The fusion plan is built and compiled once per handle and problem, then reused: repeated calls compile
    nothing and only check buffers.
    """
    add = z is not None
    key = ("fusion.conv_bias_activation", x_desc, w_desc, conv_desc, bias_desc, mode, y_desc, add, z_desc)
    plan = memo_plan(handle, key,
                     lambda: fused_plan(handle, x_desc, w_desc, conv_desc, bias_desc, mode, y_desc, add, z_desc),
                     (mode,))
    scalars = {role: scalar(value, name) for role, name, value in
               zip(ACTIVATION_ROLES, ("alpha", "beta", "gamma"), (alpha, beta, gamma))}
    if not add:
        check(z_desc is None, "z", "z_desc is given but z is not")
        return plan.run_values((x, y, w, bias), scalars=scalars)
    scalars["z_alpha"] = scalar(alpha2, "alpha2")
    return plan.run_values((x, y, w, bias, z), scalars=scalars)


def fused_plan(handle: Handle, x_desc, w_desc, conv_desc, bias_desc, mode, y_desc, add=False, z_desc=None) -> Plan:
    """The compiled plan of conv -> bias [-> add z] -> activation (operands x, y, w, bias [, z])."""
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    fusion = FusionPlan(handle, x_desc)
    fusion.add_conv_forward(conv_desc, w_desc)
    fusion.add_bias_forward(bias_desc)
    if add:
        fusion.add_tensor_add(z_desc)
    fusion.add_activation_forward(ActivationMode.of(mode))
    check(isinstance(y_desc, TensorDesc), "y_desc", "must be a TensorDesc")
    check(y_desc == fusion.output_desc, "y_desc", f"expected {fusion.output_desc} (packed), got {y_desc}")
    return fusion.compile().plan


def convolution_forward_bias(handle: Handle, bias_desc: TensorDesc, bias, y_desc: TensorDesc, y) -> list[cl.Event]:
    """y += bias[k] in place, as its own kernel (MIOpen's ConvolutionForwardBias; the unfused path): OpTensor's
    add with the bias broadcast over y."""
    plan = memo_plan(handle, ("fusion.conv_forward_bias", bias_desc, y_desc),
                     lambda: _bias_plan(handle, bias_desc, y_desc))
    return plan.run_values((y, bias, y), scalars=BIAS_SCALARS)


BIAS_SCALARS = {"alpha1": np.float32(1.0), "alpha2": np.float32(1.0), "beta": np.float32(0.0)}


def _bias_plan(handle: Handle, bias_desc: TensorDesc, y_desc: TensorDesc) -> Plan:
    check(isinstance(handle, Handle), "handle", "must be a miopy Handle")
    check_same_dims("y_desc", y_desc, {})
    checked_param_desc("bias_desc", bias_desc, (1, y_desc.c, 1, 1), y_desc.dtype)
    return op_tensor_plan(handle, TensorOp.ADD, y_desc, bias_desc, y_desc)
