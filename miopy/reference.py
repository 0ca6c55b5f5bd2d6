"""Float64 NumPy ground truth for every direction (grouped, dilated, strided, padded).

Each function loops over the R*S filter taps and does one tensor contraction per tap and group.
"""
from __future__ import annotations

import numpy as np

from .convolution import ConvProblem, Direction

# Boda's hybrid |a-e|/(1+|e|) bound for an fp32 result, unless the solver declares its own (Winograd).
DEFAULT_TOLERANCE = 1e-3
# Sums up to this long keep the base bound; longer ones grow it like a random walk of rounding errors.
BASE_REDUCTION = 1024


def reduction_length(problem: ConvProblem) -> int:
    """Terms summed into each output element: C/g*R*S forward, K/g*R*S backward-data, N*P*Q backward-weights."""
    if problem.direction is Direction.FORWARD:
        return problem.c_per_group * problem.r * problem.s
    if problem.direction is Direction.BACKWARD_DATA:
        return problem.k_per_group * problem.r * problem.s
    return problem.n * problem.out_h * problem.out_w


def tolerance(solver, problem: ConvProblem | None = None) -> float:
    """The max_error a solver's fp32 result may have against the float64 reference: the solver's own bound
    (else Boda's 1e-3), times sqrt(reduction length / 1024) for long sums (backward-weights over a batch)."""
    base = getattr(solver, "tolerance", None) or DEFAULT_TOLERANCE
    if problem is None:
        return base
    return base * max(1.0, (reduction_length(problem) / BASE_REDUCTION) ** 0.5)


def _tap_slices(size_out: int, stride: int, start: int) -> slice:
    return slice(start, start + stride * (size_out - 1) + 1, stride)


def conv_forward(x, w, pad=(0, 0), stride=(1, 1), dilation=(1, 1), groups=1) -> np.ndarray:
    """y = x (N,C,H,W) cross-correlated with w (K,C/g,R,S)."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    p_out = (h + 2 * pad[0] - dilation[0] * (r - 1) - 1) // stride[0] + 1
    q_out = (wd + 2 * pad[1] - dilation[1] * (s - 1) - 1) // stride[1] + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    y = np.zeros((n, k, p_out, q_out))
    kg = k // groups
    for g in range(groups):
        xs, ws = xp[:, g * cg:(g + 1) * cg], w[g * kg:(g + 1) * kg]
        for i in range(r):
            for j in range(s):
                tap = xs[:, :, _tap_slices(p_out, stride[0], i * dilation[0]),
                         _tap_slices(q_out, stride[1], j * dilation[1])]
                y[:, g * kg:(g + 1) * kg] += np.einsum("nchw,kc->nkhw", tap, ws[:, :, i, j])
    return y


def conv_backward_data(dy, w, x_shape, pad=(0, 0), stride=(1, 1), dilation=(1, 1), groups=1) -> np.ndarray:
    """dx (shape x_shape) from dy (N,K,P,Q) and w (K,C/g,R,S)."""
    dy, w = np.asarray(dy, np.float64), np.asarray(w, np.float64)
    n, c, h, wd = x_shape
    k, cg, r, s = w.shape
    _, _, p_out, q_out = dy.shape
    dxp = np.zeros((n, c, h + 2 * pad[0], wd + 2 * pad[1]))
    kg = k // groups
    for g in range(groups):
        dys, ws = dy[:, g * kg:(g + 1) * kg], w[g * kg:(g + 1) * kg]
        for i in range(r):
            for j in range(s):
                dxp[:, g * cg:(g + 1) * cg, _tap_slices(p_out, stride[0], i * dilation[0]),
                    _tap_slices(q_out, stride[1], j * dilation[1])] += np.einsum("nkhw,kc->nchw", dys, ws[:, :, i, j])
    return dxp[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + wd]


def conv_backward_weights(x, dy, w_shape, pad=(0, 0), stride=(1, 1), dilation=(1, 1), groups=1) -> np.ndarray:
    """dw (shape w_shape) from x (N,C,H,W) and dy (N,K,P,Q)."""
    x, dy = np.asarray(x, np.float64), np.asarray(dy, np.float64)
    k, cg, r, s = w_shape
    _, _, p_out, q_out = dy.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    dw = np.zeros(w_shape)
    kg = k // groups
    for g in range(groups):
        xs, dys = xp[:, g * cg:(g + 1) * cg], dy[:, g * kg:(g + 1) * kg]
        for i in range(r):
            for j in range(s):
                tap = xs[:, :, _tap_slices(p_out, stride[0], i * dilation[0]),
                         _tap_slices(q_out, stride[1], j * dilation[1])]
                dw[g * kg:(g + 1) * kg, :, i, j] = np.einsum("nkhw,nchw->kc", dys, tap)
    return dw


def transpose_forward(x, w, pad=(0, 0), stride=(1, 1), dilation=(1, 1), groups=1, output_padding=(0, 0)):
    """PyTorch's conv_transpose2d: x (N,Cin,H,W), w (Cin,Cout/g,R,S); the backward-data of a convolution."""
    n, cin, h, wd = np.shape(x)
    _, coutg, r, s = np.shape(w)
    out = [(size - 1) * st - 2 * p + d * (f - 1) + o + 1
           for size, st, p, d, f, o in zip((h, wd), stride, pad, dilation, (r, s), output_padding)]
    return conv_backward_data(x, w, (n, coutg * groups, out[0], out[1]), pad, stride, dilation, groups)


def max_error(actual, expected) -> float:
    """Largest |actual - expected| / (1 + |expected|): the hybrid relative/absolute error of Boda."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if actual.size == 0:
        return 0.0
    err = np.abs(actual - expected) / (1.0 + np.abs(expected))
    return float(np.nan_to_num(err, nan=np.inf).max())


def solve(problem: ConvProblem, tensors) -> np.ndarray:
    """Float64 output of problem's direction; tensors maps the forward roles x, w, y to host arrays."""
    c = problem.conv
    geo = dict(pad=c.pad, stride=c.stride, dilation=c.dilation, groups=c.groups)
    if problem.direction is Direction.FORWARD:
        return conv_forward(tensors["x"], tensors["w"], **geo)
    if problem.direction is Direction.BACKWARD_DATA:
        return conv_backward_data(tensors["y"], tensors["w"], problem.x.dims, **geo)
    return conv_backward_weights(tensors["x"], tensors["y"], problem.w.dims, **geo)
