"""ConvCpuDirect: direct convolution in register tiles of float vectors, for CPU OpenCL devices (PoCL)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...device import DeviceInfo, index_reason
from ...kernel_cache import KernelSpec
from ...solver import Arg, KernelLaunch, Params, Solution, require, require_none, round_up
from ..problem import ConvProblem, Direction
from .common import ConvSolver, problem_defines

KERNEL_FILE = "conv_cpu_direct.cl"
PAD_FILE = "conv_cpu_pad.cl"
PAD_WG = 16              # rows per work-group of the padding copy
_KERNELS = {Direction.FORWARD: ("cpu_fwd", ("x", "w", "y")),
            Direction.BACKWARD_DATA: ("cpu_bwd_data", ("x", "w", "y")),
            Direction.BACKWARD_WEIGHTS: ("cpu_bwd_weights", ("x", "w", "y"))}
MAX_VW = 16              # the grid's widest vector: padded rows are sized for it
MAX_TILE_FLOATS = 128    # accumulator floats per work-item: 16 AVX2 registers' worth; beyond this they spill
MAX_WASTE = 2.0          # a vector may cover at most twice the columns that exist (else a narrower one)
DEFAULT_TILE_FLOATS = 64  # accumulators of the default tile (8 of AVX2's 16 registers: the rest for operands)
WEIGHTS_TILE_FLOATS = 96  # backward-weights: 4 channels x 3 taps x 8 columns


def tile_channels(p: ConvProblem) -> int:
    """Channels KT divides: K/G forward and backward-weights, C/G backward-data (the channels written)."""
    return p.c_per_group if p.direction is Direction.BACKWARD_DATA else p.k_per_group


def flattens(p: ConvProblem) -> bool:
    """1x1, stride 1, no padding: each channel plane is one row of H*W columns (a plain GEMM)."""
    return (p.r, p.s, p.stride_h, p.stride_w) == (1, 1, 1, 1) and p.conv.pads == (0, 0, 0, 0)


def kernel_defines(p: ConvProblem) -> dict[str, int]:
    """Problem defines, with a flattening problem's planes as single rows (longer vectors, less waste)."""
    defines = problem_defines(p)
    if flattens(p):
        defines.update(H=1, W=p.in_h * p.in_w, P=1, Q=p.out_h * p.out_w)
    return defines


def vector_columns(p: ConvProblem) -> int:
    """Columns one vector row spans: output columns (forward, backward-weights), dx columns per phase."""
    d = kernel_defines(p)
    if p.direction is Direction.BACKWARD_DATA:
        return -(-d["W"] // d["STRIDE_W"])
    return d["Q"]


@dataclass(frozen=True)
class PaddedRows:
    """A zero-padded copy of a row-read input in the workspace (conv_cpu_pad.cl): planes x rows x width."""

    role: str        # the problem tensor copied
    planes: int
    rows: int
    src_w: int
    width: int
    left: int
    phases: int      # columns stored phase by phase mod this (the stride of the reads)
    offset: int      # elements into the workspace

    @property
    def elements(self) -> int:
        return self.planes * self.rows * self.width

    def launch(self, dtype_defines: dict[str, int]) -> KernelLaunch:
        defines = {"PLANES": self.planes, "ROWS": self.rows, "SRC_W": self.src_w, "DST_W": self.width,
                   "LEFT": self.left, "PHASES": self.phases, **dtype_defines}
        spec = KernelSpec.make(PAD_FILE, "cpu_pad", defines)
        return KernelLaunch(spec, (round_up(self.planes * self.rows, PAD_WG),), (PAD_WG,),
                            (self.role, "workspace", np.int32(self.offset)))


def padded_inputs(p: ConvProblem) -> tuple[PaddedRows, ...]:
    """The padded copies p's direction reads (none for 1x1 stride-1 unpadded problems): wide enough for any
    VW of the grid, so the workspace does not depend on params."""
    if flattens(p):
        return ()
    if p.direction is Direction.BACKWARD_DATA:
        left = -(-(p.s - 1) * p.dil_w // p.stride_w)
        width = left + round_up(-(-p.in_w // p.stride_w), MAX_VW) + (p.stride_w - 1 + p.pad_w) // p.stride_w + 1
        return (PaddedRows("y", p.n * p.k, p.out_h, p.out_w, width, left, 1, 0),)
    run = round_up(p.out_w, MAX_VW) + (p.s - 1) * p.dil_w // p.stride_w + 1   # columns per phase read
    x_rows = PaddedRows("x", p.n * p.c, p.in_h, p.in_w, run * p.stride_w, p.pad_w, p.stride_w, 0)
    if p.direction is Direction.FORWARD:
        return (x_rows,)
    return (x_rows, PaddedRows("y", p.n * p.k, p.out_h, p.out_w, round_up(p.out_w, MAX_VW), 0, 1, x_rows.elements))


class ConvCpuDirect(ConvSolver):
    """Direct convolution where each work-item holds a KT-channel x VW-column tile of outputs in VW-wide
    float vectors, in all three directions (conv_cpu_direct.cl): no local memory, no barriers, the
    work-group size left to the runtime, so PoCL runs it as straight vector code on each core.

    Forward and backward-data read input rows with vector loads (strided ones gather, stride 2 by
    shuffling two loads); backward-data splits dx columns by phase mod stride so no lane idles;
    backward-weights holds KT x ST filter taps as vector partial sums along the output row and reduces them
    once (deterministic). 1x1 stride-1 unpadded layers run as plain GEMMs over whole planes.

    Applies to CPU devices only (a GPU runs this shape poorly and keeps its own solvers); packed NCHW
    tensors below 2^31 elements. Wins on CPUs over every layer shape with a few channels or more; a
    layer with 1-2 output channels leaves most of the tile empty.
    """

    id = "ConvCpuDirect"
    algorithm = "direct"
    directions = frozenset(Direction)
    supports_epilogue = True
    device_class = "CPU"
    grid = {"VW": (8, 16, 4), "KT": (6, 4, 8, 3, 2, 12, 1), "ST": (1, 3, 2, 5, 7)}
    param_doc = {"VW": "vector width: output columns per work-item",
                 "KT": "output channels per work-item (backward-data: dx channels)",
                 "ST": "backward-weights: filter columns per work-item (1 in the other directions)"}

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(self.device_class in dev.device_type,
                f"device type {dev.device_type} is not CPU (other devices keep their own solvers)")
        require(problem.is_packed, "tensors must be packed NCHW")
        require_none(index_reason(*(d.element_span for d in (problem.x, problem.w, problem.y)),
                                  sum(rows.elements for rows in padded_inputs(problem))))

    def invalid_reason(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason is not None:
            return reason
        vw, kt, st = params["VW"], params["KT"], params["ST"]
        if tile_channels(problem) % kt:
            return f"KT={kt} does not divide the {tile_channels(problem)} channels per group"
        if problem.direction is not Direction.BACKWARD_WEIGHTS and st != 1:
            return "ST applies to backward-weights only"
        if problem.s % st:
            return f"ST={st} does not divide the filter width {problem.s}"
        if kt * st * vw > MAX_TILE_FLOATS:
            return f"tile of {kt * st * vw} accumulators > {MAX_TILE_FLOATS}"
        columns = vector_columns(problem)
        if vw > min(self.grid["VW"]) and -(-columns // vw) * vw > MAX_WASTE * columns:
            return f"VW={vw} covers more than {MAX_WASTE}x the {columns} columns"
        return None

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        """The largest tile within DEFAULT_TILE_FLOATS accumulators whose vector wastes under a third of the
        row (more channels on a tie: fewer loads per FMA); backward-weights takes a whole filter row of taps
        (ST = S up to 7) on 8-wide vectors, and as many channels as fit WEIGHTS_TILE_FLOATS. Measured on PoCL
        (AVX2 code): 16 x 4 and 8 x 8 tiles reach 100-150 GFLOP/s of CPU time on 3x3 layers, 8 x 4 runs 20-40%
        slower."""
        columns, channels = vector_columns(problem), tile_channels(problem)
        if problem.direction is Direction.BACKWARD_WEIGHTS:
            st, vw = max(t for t in self.grid["ST"] if problem.s % t == 0), 8 if columns >= 6 else 4
            kt = max((t for t in self.grid["KT"] if channels % t == 0 and t * st * vw <= WEIGHTS_TILE_FLOATS),
                     default=1)
            return {"VW": vw, "KT": kt, "ST": st}
        best = (0, 0, 0)   # (accumulators, KT, VW)
        for vw in sorted(self.grid["VW"], reverse=True):
            if -(-columns // vw) * vw > 1.5 * columns and vw > min(self.grid["VW"]):
                continue
            kt = max((t for t in self.grid["KT"] if channels % t == 0 and t * vw <= DEFAULT_TILE_FLOATS), default=1)
            best = max(best, (kt * vw, kt, vw))
        return {"VW": best[2], "KT": best[1], "ST": 1}

    def workspace_bytes(self, problem: ConvProblem) -> int:
        return problem.dtype.itemsize * sum(rows.elements for rows in padded_inputs(problem))

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        name, roles = _KERNELS[problem.direction]
        padded = padded_inputs(problem)
        args: tuple[Arg, ...] = roles
        defines = {**kernel_defines(problem), **problem.dtype.defines, "VW": params["VW"], "KT": params["KT"],
                   **_row_defines(problem, padded)}
        if problem.direction is Direction.BACKWARD_WEIGHTS:
            defines["ST"] = params["ST"]
            dy_offset = np.int32(padded[1].offset if padded else 0)
            args = ("workspace", "w", "workspace", dy_offset) if padded else ("x", "w", "y", dy_offset)
        elif padded:
            args = tuple("workspace" if role == padded[0].role else role for role in args)
        if epilogue is not None:
            defines.update(epilogue.defines())
            args = args + tuple(epilogue.args)
        spec = KernelSpec.make(KERNEL_FILE, name, defines, ("-cl-mad-enable",))
        launch = KernelLaunch(spec, _global_size(problem, defines, params), None, args)
        pads = tuple(rows.launch(problem.dtype.defines) for rows in padded)
        return Solution(self.id, dict(params), (*pads, launch), self.workspace_bytes(problem))


def _row_defines(p: ConvProblem, padded: tuple[PaddedRows, ...]) -> dict[str, int]:
    """PADDED, XP_W, LEFT (and QP) for the kernel: the padded copies' layout, else the tensors' own rows."""
    if padded:
        defines = {"PADDED": 1, "XP_W": padded[0].width, "LEFT": padded[0].left, "PHASES": padded[0].phases}
        return {**defines, "QP": padded[1].width} if len(padded) > 1 else defines
    d = kernel_defines(p)
    return {"PADDED": 0, "XP_W": d["Q"] if p.direction is Direction.BACKWARD_DATA else d["W"], "LEFT": 0,
            "PHASES": 1, "QP": d["Q"]}


def _global_size(p: ConvProblem, d: dict[str, int], params: Params) -> tuple[int, ...]:
    vw, kt = params["VW"], params["KT"]
    if p.direction is Direction.FORWARD:
        return (-(-d["Q"] // vw), d["P"], p.n * p.k // kt)
    if p.direction is Direction.BACKWARD_DATA:
        return (d["STRIDE_W"] * -(-vector_columns(p) // vw), d["H"], p.n * p.c // kt)
    return (p.c_per_group * p.r * p.s // params["ST"], p.k // kt)
