"""Float64 pooling, mirroring PyTorch's formulas: max (first maximum in scan order, its flat index
h * W + w in the input plane), average with padding excluded or included in the divisor (the window
clipped to the far pads, as avg_pool2d's count_include_pad), ceil_mode, per-side pads, and the backwards.

Modes by miopenPoolingMode_t's values: 0 max, 1 average (padding excluded), 2 average (padding included).
Pads are (top, bottom, left, right); window and strides (h, w).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from .problem import Direction, PoolingProblem

MAX, AVERAGE, AVERAGE_INCLUSIVE = 0, 1, 2


def output_size(size: int, window: int, stride: int, before: int, after: int, ceil_mode: bool) -> int:
    """PyTorch's pooling output size with per-side pads."""
    span = size + before + after - window
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + before:
        out -= 1
    return out


def _windows(shape, window, pads, strides, ceil_mode) -> Iterator[tuple]:
    """(oh, ow, rows, cols, pool_size): each output's window clipped to the input, and its size clipped to
    the far pads (PyTorch's pool_size, the divisor with padding included)."""
    _, _, h, w = shape
    (kh, kw), (sh, sw), (top, bottom, left, right) = window, strides, pads
    out_h = output_size(h, kh, sh, top, bottom, ceil_mode)
    out_w = output_size(w, kw, sw, left, right, ceil_mode)
    for oh in range(out_h):
        h0 = oh * sh - top
        for ow in range(out_w):
            w0 = ow * sw - left
            size = (min(h0 + kh, h + bottom) - h0) * (min(w0 + kw, w + right) - w0)
            yield oh, ow, slice(max(h0, 0), min(h0 + kh, h)), slice(max(w0, 0), min(w0 + kw, w)), size


def output_shape(shape, window, pads, strides, ceil_mode) -> tuple[int, int, int, int]:
    n, c, h, w = shape
    return (n, c, output_size(h, window[0], strides[0], pads[0], pads[1], ceil_mode),
            output_size(w, window[1], strides[1], pads[2], pads[3], ceil_mode))


def pool_forward(x, mode: int, window, pads, strides, ceil_mode: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(y, indices): y in float64; indices (int64, max mode only, else zeros) the argmax's h * W + w."""
    x = np.asarray(x, np.float64)
    n, c, h, w = x.shape
    y = np.empty(output_shape(x.shape, window, pads, strides, ceil_mode))
    indices = np.zeros(y.shape, np.int64)
    for oh, ow, rows, cols, size in _windows(x.shape, window, pads, strides, ceil_mode):
        patch = x[:, :, rows, cols].reshape(n, c, -1)
        if int(mode) == MAX:
            k = patch.argmax(axis=2)
            y[:, :, oh, ow] = np.take_along_axis(patch, k[..., None], axis=2)[..., 0]
            width = cols.stop - cols.start
            indices[:, :, oh, ow] = (rows.start + k // width) * w + cols.start + k % width
        else:
            divisor = size if int(mode) == AVERAGE_INCLUSIVE else patch.shape[2]
            y[:, :, oh, ow] = patch.sum(axis=2) / divisor
    return y, indices


def pool_backward(dy, x_shape, mode: int, window, pads, strides, ceil_mode: bool = False,
                  indices=None) -> np.ndarray:
    """dx (float64, x_shape) from dy: max routes dy to the saved argmax indices (entries outside their own
    window are ignored, as the kernels' gather does), average spreads it over the window."""
    dy = np.asarray(dy, np.float64)
    n, c, h, w = x_shape
    dx = np.zeros(x_shape)
    flat = dx.reshape(n, c, h * w)
    if int(mode) == MAX:
        idx = np.asarray(indices)
        idx = idx.view(np.int32) if idx.dtype.kind == "f" else idx
    for oh, ow, rows, cols, size in _windows(x_shape, window, pads, strides, ceil_mode):
        if int(mode) == MAX:
            k = idx[:, :, oh, ow].astype(np.int64)
            inside = (k // w >= rows.start) & (k // w < rows.stop) & (k % w >= cols.start) & (k % w < cols.stop)
            nn, cc = np.nonzero(inside)
            np.add.at(flat, (nn, cc, k[nn, cc]), dy[nn, cc, oh, ow])
        else:
            count = (rows.stop - rows.start) * (cols.stop - cols.start)
            divisor = size if int(mode) == AVERAGE_INCLUSIVE else count
            dx[:, :, rows, cols] += (dy[:, :, oh, ow] / divisor)[:, :, None, None]
    return dx


def reference_outputs(problem: PoolingProblem, tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The registry's reference hook: {output role: float64 expected} (y forward, dx backward; the saved
    indices are checked through the backward)."""
    d = problem.desc
    geometry = (int(d.mode), d.window, d.pads, d.strides, d.ceil_mode)
    if problem.direction is Direction.FORWARD:
        return {"y": pool_forward(tensors["x"], *geometry)[0]}
    return {"dx": pool_backward(tensors["dy"], problem.x.dims, *geometry, indices=tensors.get("indices"))}


def prepare_inputs(problem: PoolingProblem, host: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    """The registry's prepare hook: a max backward's indices are the argmax of a random input (in place)."""
    if problem.direction is Direction.BACKWARD and "indices" in host:
        d = problem.desc
        x = rng.standard_normal(problem.x.dims)
        _, indices = pool_forward(x, int(d.mode), d.window, d.pads, d.strides, d.ceil_mode)
        host["indices"] = indices.astype(np.int32).view(host["indices"].dtype).reshape(host["indices"].shape)
