"""Float64 NumPy ground truth of convolution in every direction (grouped, dilated, strided, padded).

Each function loops over the R*S filter taps and does one tensor contraction per tap and group. pad is an
(h, w) pair (both sides alike) or (top, bottom, left, right).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .problem import OUTPUT_ROLE, ConvProblem, Direction


def _sides(pad) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) from an (h, w) pair or four sides."""
    pad = tuple(int(p) for p in pad)
    return (pad[0], pad[0], pad[1], pad[1]) if len(pad) == 2 else (pad[0], pad[1], pad[2], pad[3])


def _tap_slices(size_out: int, stride: int, start: int) -> slice:
    return slice(start, start + stride * (size_out - 1) + 1, stride)


def conv_forward(x, w, pad=(0, 0), stride=(1, 1), dilation=(1, 1), groups=1) -> np.ndarray:
    """y = x (N,C,H,W) cross-correlated with w (K,C/g,R,S)."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    top, bottom, left, right = _sides(pad)
    p_out = (h + top + bottom - dilation[0] * (r - 1) - 1) // stride[0] + 1
    q_out = (wd + left + right - dilation[1] * (s - 1) - 1) // stride[1] + 1
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
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
    top, bottom, left, right = _sides(pad)
    dxp = np.zeros((n, c, h + top + bottom, wd + left + right))
    kg = k // groups
    for g in range(groups):
        dys, ws = dy[:, g * kg:(g + 1) * kg], w[g * kg:(g + 1) * kg]
        for i in range(r):
            for j in range(s):
                dxp[:, g * cg:(g + 1) * cg, _tap_slices(p_out, stride[0], i * dilation[0]),
                    _tap_slices(q_out, stride[1], j * dilation[1])] += np.einsum("nkhw,kc->nchw", dys, ws[:, :, i, j])
    return dxp[:, :, top:top + h, left:left + wd]


def conv_backward_weights(x, dy, w_shape, pad=(0, 0), stride=(1, 1), dilation=(1, 1), groups=1) -> np.ndarray:
    """dw (shape w_shape) from x (N,C,H,W) and dy (N,K,P,Q)."""
    x, dy = np.asarray(x, np.float64), np.asarray(dy, np.float64)
    k, cg, r, s = w_shape
    _, _, p_out, q_out = dy.shape
    top, bottom, left, right = _sides(pad)
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
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
    top, bottom, left, right = _sides(pad)
    out = [(size - 1) * st - begin - end + d * (f - 1) + o + 1
           for size, st, begin, end, d, f, o in zip((h, wd), stride, (top, left), (bottom, right), dilation, (r, s),
                                                    output_padding)]
    return conv_backward_data(x, w, (n, coutg * groups, out[0], out[1]), pad, stride, dilation, groups)


def solve(problem: ConvProblem, tensors: Mapping[str, np.ndarray]) -> np.ndarray:
    """Float64 output of problem's direction; tensors maps the forward roles x, w, y to host arrays."""
    c = problem.conv
    geo = dict(pad=c.pads, stride=c.stride, dilation=c.dilation, groups=c.groups)
    if problem.direction is Direction.FORWARD:
        return conv_forward(tensors["x"], tensors["w"], **geo)
    if problem.direction is Direction.BACKWARD_DATA:
        return conv_backward_data(tensors["y"], tensors["w"], problem.x.dims, **geo)
    return conv_backward_weights(tensors["x"], tensors["y"], problem.w.dims, **geo)


def reference_outputs(problem: ConvProblem, tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The registry's reference hook: {output role: float64 expected}."""
    return {OUTPUT_ROLE[problem.direction]: solve(problem, tensors)}


def tolerance(solver, problem: ConvProblem | None = None) -> float:
    """The max_error solver's fp32 result may have against float64 on problem (see Registry.tolerance)."""
    if problem is None:
        from ..solver import DEFAULT_TOLERANCE
        return solver.tolerance or DEFAULT_TOLERANCE
    return problem.registry.tolerance(solver, problem)
