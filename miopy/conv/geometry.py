"""Convolution geometry that more than one part of the family reads: the FFT plane a problem's padded planes
need. ConvFFT sizes its transforms by it and the heuristic ranking puts FFT first on 32-point planes; it lives
here, beside the problem, so the ranking imports no solver module."""
from __future__ import annotations

from .problem import ConvProblem, Direction

FFT_SIZES = (8, 16, 32)   # FFT plane sizes (conv_fft.cl's twiddle table stops at 32)


def plane_size(p: ConvProblem) -> int:
    """The smallest FFT plane (a power of two, at least 8) on which the cyclic correlation of the problem's
    forward-equivalent geometry (backward-data: dy with padding r - 1 - pad) is exact: no output reads a
    wrapped input element that holds data, and the outputs are distinct; 0 above 32."""
    if p.direction is Direction.BACKWARD_DATA:
        dims = ((p.out_h, p.in_h, p.r - 1 - p.pad_h, p.r), (p.out_w, p.in_w, p.s - 1 - p.pad_w, p.s))
    else:
        dims = ((p.in_h, p.out_h, p.pad_h, p.r), (p.in_w, p.out_w, p.pad_w, p.s))
    need = max(max(i + max(pad, 0), o - pad + r - 1, o, i) for i, o, pad, r in dims)
    return next((size for size in FFT_SIZES if size >= need), 0)
