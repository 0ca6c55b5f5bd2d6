"""ConvGemv1x1: fully connected layers (1x1 convolutions of 1x1 images) with few images, forward."""
from __future__ import annotations

from ...device import DeviceInfo, index_reason, local_memory_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, require, require_none
from ..problem import ConvProblem
from ..solver import ConvSolver

MAX_IMAGES = 8          # images summed per pass: N x ROWS partial sums live in registers
MAX_OUTS = 16           # ROWS * N: registers and local memory per work-item
FLOAT_BYTES = 4


class ConvGemv1x1(ConvSolver):
    """y (N x K) = x (N x C) * W^T for a 1x1 convolution of 1x1 images with N <= 8 (a classifier at small
    batch): a matrix-vector product per image, memory-bound on the weights.

    One work-group per ROWS output channels reads each weight once, coalesced, and splits the C-long
    sums across its work-items (partials added in local memory in a fixed order); K / ROWS work-groups
    fill the device even when N is 1, where a tiled GEMM has one column of work and a few long work-groups.
    Applies the fusion epilogue. Does not apply to larger images, padding, groups, more than 8 images or
    the backward directions (ConvGemm1x1 covers those).
    """

    id = "ConvGemv1x1"
    algorithm = "gemm"
    supports_epilogue = True
    grid = {"ROWS": (1, 2, 4, 8), "WG": (64, 128, 256)}
    param_doc = {"ROWS": "output channels per work-group", "WG": "work-items splitting each C-long sum"}

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
        rows, wg = params["ROWS"], params["WG"]
        if rows * problem.n > MAX_OUTS:
            return f"ROWS*N = {rows * problem.n} partial sums per work-item > {MAX_OUTS}"
        if rows > 1 and rows >= 2 * problem.k:
            return f"ROWS={rows} is at least twice K={problem.k}"
        return work_group_reason(dev, (wg,)) or local_memory_reason(dev, rows * problem.n * wg * FLOAT_BYTES)

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        wg = 256 if dev.is_gpu else 64
        for rows in (8, 4, 2):
            params = {"ROWS": rows, "WG": wg}
            if -(-problem.k // rows) >= 2 * dev.compute_units and self.is_valid(problem, params, dev):
                return params
        return next(p for p in ({"ROWS": 1, "WG": wg}, {"ROWS": 1, "WG": 64}) if self.is_valid(problem, p, dev))

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        rows, wg = params["ROWS"], params["WG"]
        defines = {**problem.dtype.defines, "N": problem.n, "C": problem.c, "K": problem.k, "ROWS": rows, "WG": wg}
        args: tuple = ("x", "w", "y")
        if epilogue is not None:
            defines.update(epilogue.defines())
            args += tuple(epilogue.args)
        spec = KernelSpec.make("conv_gemv.cl", "conv_gemv", defines, ("-cl-mad-enable",))
        launch = KernelLaunch(spec, (-(-problem.k // rows) * wg,), (wg,), args)
        return Solution(self.id, dict(params), (launch,))
