"""ConvDepthwise: depthwise convolution (groups == C, K a multiple of C) by per-plane register tiles."""
from __future__ import annotations

from ...device import (
    INT_LIMIT,
    MAX_GRID_DIM,
    SPLIT_WORKSPACE_CAP,
    DeviceInfo,
    index_reason,
    local_memory_reason,
    work_group_reason,
)
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, require, require_none, round_up
from ...tensor import FLOAT_BYTES, DataType
from ..problem import ConvProblem, Direction
from .common import ConvSolver, problem_defines, stride_defines

KERNEL_FILE = "conv_depthwise.cl"
MAX_TAPS = 64            # R*S filter values (and backward-weights sums) held in registers per work-item
MAX_SPLIT = 128
MIN_SPLIT_ROWS = 4       # backward-weights: rows (n, p) per split, at least
REDUCE_WG = 64


def is_depthwise(p: ConvProblem) -> bool:
    """groups == C and K a multiple of C: one input channel per group (MobileNet's 3x3 layers; C = 1 too)."""
    return p.groups == p.c and p.k % p.c == 0


def out_plane(p: ConvProblem) -> tuple[int, int, int]:
    """(planes, rows, columns) of the written tensor: forward y (N*K planes), backward-data dx (N*C)."""
    if p.direction is Direction.FORWARD:
        return p.n * p.k, p.out_h, p.out_w
    return p.n * p.c, p.in_h, p.in_w


def window(p: ConvProblem, params: Params) -> tuple[int, int]:
    """Rows and columns of input one work-group stages (see SPAN_H / SPAN_W in the kernel)."""
    blk_h, blk_w = params["WG_Y"] * params["TILE_H"], params["WG_X"] * params["TILE_W"]
    if p.direction is Direction.FORWARD:
        return ((blk_h - 1) * p.stride_h + (p.r - 1) * p.dil_h + 1,
                (blk_w - 1) * p.stride_w + (p.s - 1) * p.dil_w + 1)
    return (blk_h - 1 + (p.r - 1) * p.dil_h) // p.stride_h + 2, (blk_w - 1 + (p.s - 1) * p.dil_w) // p.stride_w + 2


def max_split(p: ConvProblem) -> int:
    """Most work-groups per channel backward-weights may use on p (a power of two)."""
    cap = min(MAX_SPLIT, p.n * p.out_h // MIN_SPLIT_ROWS,
              SPLIT_WORKSPACE_CAP // (FLOAT_BYTES * p.k * p.r * p.s))
    return 1 << (max(cap, 1).bit_length() - 1)


def _pow2_ceil(value: int) -> int:
    return 1 << max(value - 1, 0).bit_length()


class ConvDepthwise(ConvSolver):
    """Depthwise convolution (groups == C, K = m*C for a channel multiplier m) in all three directions.

    Forward and backward-data: each work-item computes a TILE_H x TILE_W tile of one output plane in
    registers, its filter in registers, its input window staged in local memory or read through the
    cache; backward-data with stride > 1 skips the taps that land between outputs. Backward-weights:
    SPLIT work-groups per channel each sum a chunk of the N*P rows into R*S registers per work-item, add
    them in a fixed tree in local memory, and a second kernel adds the SPLIT partial sums in blocks of 16
    (deterministic; each work-item sums only N*P*Q / (SPLIT * work-group) terms, so rounding stays near
    that of a short sum).

    Meant for MobileNet-style depthwise layers (also C = groups = 1), which a GEMM formulation turns into
    C tiny GEMMs of one row; memory-bound, so its GPU time should approach the traffic of x and y (not yet
    measured on a GPU: benchmarks/weak_families.py).
    Does not apply to ordinary or grouped convolutions with more than one input channel per group, to
    filters of more than 64 taps, or to tensors spanning 2^31 elements or more (32-bit indices).
    """

    id = "ConvDepthwise"
    algorithm = "depthwise"
    directions = frozenset(Direction)
    dtypes = frozenset({DataType.FLOAT32, DataType.FLOAT16})
    supports_epilogue = True
    grid = {"TILE_H": (1, 2, 4), "TILE_W": (1, 2, 4, 8), "WG_X": (8, 16, 32, 64, 128, 256),
            "WG_Y": (1, 2, 4, 8, 16), "USE_LOCAL": (False, True), "SPLIT": (1, 2, 4, 8, 16, 32, 64, 128)}
    param_doc = {
        "TILE_H": "forward / backward-data: output rows per work-item (backward-weights: 1)",
        "TILE_W": "output columns per work-item (backward-weights: dy columns per step)",
        "WG_X": "work-group columns (backward-weights: the work-group size)",
        "WG_Y": "work-group rows (backward-weights: 1)",
        "USE_LOCAL": "forward / backward-data: stage the work-group's input window in local memory",
        "SPLIT": "backward-weights: work-groups per channel over chunks of N*P rows, then a fixed-order sum",
    }

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(is_depthwise(problem), f"not depthwise: groups={problem.groups}, C={problem.c}, K={problem.k}")
        require(problem.r * problem.s <= MAX_TAPS, f"filter {problem.r}x{problem.s} has more than {MAX_TAPS} taps")
        require_none(index_reason(*(d.element_span for d in (problem.x, problem.w, problem.y))))

    def invalid_reason(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason is None:
            if problem.direction is Direction.BACKWARD_WEIGHTS:
                reason = _wgrad_reason(problem, params, dev)
            else:
                reason = _tile_reason(problem, params, dev)
        return reason

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        if problem.direction is Direction.BACKWARD_WEIGHTS:
            return _default_wgrad(self, problem, dev)
        candidates = [c for c in _tile_candidates(dev) if self.is_valid(problem, c, dev)]
        if not candidates:
            return dict(SMALLEST)
        return max(candidates, key=lambda c: _tile_score(problem, c))

    def workspace_bytes(self, problem: ConvProblem) -> int:
        split = max_split(problem) if problem.direction is Direction.BACKWARD_WEIGHTS else 1
        return FLOAT_BYTES * split * problem.k * problem.r * problem.s if split > 1 else 0

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        defines = {**problem_defines(problem), **stride_defines(problem), **problem.dtype.defines,
                   "DIRECTION": int(problem.direction), **{name: int(params[name]) for name in self.grid}}
        if problem.direction is Direction.BACKWARD_WEIGHTS:
            return self._wgrad_solution(problem, params, defines)
        args: tuple = ("x", "w", "y")
        if epilogue is not None:
            defines.update(epilogue.defines())
            args += tuple(epilogue.args)
        del defines["SPLIT"]
        spec = KernelSpec.make(KERNEL_FILE, "dw_tile", defines, ("-cl-mad-enable",))
        planes, rows, cols = out_plane(problem)
        wg_x, wg_y = params["WG_X"], params["WG_Y"]
        tiles_x, tiles_y = -(-cols // (wg_x * params["TILE_W"])), -(-rows // (wg_y * params["TILE_H"]))
        launch = KernelLaunch(spec, (planes * tiles_x * wg_x, tiles_y * wg_y), (wg_x, wg_y), args)
        return Solution(self.id, dict(params), (launch,))

    def _wgrad_solution(self, problem: ConvProblem, params: Params, defines: dict) -> Solution:
        split, wg = params["SPLIT"], params["WG_X"]
        defines["ROWS_PER_SPLIT"] = -(-problem.n * problem.out_h // split)
        spec = KernelSpec.make(KERNEL_FILE, "dw_wgrad", defines, ("-cl-mad-enable",))
        # the partial-sum buffer is read at SPLIT > 1 only; without a split w stands in for it (never touched)
        partial = "workspace" if split > 1 else "w"
        launches = [KernelLaunch(spec, (problem.k * split * wg,), (wg,), ("x", "w", "y", partial))]
        if split > 1:
            count = problem.k * problem.r * problem.s
            reduce = KernelSpec.make(KERNEL_FILE, "dw_wgrad_reduce", defines, ("-cl-mad-enable",))
            launches.append(KernelLaunch(reduce, (round_up(count, REDUCE_WG),), (REDUCE_WG,), ("workspace", "w")))
        return Solution(self.id, dict(params), tuple(launches), self.workspace_bytes(problem))


# -- validity ---------------------------------------------------------------------------------------------
def _tile_reason(problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
    """Forward / backward-data: no split, blocks no larger than the plane, device limits."""
    if params["SPLIT"] != 1:
        return "SPLIT applies to backward-weights only"
    planes, rows, cols = out_plane(problem)
    blk_h, blk_w = params["WG_Y"] * params["TILE_H"], params["WG_X"] * params["TILE_W"]
    if blk_w > max(8, _pow2_ceil(cols)) or blk_h > max(1, _pow2_ceil(rows)):
        return f"block {blk_h}x{blk_w} larger than the {rows}x{cols} plane rounded up to powers of two"
    if -(-rows // blk_h) > MAX_GRID_DIM:
        return f"more than {MAX_GRID_DIM} blocks down a plane"
    if planes * -(-cols // blk_w) * params["WG_X"] >= INT_LIMIT:
        return "2^31 work-items or more along NDRange dim 0"
    reason = work_group_reason(dev, (params["WG_X"], params["WG_Y"]))
    if reason is None and params["USE_LOCAL"]:
        span_h, span_w = window(problem, params)
        reason = local_memory_reason(dev, FLOAT_BYTES * span_h * (span_w + 1), groups_per_unit=2)
    return reason


def _wgrad_reason(problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
    """Backward-weights: a 1-D work-group of WG_X, TILE_H 1, no local window, SPLIT within bounds."""
    if params["TILE_H"] != 1 or params["WG_Y"] != 1 or params["USE_LOCAL"]:
        return "backward-weights takes TILE_H=1, WG_Y=1 and USE_LOCAL=False"
    if params["SPLIT"] > max_split(problem):
        return f"SPLIT={params['SPLIT']} > {max_split(problem)} for {problem.n * problem.out_h} rows"
    if params["TILE_W"] > max(1, _pow2_ceil(problem.out_w)):
        return f"TILE_W={params['TILE_W']} wider than Q={problem.out_w} rounded up"
    if problem.k * params["SPLIT"] * params["WG_X"] >= INT_LIMIT:
        return "2^31 work-items or more"
    wg = params["WG_X"]
    return (work_group_reason(dev, (wg,))
            or local_memory_reason(dev, FLOAT_BYTES * problem.r * problem.s * wg))


# -- default params ---------------------------------------------------------------------------------------
# Valid on any applicable forward / backward-data problem and device: 8x1 work-items of one output each.
SMALLEST = {"TILE_H": 1, "TILE_W": 1, "WG_X": 8, "WG_Y": 1, "USE_LOCAL": False, "SPLIT": 1}


def _tile_candidates(dev: DeviceInfo) -> list[Params]:
    """Forward / backward-data shapes worth trying: 64-256 work-items (GPU), small tiles (CPU)."""
    if not dev.is_gpu:
        return [{**SMALLEST, "TILE_H": th, "TILE_W": tw, "WG_X": wx, "WG_Y": wy}
                for th, tw in ((2, 2), (1, 2), (1, 1)) for wx, wy in ((8, 4), (8, 1))]
    shapes = ((32, 4), (16, 8), (8, 16), (32, 8), (16, 16), (64, 2), (8, 8), (64, 4))
    tiles = ((2, 4), (4, 4), (2, 2), (1, 4), (4, 2), (1, 2), (2, 1), (1, 1))
    return [{**SMALLEST, "TILE_H": th, "TILE_W": tw, "WG_X": wx, "WG_Y": wy, "USE_LOCAL": True}
            for wx, wy in shapes for th, tw in tiles]


def _tile_score(problem: ConvProblem, params: Params) -> float:
    """Useful fraction of the blocks x outputs per work-item (up to 8) x work-items per group (up to 128)."""
    _, rows, cols = out_plane(problem)
    blk_h, blk_w = params["WG_Y"] * params["TILE_H"], params["WG_X"] * params["TILE_W"]
    fill = rows * cols / (round_up(rows, blk_h) * round_up(cols, blk_w))
    per_item = min(params["TILE_H"] * params["TILE_W"], 8) / 8
    threads = min(params["WG_X"] * params["WG_Y"], 128) / 128
    return fill * per_item ** 0.5 * threads ** 0.5


def _default_wgrad(solver: ConvDepthwise, problem: ConvProblem, dev: DeviceInfo) -> Params:
    """256 work-items (64 on a CPU), 4 columns a step, enough splits for 4 work-groups per compute unit."""
    wg = 256 if dev.is_gpu else 64
    tile = 4 if problem.out_w >= 4 else 1
    split = min(max_split(problem), _pow2_ceil(max(1, 4 * dev.compute_units // problem.k)))
    for size in (wg, 128, 64, 32, 16, 8):
        params = {"TILE_H": 1, "TILE_W": tile, "WG_X": size, "WG_Y": 1, "USE_LOCAL": False, "SPLIT": split}
        if solver.is_valid(problem, params, dev):
            return params
    return {"TILE_H": 1, "TILE_W": 1, "WG_X": 8, "WG_Y": 1, "USE_LOCAL": False, "SPLIT": 1}
