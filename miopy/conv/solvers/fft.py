"""FFT convolution (ConvFFT): large filters at stride 1, every direction, as cuDNN runs AlexNet's 5x5 layers.

Each plane (image x channel, filter, output gradient) is zero-padded into an L x L plane, L = 8, 16 or 32,
large enough that the cyclic correlation equals the padded one on every output element, and transformed
to its half spectrum of L x (L/2 + 1) frequencies. At each frequency one complex GEMM (conv_fft.cl's
fft_cgemm, Gauss's three real products per complex one) sums conj(A) B over the channels (over the images
for the weight gradient), then the inverse FFT gives the output planes:

    forward           Y[k][n] = sum_c conj(W[c][k]) X[c][n]        (W: filters at the origin)
    backward-data     the forward convolution of dy with the filters rotated 180 degrees, channels swapped
                      and padding r - 1 - pad (the Winograd solvers' reading)
    backward-weights  dW[k][c] = sum_n conj(E[n][k]) X[n][c]       (E: dy shifted back by the padding)

Four launches: the two forward transforms, the GEMM, the inverse transform (with the epilogue hook
forward). Planes of at most SMALL_EXTENT taps a side (the filters of forward and backward-data) are
transformed by a direct DFT (fft_forward_small), the others by the staged FFT (fft_forward).

The saving is in the GEMM: at AlexNet conv2 (27x27, L = 32) each (channel pair, output pixel) costs
544 * 3 / 729 = 2.2 real multiply-adds instead of 25 (Winograd F(3x3,5x5): 5.4), and the transformed tensors
are 544 complex values per plane against F(3x3,5x5)'s 81 * 49 reals, so much less workspace traffic. It
needs large filters to pay: a 3x3 filter does better with Winograd F(4x4,3x3).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...device import DeviceInfo, index_reason, local_memory_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, Params, Solution, ceil_div, require, require_none, round_up
from ...tensor import FLOAT_BYTES
from ..geometry import FFT_SIZES, plane_size
from ..problem import ConvProblem, Direction
from .common import ConvSolver
from .winograd import WinogradTiling

TRANSFORM_WG = 128      # work-items per transform work-group: planes of L/2 work-items each
PAD = 32                # every GEMM dimension is padded to a multiple of this (GEMM blocks divide it)
MIN_FILTER = 5          # smaller filters are left to Winograd / direct (fewer multiplies per output)
SMALL_EXTENT = 8        # planes of at most this many taps a side (filters) take the direct DFT (0: never)
SMALL_WG = 32           # fft_forward_small's planes per work-group (of L/2 + 1 column frequencies each)


@dataclass(frozen=True)
class CGemmTiling(WinogradTiling):
    """fft_cgemm's tiling: three register tiles per work-item, four staged blocks (a, b, c, d)."""

    @property
    def local_mem_bytes(self) -> int:
        return 2 * self.k_blk * 2 * (self.tile_m + self.tile_n) * FLOAT_BYTES

    @property
    def registers_per_item(self) -> int:
        """Estimate: three accumulator tiles, operands and their sums, prefetched float4s, 16 for indices."""
        loads = sum(-(-self.k_blk * t // 2 // self.work_group_size) for t in (self.tile_m, self.tile_n))
        return 3 * self.work_m * self.work_n + 3 * (self.work_m + self.work_n) + 4 * loads + 16


@dataclass(frozen=True)
class PlaneGrid:
    """rows x cols planes of a tensor: element (row, col, h, w), h < extent[0] and w < extent[1], is at
    base + row * row_stride + col * col_stride + h * hw_strides[0] + w * hw_strides[1] and is element
    ((h + shift[0]) mod L, (w + shift[1]) mod L) of its FFT plane. fft_forward reads such a grid (the
    GEMM's rows are its rows, its columns the GEMM's columns), fft_inverse writes one."""

    role: str
    rows: int
    cols: int
    base: int
    row_stride: int
    col_stride: int
    hw_strides: tuple[int, int]
    extent: tuple[int, int]
    shift: tuple[int, int] = (0, 0)

    @property
    def padded(self) -> tuple[int, int]:
        return round_up(self.rows, PAD), round_up(self.cols, PAD)

    def floats(self, freqs: int) -> int:
        """The transformed grid: a (real, imaginary) pair per padded plane and frequency."""
        rows_p, cols_p = self.padded
        return freqs * 2 * rows_p * cols_p

    def defines(self) -> dict[str, int]:
        return {"ROWS": self.rows, "COLS": self.cols, "BASE": self.base, "ROW_TS": self.row_stride,
                "COL_TS": self.col_stride, "SH": self.hw_strides[0], "SW": self.hw_strides[1], "PH": self.extent[0],
                "PW": self.extent[1], "SHIFT_H": self.shift[0], "SHIFT_W": self.shift[1]}


@dataclass(frozen=True)
class FFTLayout:
    """The transforms, GEMM and inverse of one problem: the transformed A, then B, then the GEMM's output C
    in the workspace."""

    size: int
    a: PlaneGrid
    b: PlaneGrid
    out: PlaneGrid
    dtype_defines: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, p: ConvProblem) -> FFTLayout:
        xs, ws, ys = p.x.strides, p.w.strides, p.y.strides
        size = plane_size(p)
        back = lambda pad_h, pad_w: (-pad_h % size, -pad_w % size)  # noqa: E731  (a shift back by the padding)
        x_hw, w_hw, y_hw = (xs[2], xs[3]), (ws[2], ws[3]), (ys[2], ys[3])
        x_size, w_size, y_size = (p.in_h, p.in_w), (p.r, p.s), (p.out_h, p.out_w)
        if p.direction is Direction.FORWARD:   # Y[k][n] = sum_c conj(W[c][k]) X[c][n]
            a = PlaneGrid("w", p.c, p.k, 0, ws[1], ws[0], w_hw, w_size)
            b = PlaneGrid("x", p.c, p.n, 0, xs[1], xs[0], x_hw, x_size)
            out = PlaneGrid("y", p.k, p.n, 0, ys[1], ys[0], y_hw, y_size, back(p.pad_h, p.pad_w))
        elif p.direction is Direction.BACKWARD_DATA:   # the forward of dy with rotated, channel-swapped filters
            base = (p.r - 1) * ws[2] + (p.s - 1) * ws[3]
            a = PlaneGrid("w", p.k, p.c, base, ws[0], ws[1], (-ws[2], -ws[3]), w_size)
            b = PlaneGrid("y", p.k, p.n, 0, ys[1], ys[0], y_hw, y_size)
            out = PlaneGrid("x", p.c, p.n, 0, xs[1], xs[0], x_hw, x_size, back(p.r - 1 - p.pad_h, p.s - 1 - p.pad_w))
        else:   # dW[k][c] = sum_n conj(E[n][k]) X[n][c], E: dy shifted back by the padding
            a = PlaneGrid("y", p.n, p.k, 0, ys[0], ys[1], y_hw, y_size, back(p.pad_h, p.pad_w))
            b = PlaneGrid("x", p.n, p.c, 0, xs[0], xs[1], x_hw, x_size)
            out = PlaneGrid("w", p.k, p.c, 0, ws[0], ws[1], w_hw, w_size)
        return cls(size, a, b, out, tuple(sorted(p.dtype.defines.items())))

    @property
    def freqs(self) -> int:
        return self.size * (self.size // 2 + 1)

    @property
    def gemm(self) -> tuple[int, int, int]:
        """(M, N, K) of the complex GEMM per frequency: the output's rows and columns, the reduction."""
        return self.a.padded[1], self.b.padded[1], self.a.padded[0]

    @property
    def b_offset(self) -> int:
        return self.a.floats(self.freqs)

    @property
    def c_offset(self) -> int:
        return self.b_offset + self.b.floats(self.freqs)

    @property
    def total_floats(self) -> int:
        m, n, _ = self.gemm
        return self.c_offset + self.freqs * 2 * m * n

    @property
    def planes(self) -> int:
        """Planes per transform work-group (of consecutive columns: PAD, the columns' padding, bounds it)."""
        return min(TRANSFORM_WG // (self.size // 2), PAD)

    @property
    def work_group(self) -> int:
        return self.planes * self.size // 2

    @property
    def local_bytes(self) -> int:
        return self.planes * (self.size * (self.size + 2) + 1) * FLOAT_BYTES   # conv_fft.cl PLANE_LD

    def common_defines(self) -> dict[str, int]:
        return {**dict(self.dtype_defines), "FFT_L": self.size, "FFT_LOG2": self.size.bit_length() - 1,
                "PLANES": self.planes}

    @property
    def small_grids(self) -> tuple[PlaneGrid, ...]:
        """The forward grids that take the direct DFT (fft_forward_small): planes of few taps a side."""
        return tuple(g for g in (self.a, self.b) if max(g.extent) <= SMALL_EXTENT)

    @property
    def small_local_size(self) -> tuple[int, int, int]:
        """fft_forward_small's work-group: SMALL_WG planes by the L/2 + 1 column frequencies."""
        return SMALL_WG, self.size // 2 + 1, 1

    def forward_launch(self, grid: PlaneGrid, offset: int) -> KernelLaunch:
        rows_p, cols_p = grid.padded
        defines = {**self.common_defines(), **grid.defines(), "ROWS_P": rows_p, "COLS_P": cols_p, "DST_OFF": offset}
        if grid in self.small_grids:   # a direct DFT per (plane, column frequency), no FFT phases
            defines["SMALL_WG"] = SMALL_WG
            spec = KernelSpec.make("conv_fft.cl", "fft_forward_small", defines, ("-cl-mad-enable",))
            local = self.small_local_size
            return KernelLaunch(spec, (cols_p, local[1], rows_p), local, (grid.role, "workspace"))
        spec = KernelSpec.make("conv_fft.cl", "fft_forward", defines, ("-cl-mad-enable",))
        return KernelLaunch(spec, (cols_p // self.planes * self.work_group, rows_p), (self.work_group, 1),
                            (grid.role, "workspace"))

    def gemm_launch(self, shape: CGemmTiling) -> KernelLaunch:
        m, n, k = self.gemm
        defines = {"GEMM_M": m, "GEMM_N": n, "GEMM_K": k, "A_OFF": 0, "B_OFF": self.b_offset, "C_OFF": self.c_offset,
                   "TILE_M": shape.tile_m, "TILE_N": shape.tile_n, "WORK_M": shape.work_m, "WORK_N": shape.work_n,
                   "K_BLK": shape.k_blk}
        spec = KernelSpec.make("conv_fft.cl", "fft_cgemm", defines, ("-cl-mad-enable",))
        local_n, local_m = shape.local_size
        global_size = (ceil_div(self.b.cols, shape.tile_n) * local_n, ceil_div(self.a.cols, shape.tile_m) * local_m,
                       self.freqs)
        return KernelLaunch(spec, global_size, (local_n, local_m, 1), ("workspace",))

    def inverse_launch(self, epilogue=None) -> KernelLaunch:
        """C [freq][out rows (the A grid's columns)][out columns (B's)] back to the output grid's planes."""
        defines = {**self.common_defines(), **self.out.defines(), "ROWS_P": self.a.padded[1],
                   "COLS_P": self.b.padded[1], "SRC_OFF": self.c_offset}
        args: tuple = ("workspace", self.out.role)
        if epilogue is not None:
            defines.update(epilogue.defines())
            args = args + tuple(epilogue.args)
        spec = KernelSpec.make("conv_fft.cl", "fft_inverse", defines, ("-cl-mad-enable",))
        groups = ceil_div(self.out.cols, self.planes)
        return KernelLaunch(spec, (groups * self.work_group, self.out.rows), (self.work_group, 1), args)


class ConvFFT(ConvSolver):
    """FFT convolution: filters of 5 or more taps along an axis, stride 1, dilation 1, no groups, every
    direction, on planes (with their padding) of at most 32x32: AlexNet's and GoogLeNet's 5x5 layers.

    Per frequency of the L x (L/2 + 1) half spectrum, one complex GEMM over the channels (images for the
    weight gradient), 3 real multiply-adds per complex one, between FFTs of the planes in the workspace. At
    27x27 on L = 32 that is 2.2 multiply-adds per output pixel and channel pair against a 5x5 filter's 25.
    The FFT rounds like a sum of log2(L^2) terms per element, whatever the filter; bound 2e-3. Loses on
    small channel counts or batches (the GEMM's padded dimensions, multiples of 32) and on small filters.
    The tunable grid is the complex GEMM's tiling. Not applicable: filters under 5x5 along both axes,
    stride, dilation, groups, planes over 32x32.
    """

    id = "ConvFFT"
    algorithm = "fft"
    directions = frozenset({Direction.FORWARD, Direction.BACKWARD_DATA, Direction.BACKWARD_WEIGHTS})
    supports_epilogue = True
    tolerance = 2e-3
    grid = {"TILE_M": (32, 64), "TILE_N": (32, 64, 128), "WORK_M": (4, 8), "WORK_N": (4, 8), "K_BLK": (8, 16)}
    param_doc = {"TILE_M": "complex GEMM block of output rows (channels) per work-group",
                 "TILE_N": "complex GEMM block of output columns (images; input channels for weights)",
                 "WORK_M": "rows per work-item (three register tiles)",
                 "WORK_N": "columns per work-item",
                 "K_BLK": "reduction rows staged in local memory per step"}

    def applicability(self, problem: ConvProblem, dev: DeviceInfo) -> None:
        super().applicability(problem, dev)
        require(max(problem.r, problem.s) >= MIN_FILTER,
                f"filter {problem.r}x{problem.s} is under {MIN_FILTER} taps along both axes")
        require((problem.stride_h, problem.stride_w) == (1, 1), f"stride {problem.conv.stride} is not 1x1")
        require((problem.dil_h, problem.dil_w) == (1, 1), f"dilation {problem.conv.dilation} is not 1x1")
        require(problem.groups == 1, "grouped convolution is not implemented")
        require(plane_size(problem) > 0, f"the padded planes exceed {FFT_SIZES[-1]}x{FFT_SIZES[-1]}")
        layout = FFTLayout.of(problem)
        require_none(work_group_reason(dev, (layout.work_group,)) or local_memory_reason(dev, layout.local_bytes))
        if layout.small_grids:
            require_none(work_group_reason(dev, layout.small_local_size[:2]))
        require_none(index_reason(*(d.element_span for d in (problem.x, problem.w, problem.y)), layout.total_floats))
        require(any(self.is_valid(problem, p, dev) for p in FALLBACK), "no GEMM tiling fits the device")

    def invalid_reason(self, problem: ConvProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason is not None:
            return reason
        shape = CGemmTiling.of(params)
        m, n, k = FFTLayout.of(problem).gemm
        for name, tile, size in (("TILE_M", shape.tile_m, m), ("TILE_N", shape.tile_n, n), ("K_BLK", shape.k_blk, k)):
            if size % tile:
                return f"{name}={tile} does not divide the GEMM's padded {size}"
        return shape.device_reason(dev)

    def default_params(self, problem: ConvProblem, dev: DeviceInfo) -> Params:
        return next(dict(p) for p in (*_gpu_defaults(FFTLayout.of(problem), dev), *FALLBACK)
                    if self.is_valid(problem, p, dev))

    def workspace_bytes(self, problem: ConvProblem) -> int:
        return FFTLayout.of(problem).total_floats * FLOAT_BYTES

    def solution(self, problem: ConvProblem, params: Params, epilogue=None) -> Solution:
        layout = FFTLayout.of(problem)
        launches = (layout.forward_launch(layout.a, 0), layout.forward_launch(layout.b, layout.b_offset),
                    layout.gemm_launch(CGemmTiling.of(params)),
                    layout.inverse_launch(epilogue if problem.direction is Direction.FORWARD else None))
        return Solution(self.id, dict(params), launches, self.workspace_bytes(problem))


def _gpu_defaults(layout: FFTLayout, dev: DeviceInfo) -> tuple[Params, ...]:
    """GPU choices, best first (the first valid one wins). On the H100, 32x32 blocks of 4x4 with 16-row
    steps were the fastest GEMM, or within 1.2% of it, among 12-15 sampled tilings on each of AlexNet's and
    GoogLeNet's nine 5x5 layer-directions (benchmarks/results/h100-fft-stages-sweep.json): the GEMM per frequency
    is small (a reduction of 64-256) and small blocks keep more of them in flight."""
    if not dev.is_gpu:
        return ()
    return ({"TILE_M": 32, "TILE_N": 32, "WORK_M": 4, "WORK_N": 4, "K_BLK": 16},)


FALLBACK = ({"TILE_M": 32, "TILE_N": 32, "WORK_M": 4, "WORK_N": 4, "K_BLK": 8},)   # 64 work-items: any device
