"""Float64 dropout and the counter-based generator behind its masks (Philox-4x32-10, Salmon et al. 2011,
as in Random123 and PyTorch), in NumPy: the masks the device draws are reproduced bit for bit.

Element i (in the tensor's logical row-major order) of a draw keyed by seed, at state offset o, is kept when
word i % 4 of philox4x32_10(counter = (i // 4, 0, o mod 2^32, o // 2^32), key = (seed mod 2^32, seed // 2^32))
is at least round(p * 2^32); kept elements are scaled by 1 / (1 - p) (inverted dropout, as PyTorch).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .problem import CHECK_RATE, DropoutDirection, DropoutProblem

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(counter, key) -> np.ndarray:
    """Philox-4x32 with 10 rounds: counter (..., 4) and key (..., 2) of uint32 -> (..., 4) uint32."""
    c = [np.asarray(counter, np.uint64)[..., i] & _MASK32 for i in range(4)]
    k0, k1 = (np.asarray(key, np.uint64)[..., i] & _MASK32 for i in range(2))
    for _ in range(10):
        p0, p1 = _M0 * c[0], _M1 * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & _MASK32, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & _MASK32]
        k0, k1 = (k0 + _W0) & _MASK32, (k1 + _W1) & _MASK32
    return np.stack(c, axis=-1).astype(np.uint32)


def threshold(p: float) -> int:
    """The integer a uniform 32-bit word must reach for its element to be kept (2^32 at p = 1: none is)."""
    return min(int(round(p * 2.0**32)), 2**32)


def keep_mask(count: int, p: float, seed: int, offset: int = 0) -> np.ndarray:
    """uint8 mask (1 keep, 0 drop) of count elements for a draw keyed by seed at state offset."""
    index = np.arange(count, dtype=np.uint64)
    counter = np.zeros((count, 4), np.uint64)
    counter[:, 0] = index >> np.uint64(2)
    counter[:, 2], counter[:, 3] = offset & 0xFFFFFFFF, offset >> 32
    key = np.broadcast_to(np.array([seed & 0xFFFFFFFF, seed >> 32], np.uint64), (count, 2))
    words = philox4x32_10(counter, key)[np.arange(count), (index & np.uint64(3)).astype(np.intp)]
    return (words.astype(np.uint64) >= threshold(p)).astype(np.uint8)


def scale(p: float) -> float:
    return 0.0 if p >= 1.0 else 1.0 / (1.0 - p)


def forward(x, mask, p: float) -> np.ndarray:
    """y = x * mask / (1 - p); mask of x's shape (or flat, in x's row-major order)."""
    x = np.asarray(x, np.float64)
    return x * np.asarray(mask, np.float64).reshape(x.shape) * scale(p)


def backward(dy, mask, p: float) -> np.ndarray:
    """dx = dy * mask / (1 - p): the same mask as the forward."""
    return forward(dy, mask, p)




def reference_outputs(problem: DropoutProblem, t: Mapping[str, np.ndarray], p: float = CHECK_RATE) -> dict:
    """{"y" or "dx": float64 expected}; the mask is the reserve space's (backward, use_mask) or the one the
    state t["states"] (4 uint32: seed low, seed high, offset low, offset high) draws."""
    if problem.direction is DropoutDirection.BACKWARD:
        return {"dx": backward(t["dy"], np.asarray(t["reserve_space"])[:problem.x.element_count], p)}
    if problem.use_mask:
        mask = np.asarray(t["reserve_space"])[:problem.x.element_count]
    else:
        s = np.asarray(t["states"]).view(np.uint32).astype(np.uint64)
        mask = keep_mask(problem.x.element_count, p, int(s[0] | (s[1] << 32)), int(s[2] | (s[3] << 32)))
    return {"y": forward(t["x"], mask, p)}


def prepare_inputs(problem: DropoutProblem, host: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    """The registry's prepare hook: a mask read from the reserve space (backward, or forward with use_mask) holds
    0s and 1s (in place)."""
    if "reserve_space" in host and (problem.direction is DropoutDirection.BACKWARD or problem.use_mask):
        mask = host["reserve_space"]
        mask[...] = rng.integers(0, 2, mask.shape).astype(mask.dtype)
