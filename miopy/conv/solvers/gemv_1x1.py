"""ConvGemv1x1: fully connected layers (1x1 convolutions of 1x1 images) with up to 64 images, forward."""
from __future__ import annotations

from collections.abc import Iterator

from ...device import DeviceInfo, index_reason, local_memory_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, ceil_div, require, require_none
from ...tensor import FLOAT_BYTES
from ..problem import ConvProblem
from .common import ConvSolver

MAX_IMAGES = 64         # beyond, a tiled GEMM has work-groups enough and reuses each weight more often
MAX_OUTS = 32           # ROWS x images per group: partial sums in registers, and local memory per work-item
SMALL_BATCH = 8         # up to this many images the default keeps one image group (the matrix-vector form)
SMALL_BATCH_OUTS = 16   # ... and at most this many partial sums (the tuned form of N <= 8, unchanged)
DEFAULT_GROUPS = (1, 2, 4, 8, 16)   # the defaults leave a 32-wide SIMD unit at least 2 lanes of C
MIN_LANES = 8           # work-items of an image group along C (fewer: long C sums on few work-items)
MAX_STAGE_REGS = 8      # float4s of the next weight tile each work-item holds in flight
STAGE_DEFAULT_REGS = 2  # the default's: 32 distinct bytes in flight per work-item (best of 2/4/8 on an H100)


def images_per_group(n: int, image_groups: int) -> int:
    """Images each image group sums: the last group may hold fewer."""
    return ceil_div(n, image_groups)


def stage_reason(rows: int, groups: int, vec: int, stage: int) -> str | None:
    """Why a weight tile of STAGE steps cannot be fetched in whole float4s per work-item, or None."""
    if not stage:
        return None
    if vec != 4:
        return f"STAGE={stage} needs VEC=4"
    if rows * stage % groups:
        return f"ROWS*STAGE = {rows * stage} is not a multiple of IMAGE_GROUPS={groups}"
    if rows * stage // groups > MAX_STAGE_REGS:
        return f"ROWS*STAGE/IMAGE_GROUPS = {rows * stage // groups} float4s per work-item > {MAX_STAGE_REGS}"
    return None


def local_floats(n: int, params: Params) -> int:
    """Local memory of a work-group in floats: the partial sums, or the weight tile where larger."""
    sums = params["ROWS"] * images_per_group(n, params["IMAGE_GROUPS"]) * params["WG"]
    tile = params["ROWS"] * params["STAGE"] * (params["WG"] // params["IMAGE_GROUPS"]) * 4
    return max(sums, tile)


class ConvGemv1x1(ConvSolver):
    """y (N x K) = x (N x C) * W^T for a 1x1 convolution of 1x1 images with N <= 64 (a classifier):
    bound by the weights' bandwidth, with too few rows (N) for a tiled GEMM to fill the device unless it
    split its inner dimension.

    One work-group per ROWS output channels reads each weight once, coalesced, for all N images: its
    work-items form IMAGE_GROUPS groups (each summing N / IMAGE_GROUPS images; the group index fastest, so
    the groups of one SIMD unit share each weight fetch) whose lanes split the C-long sums VEC channels at
    a time, ROWS x N / IMAGE_GROUPS partial sums per work-item in registers, added over the lanes in local
    memory in a fixed order (deterministic). With STAGE the work-group copies tiles of weights through local
    memory instead, each weight fetched by one work-item and the next tile's loads in flight while the
    current one is summed (image groups otherwise hold copies of the same weights: few distinct bytes in
    flight per work-item). K / ROWS work-groups fill the device even when N is 1; with one image group it
    is a matrix-vector product per image (N <= 8). Applies the fusion epilogue. Does not apply to larger
    images, padding, groups, more than 64 images or the backward directions (ConvGemm1x1 covers those).
    """

    id = "ConvGemv1x1"
    algorithm = "gemm"
    supports_epilogue = True
    grid = {"ROWS": (1, 2, 4, 8, 16), "IMAGE_GROUPS": (1, 2, 4, 8, 16, 32), "WG": (64, 128, 256), "VEC": (1, 4),
            "STAGE": (0, 2, 4, 8)}
    param_doc = {"ROWS": "output channels per work-group",
                 "IMAGE_GROUPS": "groups of work-items, each summing N / IMAGE_GROUPS images",
                 "WG": "work-items per work-group (IMAGE_GROUPS x lanes splitting each C-long sum)",
                 "VEC": "consecutive channels per load (4: 16-byte float4 loads; C a multiple of 4)",
                 "STAGE": "0: weights read straight from global memory; S: tiles of S steps of every lane copied "
                          "through local memory, the next one's loads in flight (VEC 4)"}

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require((problem.r, problem.s) == (1, 1), "filter is not 1x1")
        require(not any(problem.conv.pads), f"padding {problem.conv.pad_text()} is not 0")
        require((problem.in_h, problem.in_w) == (1, 1), f"images are {problem.in_h}x{problem.in_w}, not 1x1")
        require(problem.groups == 1, "grouped convolution is not implemented")
        require(problem.n <= MAX_IMAGES, f"{problem.n} images > {MAX_IMAGES}")
        require(problem.is_packed, "tensors must be packed NCHW")
        require_none(index_reason(*(d.element_span for d in (problem.x, problem.w, problem.y))))

    def invalid_reason(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason is not None:
            return reason
        rows, groups, wg, vec = params["ROWS"], params["IMAGE_GROUPS"], params["WG"], params["VEC"]
        per_group = images_per_group(problem.n, groups)
        if rows * per_group > MAX_OUTS:
            return f"ROWS*ceil(N/IMAGE_GROUPS) = {rows * per_group} partial sums per work-item > {MAX_OUTS}"
        if rows > 1 and rows >= 2 * problem.k:
            return f"ROWS={rows} is at least twice K={problem.k}"
        if groups > problem.n:
            return f"IMAGE_GROUPS={groups} > N={problem.n} images"
        if problem.c % vec:
            return f"C={problem.c} is not a multiple of VEC={vec}"
        if wg // groups < MIN_LANES:
            return f"WG/IMAGE_GROUPS = {wg // groups} lanes per image group < {MIN_LANES}"
        return (stage_reason(rows, groups, vec, params["STAGE"]) or work_group_reason(dev, (wg,))
                or local_memory_reason(dev, local_floats(problem.n, params) * FLOAT_BYTES))

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        """Up to 8 images, the matrix-vector form as tuned before: one image group, the most output channels
        per work-group (<= 8, <= 16 sums) that keeps K / ROWS >= 2 x compute units. More images: every
        work-group reads all of x, so the most output channels that keep K / ROWS >= compute units, then
        the fewest image groups (longest lanes) within the registers, at least 2 lanes per 32-wide SIMD
        unit, 16-byte loads where C allows, weights staged through local memory with 4 float4s per
        work-item in flight."""
        wg = 256 if dev.is_gpu else 64
        small = problem.n <= SMALL_BATCH
        vec = 4 if not small and problem.c % 4 == 0 else 1
        min_groups = dev.compute_units * (2 if small else 1)
        for rows in (8, 4, 2) if small else (16, 8, 4, 2):
            if ceil_div(problem.k, rows) < min_groups:
                continue
            for groups in (1,) if small else DEFAULT_GROUPS:
                params = {"ROWS": rows, "IMAGE_GROUPS": groups, "WG": wg, "VEC": vec, "STAGE": 0}
                sums = rows * images_per_group(problem.n, groups)
                if sums <= (SMALL_BATCH_OUTS if small else MAX_OUTS) and self.is_valid(problem, params, dev):
                    return params if small else self._staged(problem, params, dev)
        params = next(p for p in self._fallbacks(wg, vec) if self.is_valid(problem, p, dev))
        return params if small else self._staged(problem, params, dev)

    def _staged(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> Params:
        """params with the smallest STAGE that keeps STAGE_DEFAULT_REGS float4s in flight per work-item,
        else the largest valid one, else unstaged."""
        valid = [s for s in self.grid["STAGE"] if s and self.is_valid(problem, {**params, "STAGE": s}, dev)]
        enough = [s for s in valid if params["ROWS"] * s // params["IMAGE_GROUPS"] >= STAGE_DEFAULT_REGS]
        stage = enough[0] if enough else (valid[-1] if valid else 0)
        return {**params, "STAGE": stage}

    def _fallbacks(self, wg: int, vec: int) -> Iterator[Params]:
        """One output channel per work-group, the fewest image groups that fit the registers."""
        for size in (wg, 64):
            for groups in self.grid["IMAGE_GROUPS"]:
                yield {"ROWS": 1, "IMAGE_GROUPS": groups, "WG": size, "VEC": vec, "STAGE": 0}

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        rows, groups, wg = params["ROWS"], params["IMAGE_GROUPS"], params["WG"]
        defines = {**problem.dtype.defines, "N": problem.n, "C": problem.c, "K": problem.k, "ROWS": rows,
                   "IMAGE_GROUPS": groups, "WG": wg, "VEC": params["VEC"], "STAGE": params["STAGE"]}
        args: tuple = ("x", "w", "y")
        if epilogue is not None:
            defines.update(epilogue.defines())
            args += tuple(epilogue.args)
        spec = KernelSpec.make("conv_gemv.cl", "conv_gemv", defines, ("-cl-mad-enable",))
        launch = KernelLaunch(spec, (ceil_div(problem.k, rows) * wg,), (wg,), args)
        return Solution(self.id, dict(params), (launch,))
