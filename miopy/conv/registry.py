"""The convolution family's ordered solver registry. Order is the tie-break and the heuristic's preference:
most specialised first, the naive fallback last. Ids are stable strings; a retired id is never reused.
"""
from __future__ import annotations

from ..solver import Registry, Solver
from .heuristic import rank
from .problem import ConvProblem
from .reference import reference_outputs
from .solvers.cpu_direct import ConvCpuDirect
from .solvers.cpu_gemm import ConvCpuGemm
from .solvers.depthwise import ConvDepthwise
from .solvers.direct_local import ConvDirectLocal
from .solvers.fft import ConvFFT
from .solvers.gemm_1x1 import ConvGemm1x1
from .solvers.gemv_1x1 import ConvGemv1x1
from .solvers.im2col_gemm import ConvIm2colGemm
from .solvers.mma import ConvImplicitGemmMma
from .solvers.naive import ConvDirectNaive
from .solvers.winograd import ConvWinograd3x3F2, ConvWinograd3x3F4
from .solvers.winograd_large import ConvWinograd5x5F2, ConvWinograd5x5F3
from .solvers.winograd_wrw import (
    ConvWinograd3x3F2WrW,
    ConvWinograd3x3F4WrW,
    ConvWinograd5x5F2WrW,
    ConvWinograd5x5F3WrW,
)

REGISTRY = Registry("conv", ConvProblem, (
    ConvImplicitGemmMma(),
    ConvDepthwise(),
    ConvCpuDirect(),
    ConvCpuGemm(),
    ConvWinograd3x3F4(),
    ConvWinograd3x3F2(),
    ConvFFT(),
    ConvWinograd5x5F3(),
    ConvWinograd5x5F2(),
    ConvWinograd3x3F2WrW(),
    ConvWinograd3x3F4WrW(),
    ConvWinograd5x5F3WrW(),
    ConvWinograd5x5F2WrW(),
    ConvGemv1x1(),
    ConvGemm1x1(),
    ConvDirectLocal(),
    ConvIm2colGemm(),
    ConvDirectNaive(),
), reference=reference_outputs, rank=rank)

ALL: tuple[Solver, ...] = REGISTRY.ALL


def solvers() -> tuple[Solver, ...]:
    """The convolution registry after MIOPY_FIND_ONLY_SOLVER / MIOPY_DISABLE_SOLVERS."""
    return REGISTRY.solvers()


def get(solver_id: str) -> Solver:
    """The convolution solver with this id."""
    return REGISTRY.get(solver_id)
