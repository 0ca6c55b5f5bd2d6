"""Named layer sets: the convolution layers of well-known networks and of the papers miopy is measured
against. Each layer is (C, H, W, K, R, S, pad, stride); the batch size is chosen by the caller.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import BadParam
from ..tensor import TensorDesc
from .problem import ConvDesc, ConvProblem, Direction


@dataclass(frozen=True)
class Layer:
    """One convolution layer without its batch size (square pad and stride; groups = C for depthwise)."""

    name: str
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    pad: int = 0
    stride: int = 1
    groups: int = 1

    def problem(self, n: int, direction: Direction | int = Direction.FORWARD, dtype: str = "FP32",
                math_mode: str | None = None) -> ConvProblem:
        """The layer at batch n in direction, on dtype data ("FP32" or "FP16"), under math_mode (None: the
        environment's, else strict)."""
        x = TensorDesc(dtype, (n, self.c, self.h, self.w))
        w = TensorDesc(dtype, (self.k, self.c // self.groups, self.r, self.s))
        return ConvProblem.create(direction, x, w,
                                  ConvDesc(self.pad, self.stride, groups=self.groups, math_mode=math_mode))

    def driver_args(self, n: int) -> str:
        return (f"-n {n} -c {self.c} -H {self.h} -W {self.w} -k {self.k} -y {self.r} -x {self.s} "
                f"-p {self.pad} -q {self.pad} -u {self.stride} -v {self.stride}"
                + (f" -g {self.groups}" if self.groups > 1 else ""))


def _l(name, c, h, k, r, pad=0, stride=1, w=None) -> Layer:
    return Layer(name, c, h, w or h, k, r, r, pad, stride)


# Caffe's AlexNet without the two-group split (Tsai et al., Table 2), at N = 128.
ALEXNET = (
    _l("conv1", 3, 227, 96, 11, 0, 4), _l("conv2", 96, 27, 256, 5, 2), _l("conv3", 256, 13, 384, 3, 1),
    _l("conv4", 384, 13, 384, 3, 1), _l("conv5", 384, 13, 256, 3, 1),
)

# VGG-16 (224x224 input): its unique conv layers, all 3x3 pad 1 stride 1.
VGG16 = tuple(_l(f"conv{i}", c, h, k, 3, 1) for i, (c, h, k) in enumerate(
    [(3, 224, 64), (64, 224, 64), (64, 112, 128), (128, 112, 128), (128, 56, 256), (256, 56, 256),
     (256, 28, 512), (512, 28, 512), (512, 14, 512)], 1))

# ResNet-50 v1.5 (torchvision; stride on the 3x3): its unique conv layers, 224x224 input.
RESNET50 = (
    _l("conv1", 3, 224, 64, 7, 3, 2),
    _l("l1.a", 64, 56, 64, 1), _l("l1.b", 64, 56, 64, 3, 1), _l("l1.c", 64, 56, 256, 1), _l("l1.red", 256, 56, 64, 1),
    _l("l2.0a", 256, 56, 128, 1), _l("l2.0b", 128, 56, 128, 3, 1, 2), _l("l2.c", 128, 28, 512, 1),
    _l("l2.down", 256, 56, 512, 1, 0, 2), _l("l2.a", 512, 28, 128, 1), _l("l2.b", 128, 28, 128, 3, 1),
    _l("l3.0a", 512, 28, 256, 1), _l("l3.0b", 256, 28, 256, 3, 1, 2), _l("l3.c", 256, 14, 1024, 1),
    _l("l3.down", 512, 28, 1024, 1, 0, 2), _l("l3.a", 1024, 14, 256, 1), _l("l3.b", 256, 14, 256, 3, 1),
    _l("l4.0a", 1024, 14, 512, 1), _l("l4.0b", 512, 14, 512, 3, 1, 2), _l("l4.c", 512, 7, 2048, 1),
    _l("l4.down", 1024, 14, 2048, 1, 0, 2), _l("l4.a", 2048, 7, 512, 1), _l("l4.b", 512, 7, 512, 3, 1),
)


def _inception(name: str, c: int, h: int, n1, n3r, n3, n5r, n5, pool) -> tuple[Layer, ...]:
    return (_l(f"{name}.1x1", c, h, n1, 1), _l(f"{name}.3x3r", c, h, n3r, 1), _l(f"{name}.3x3", n3r, h, n3, 3, 1),
            _l(f"{name}.5x5r", c, h, n5r, 1), _l(f"{name}.5x5", n5r, h, n5, 5, 2), _l(f"{name}.pool", c, h, pool, 1))


# GoogLeNet / Inception-v1 (Szegedy et al., Table 1), 224x224 input.
GOOGLENET = (
    _l("conv1", 3, 224, 64, 7, 3, 2), _l("conv2r", 64, 56, 64, 1), _l("conv2", 64, 56, 192, 3, 1),
    *_inception("3a", 192, 28, 64, 96, 128, 16, 32, 32), *_inception("3b", 256, 28, 128, 128, 192, 32, 96, 64),
    *_inception("4a", 480, 14, 192, 96, 208, 16, 48, 64), *_inception("4b", 512, 14, 160, 112, 224, 24, 64, 64),
    *_inception("4c", 512, 14, 128, 128, 256, 24, 64, 64), *_inception("4d", 512, 14, 112, 144, 288, 32, 64, 64),
    *_inception("4e", 528, 14, 256, 160, 320, 32, 128, 128), *_inception("5a", 832, 7, 256, 160, 320, 32, 128, 128),
    *_inception("5b", 832, 7, 384, 192, 384, 48, 128, 128),
)

# MobileNet v1 (Howard et al., Table 1; width 1.0, 224x224): each 3x3 depthwise (groups = C) and 1x1
# pointwise shape once.
def _mobilenet() -> tuple[Layer, ...]:
    layers, c, h = [_l("conv1", 3, 224, 32, 3, 1, 2)], 32, 112
    for k, stride in ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (1024, 2), (1024, 1)):
        layers.append(Layer(f"dw{h}x{c}s{stride}", c, h, h, c, 3, 3, 1, stride, groups=c))
        h = (h - 1) // stride + 1
        layers.append(_l(f"pw{h}x{c}-{k}", c, h, k, 1))
        c = k
    return _unique(tuple(layers))


# Boda's 43 convolutions (Moskewicz et al., Table 1): (KSZ, S, pad, OC, input X, input channels), batch 5.
_BODA = [
    (5, 1, 2, 32, 28, 16), (5, 1, 2, 64, 14, 32), (1, 1, 0, 256, 7, 832), (1, 1, 0, 112, 14, 512),
    (1, 1, 0, 128, 14, 512), (1, 1, 0, 64, 28, 256), (1, 1, 0, 64, 56, 64), (1, 1, 0, 128, 14, 528),
    (1, 1, 0, 144, 14, 512), (1, 1, 0, 96, 28, 192), (1, 1, 0, 384, 7, 832), (1, 1, 0, 160, 14, 512),
    (1, 1, 0, 160, 14, 528), (1, 1, 0, 4096, 1, 4096), (1, 1, 0, 192, 14, 480), (5, 1, 2, 128, 14, 32),
    (3, 1, 1, 320, 7, 160), (1, 1, 0, 384, 13, 384), (1, 1, 0, 128, 28, 256), (1, 1, 0, 256, 14, 528),
    (1, 1, 0, 96, 54, 96), (3, 1, 1, 384, 7, 192), (3, 1, 1, 208, 14, 96), (1, 1, 0, 1000, 6, 1024),
    (1, 1, 0, 1024, 6, 1024), (6, 1, 0, 4096, 6, 256), (3, 1, 1, 224, 14, 112), (1, 1, 0, 256, 27, 256),
    (3, 1, 1, 256, 14, 128), (5, 1, 2, 96, 28, 32), (3, 1, 1, 288, 14, 144), (3, 1, 1, 128, 28, 96),
    (3, 1, 1, 320, 14, 160), (11, 4, 0, 96, 224, 3), (11, 4, 0, 96, 227, 3), (7, 2, 3, 64, 224, 3),
    (3, 1, 1, 1024, 6, 384), (3, 1, 1, 256, 13, 384), (3, 1, 1, 384, 13, 256), (3, 1, 1, 192, 28, 128),
    (3, 1, 1, 384, 13, 384), (3, 1, 1, 192, 56, 64), (5, 1, 2, 256, 27, 96),
]
BODA = tuple(_l(f"b{i:02d}", c, x, oc, ksz, pad, st) for i, (ksz, st, pad, oc, x, c) in enumerate(_BODA, 1))

def _unique(layers: tuple[Layer, ...]) -> tuple[Layer, ...]:
    """Each distinct shape once (the first name kept): tuning and benchmarks need no repeats."""
    seen: dict[tuple, Layer] = {}
    for layer in layers:
        seen.setdefault(_shape(layer), layer)
    return tuple(seen.values())


def _shape(layer: Layer) -> tuple:
    return (layer.c, layer.h, layer.w, layer.k, layer.r, layer.s, layer.pad, layer.stride, layer.groups)


MOBILENET = _mobilenet()
LAYER_SETS: dict[str, tuple[Layer, ...]] = {
    "alexnet": ALEXNET, "vgg16": VGG16, "resnet50": RESNET50, "googlenet": _unique(GOOGLENET), "boda": BODA,
    "mobilenet": MOBILENET,
}
NETWORKS = LAYER_SETS
# The batch sizes the benchmarks use for each set (the papers' and the issue's).
DEFAULT_BATCH = {"alexnet": 128, "vgg16": 32, "resnet50": 32, "googlenet": 32, "boda": 5, "mobilenet": 32}


def layer_set(name: str) -> tuple[Layer, ...]:
    """The layers of a named set (alexnet, vgg16, resnet50, googlenet, boda, mobilenet)."""
    try:
        return LAYER_SETS[name.lower()]
    except KeyError:
        raise BadParam("network", f"unknown layer set {name!r}; known: {sorted(LAYER_SETS)}") from None


layers = layer_set


def problems(name: str, batch: int, directions: Sequence[Direction] = (Direction.FORWARD,)) -> list[ConvProblem]:
    """The layers of the named set at a batch size, as problems in each direction."""
    return [layer.problem(batch, d) for layer in layer_set(name) for d in directions]


# -- whole passes: every convolution of a network in order (repeats included), for end-to-end timing ------
def resnet_pass(depth: int, size: int = 224) -> list[tuple[Layer, bool]]:
    """torchvision ResNet-18/34/50's convolutions in execution order with an input of size x size, each
    with whether a ReLU follows it directly (after its folded batch norm): the block tails and the
    downsample projections are added to the shortcut first."""
    blocks = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3)}
    if depth not in blocks:
        raise BadParam("depth", f"ResNet depth must be one of {sorted(blocks)}, got {depth}")
    bottleneck = depth >= 50
    out: list[tuple[Layer, bool]] = [(_l("conv1", 3, size, 64, 7, 3, 2), True)]
    h, c = -(-size // 4), 64   # after the stride-2 stem and the stride-2 max pool
    for stage, (count, planes) in enumerate(zip(blocks[depth], (64, 128, 256, 512)), 1):
        for b in range(count):
            stride = 2 if stage > 1 and b == 0 else 1
            width, k = planes, planes * (4 if bottleneck else 1)
            name = f"l{stage}.{b}"
            h_out = -(-h // stride)
            if bottleneck:
                out += [(_l(f"{name}.a", c, h, width, 1), True), (_l(f"{name}.b", width, h, width, 3, 1, stride), True),
                        (_l(f"{name}.c", width, h_out, k, 1), False)]
            else:
                out += [(_l(f"{name}.a", c, h, width, 3, 1, stride), True),
                        (_l(f"{name}.b", width, h_out, k, 3, 1), False)]
            if b == 0 and (stride != 1 or c != k):
                out.append((_l(f"{name}.down", c, h, k, 1, 0, stride), False))
            c, h = k, h_out
    return out
