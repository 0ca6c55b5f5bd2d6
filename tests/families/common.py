"""What the family modules of tests/families share: the fuzz test's calls (Arg, Call, HANDLE, poisoned and
positive buffers, Functional), the validation test's warm cases (WarmArrays, Warm) and driver entries
(Driver, nchw, conv_dims)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pyopencl.array as cl_array

from miopy import TensorDesc

POISON = -7.25  # what every buffer holds before a call


# -- the fuzz test: descriptor-API calls ---------------------------------------------------------------------
@dataclass
class Arg:
    """One argument of a public call: what kind of thing it is (so it is spoiled in kind) and its value.

    Kinds: "handle", "scalar", "desc" (a TensorDesc), "buffer" (of the TensorDesc argument at index ``desc``),
    "raw" (an untyped byte buffer: dropout's reserve space, LRN's workspace); any other kind names a mode or a
    descriptor object ("mode", "conv", "pool", "lrn", "dropout", "noise", ...), spoiled with bad modes.
    """

    kind: str
    value: Any
    desc: int = -1   # a buffer's descriptor: the index of that argument


@dataclass
class Call:
    function: Any
    args: list[Arg] = field(default_factory=list)
    original: list[Any] = field(default_factory=list)   # the valid values, before any spoiling
    setup: Any = None   # called with the test's handle before the call (a forward that saves for a backward)
    watch: list[Any] = field(default_factory=list)   # buffers held elsewhere (dropout's states, in its descriptor)
    # that a refused call must leave untouched too

    def __post_init__(self) -> None:
        self.original = [a.value for a in self.args]

    def prepare(self, handle) -> None:
        if self.setup is not None:
            self.setup(handle)
            handle.finish()


HANDLE = object()   # stands for the test's handle in a valid call


def poisoned(queue, desc: TensorDesc):
    """A poisoned array for desc: its dims when packed, else flat storage of its span."""
    shape = desc.dims if desc.is_packed else (desc.element_span,)
    return cl_array.to_device(queue, np.full(shape, POISON, np.float32))


def positive(queue, desc: TensorDesc):
    """An array of ones for desc (a variance, or an input a backward call must not see poisoned)."""
    return cl_array.to_device(queue, np.ones(desc.dims, np.float32))


# -- the fuzz test: functional calls -------------------------------------------------------------------------
class Functional(NamedTuple):
    """A functional call: the function, the shapes of its array arguments, its valid keyword arguments."""

    function: Callable[..., Any]
    shapes: list[tuple[int, ...]]
    keywords: dict[str, Any]
    positive: tuple[int, ...] = ()   # arrays holding ones rather than poison (a variance must be > 0)


# -- the validation test: a bool on a warm call path ---------------------------------------------------------
def array(handle, *shape: int, seed: int = 0):
    """Random values in [0.5, 1.5) on the handle."""
    return handle.to_device((np.random.default_rng(seed).random(shape) + 0.5).astype(np.float32))


@dataclass(frozen=True)
class WarmArrays:
    """The arrays the warm cases share: x and y of descriptor d (1, 4, 6, 6), weights w (4, 4, 3, 3), the
    per-channel descriptor bn (1, 4, 1, 1), four statistics and a bias of that shape."""

    x: Any
    w: Any
    d: TensorDesc
    y: Any
    bn: TensorDesc
    stats: list[Any]
    bias: Any

    @classmethod
    def on(cls, handle) -> WarmArrays:
        return cls(x=array(handle, 1, 4, 6, 6), w=array(handle, 4, 4, 3, 3), d=TensorDesc("FP32", (1, 4, 6, 6)),
                   y=array(handle, 1, 4, 6, 6, seed=1), bn=TensorDesc("FP32", (1, 4, 1, 1)),
                   stats=[array(handle, 1, 4, 1, 1, seed=s) for s in range(4)], bias=array(handle, 1, 4, 1, 1))


@dataclass(frozen=True)
class Warm:
    """A memoised call path: call(handle, arrays, good) builds the plan a bool's key would find (a memo key
    cannot tell True from 1), then call(handle, arrays, bad) must raise BadParam."""

    call: Callable[[Any, WarmArrays, Any], Any]
    good: Any
    bad: Any


# -- the validation test: miopy-driver commands --------------------------------------------------------------
def nchw(c: int) -> list[str]:
    """-n -c -H -W for a 1 x c x 1024 x 1024 input."""
    return ["-n", "1", "-c", str(c), "-H", "1024", "-W", "1024"]


def conv_dims(c: int) -> list[str]:
    """A 1 x c x 1024 x 1024 input to a 1x1 convolution with one output channel (conv's and CBAInfer's flags)."""
    return [*nchw(c), "-k", "1", "-y", "1", "-x", "1"]


@dataclass(frozen=True)
class Driver:
    """What the validation test needs of one miopy-driver command: its seed flags (each refused when negative),
    big(c): flags for an input too big for the device (c channels of 1024 x 1024 FP32 values are just over its
    largest allocation; an FP16 command asks for twice as many), and whether it takes -i (timed iterations)."""

    seeds: tuple[str, ...] = ("-s",)
    big: Callable[[int], list[str]] = nchw
    iterations: bool = True
