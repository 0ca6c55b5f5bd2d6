"""Winograd F(2x2,5x5) and F(3x3,5x5): the 3x3 solvers' four-kernel pipeline (winograd.py) with the
Toom-Cook transforms of conv_winograd_large.cl, for 5x5 filters (AlexNet conv2, GoogLeNet's 5x5 branches)."""
from __future__ import annotations

from .winograd import _ConvWinograd3x3


class ConvWinograd5x5F2(_ConvWinograd3x3):
    """Winograd F(2x2, 5x5): 5x5, stride 1, dilation 1, padding 0-4, forward and backward-data.

    Each 2x2 output tile comes from a 6x6 input patch with 36 multiplies per channel pair instead of 100
    (2.8x fewer), as 36 batched GEMMs in the transformed domain (points 0, +-1, 1/2, -2, infinity, which
    round 1.5x less than +-2 in the weight gradient). The transforms' constants reach 5/2 (B^T), 16/15 and
    1/15 (G), so it rounds a little more than a direct sum; its
    bound is F(4x4,3x3)'s, 5e-3. Wins on 5x5 layers with many channels (AlexNet conv2), where the GEMMs
    dominate; loses when C or K is small (transform traffic: 36 x (C + K) floats per 2x2 tile) and to
    F(3x3,5x5) where 3x3 tiles cover the output without waste. Not applicable: other filter sizes,
    strides, dilations, padding over 4, groups.
    """

    id = "ConvWinograd5x5F2"
    tile = 2
    filter_size = 5
    transform_file = "conv_winograd_large.cl"
    tolerance = 5e-3


class ConvWinograd5x5F3(_ConvWinograd3x3):
    """Winograd F(3x3, 5x5): 5x5, stride 1, dilation 1, padding 0-4, forward and backward-data.

    Each 3x3 output tile comes from a 7x7 input patch with 49 multiplies per channel pair instead of 225
    (4.6x fewer), as 49 batched GEMMs (points 0, +-1, +-2, 1/2, infinity). Larger constants than F2 (B^T up
    to 6, G down to 1/60) cost about twice its error; bound 1e-2. Meant for large 5x5 layers whose output
    divides into 3x3 tiles (27x27: AlexNet conv2); loses on small channel counts and on tiny images where
    edge tiles are mostly empty. Not applicable: other filter sizes, strides, dilations, padding over 4,
    groups.
    """

    id = "ConvWinograd5x5F3"
    tile = 3
    filter_size = 5
    transform_file = "conv_winograd_large.cl"
    tolerance = 1e-2
