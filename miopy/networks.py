"""Named layer sets: the unique convolution layers of well-known networks, for tuning and benchmarks.

A layer is (C, H, W, K, R, S, pad, stride): input channels and size, output channels, filter size, and
the same pad and stride in both dimensions (no dilation, no groups). Batch size is chosen by the caller.
Each network lists its layers in order of first appearance, each distinct layer once.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from .convolution import ConvDesc, ConvProblem, Direction
from .errors import BadParam
from .tensor import TensorDesc


class Layer(NamedTuple):
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    pad: int
    stride: int

    def descriptors(self, batch: int) -> tuple[TensorDesc, TensorDesc, ConvDesc]:
        """Input, weight and convolution descriptors of this layer at a batch size."""
        return (TensorDesc("FP32", (batch, self.c, self.h, self.w)),
                TensorDesc("FP32", (self.k, self.c, self.r, self.s)), ConvDesc(self.pad, self.stride))


def _unique(layers) -> tuple[Layer, ...]:
    return tuple(dict.fromkeys(Layer(*layer) for layer in layers))


def _alexnet() -> tuple[Layer, ...]:
    """Krizhevsky et al. 2012 at 227x227, without the two-tower grouping."""
    return _unique([(3, 227, 227, 96, 11, 11, 0, 4), (96, 27, 27, 256, 5, 5, 2, 1), (256, 13, 13, 384, 3, 3, 1, 1),
                    (384, 13, 13, 384, 3, 3, 1, 1), (384, 13, 13, 256, 3, 3, 1, 1)])


def _vgg16() -> tuple[Layer, ...]:
    """Simonyan and Zisserman, configuration D: 13 3x3 pad-1 convolutions in 5 stages at 224x224."""
    stages = ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))
    layers, c, size = [], 3, 224
    for k, convs in stages:
        for _ in range(convs):
            layers.append((c, size, size, k, 3, 3, 1, 1))
            c = k
        size //= 2
    return _unique(layers)


def _resnet50() -> tuple[Layer, ...]:
    """He et al. 2016, bottleneck blocks with the stride on the 3x3 convolution (torchvision's v1.5)."""
    layers, c, size = [(3, 224, 224, 64, 7, 7, 3, 2)], 64, 56
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for block in range(blocks):
            s = stride if block == 0 else 1
            out = size // s
            layers += [(c, size, size, width, 1, 1, 0, 1), (width, size, size, width, 3, 3, 1, s),
                       (width, out, out, 4 * width, 1, 1, 0, 1)]
            if block == 0:
                layers.append((c, size, size, 4 * width, 1, 1, 0, s))  # projection shortcut
            c, size = 4 * width, out
    return _unique(layers)


# Inception-v1 modules: (input channels, #1x1, #3x3 reduce, #3x3, #5x5 reduce, #5x5, pool projection).
_INCEPTION = {28: ((192, 64, 96, 128, 16, 32, 32), (256, 128, 128, 192, 32, 96, 64)),
              14: ((480, 192, 96, 208, 16, 48, 64), (512, 160, 112, 224, 24, 64, 64),
                   (512, 128, 128, 256, 24, 64, 64), (512, 112, 144, 288, 32, 64, 64),
                   (528, 256, 160, 320, 32, 128, 128)),
              7: ((832, 256, 160, 320, 32, 128, 128), (832, 384, 192, 384, 48, 128, 128))}


def _googlenet() -> tuple[Layer, ...]:
    """Szegedy et al. 2015 (Inception-v1) at 224x224: the stem, then nine inception modules."""
    layers = [(3, 224, 224, 64, 7, 7, 3, 2), (64, 56, 56, 64, 1, 1, 0, 1), (64, 56, 56, 192, 3, 3, 1, 1)]
    for size, modules in _INCEPTION.items():
        for c, n1, r3, n3, r5, n5, pool in modules:
            layers += [(c, size, size, n1, 1, 1, 0, 1), (c, size, size, r3, 1, 1, 0, 1),
                       (r3, size, size, n3, 3, 3, 1, 1), (c, size, size, r5, 1, 1, 0, 1),
                       (r5, size, size, n5, 5, 5, 2, 1), (c, size, size, pool, 1, 1, 0, 1)]
    return _unique(layers)


NETWORKS = {"alexnet": _alexnet(), "vgg16": _vgg16(), "resnet50": _resnet50(), "googlenet": _googlenet()}


def layers(name: str) -> tuple[Layer, ...]:
    """The unique convolution layers of the named network."""
    try:
        return NETWORKS[name.lower()]
    except KeyError:
        raise BadParam("network", f"unknown network {name!r}; known: {sorted(NETWORKS)}") from None


def problems(name: str, batch: int, directions: Sequence[Direction] = (Direction.FORWARD,)) -> list[ConvProblem]:
    """The unique layers of the named network at a batch size, as problems in each direction."""
    return [ConvProblem.create(d, *layer.descriptors(batch)) for layer in layers(name) for d in directions]
