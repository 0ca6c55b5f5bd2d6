"""The kernel launches of ConvImplicitGemmMma's params: the workspace copies (transform_weights, transform_x,
pad_dy), the GEMM (conv_mma), the fixed-order sum of split partials (reduce_splits), and COL2IM's gather (col2im,
conv_im2col.cl). All but col2im are kernels of conv_mma.cl, configured by -D defines (documented in its headers)."""
from __future__ import annotations

import dataclasses

import numpy as np

from ....kernel_cache import KernelSpec
from ....solver import KernelLaunch, Params, Solution, round_up
from ...problem import ConvProblem, Direction
from ..common import problem_defines, stride_defines
from .geometry import (
    OUTPUT_NAME,
    chunk_of,
    column_tiles,
    gemm_shape,
    kernel_warps,
    output_count,
    phased,
    phases,
    staged_store,
    threads_of,
)
from .params import GRID, SMALLEST
from .workspace import col2im_problem, pad_dy_bytes, partial_offset, transform_x_source

KERNEL_FILE = "conv_mma.cl"
REDUCE_WG = 64                # work-items of the element-wise kernels' work-groups (x 4 for pad_dy and col2im)
TX_TILE, TX_ROWS = 32, 8      # the transposing copies' work-group: 32 x 32 tiles, 8 rows of work-items
# COL2IM's GEMM runs as a forward problem: its roles are the backward-data problem's dy (input) and dx (y, which
# COL_OUT does not write)
_COL2IM_ROLES = {"x": "y", "y": "x"}


def launches(problem: ConvProblem, params: Params, epilogue=None, col_out: bool = False) -> tuple[KernelLaunch, ...]:
    """The kernels of params on problem (gemm_view'd, not COL2IM); col_out: the sums go to the workspace as fp32
    [m][col] (COL_OUT in mma_store.h; COL2IM's GEMM) instead of y."""
    split = params["SPLIT"]
    defines = {**problem_defines(problem), **stride_defines(problem), **problem.dtype.defines,
               "DIRECTION": int(problem.direction), **{name: params[name] for name in GRID},
               "PHASED": int(phased(problem)), "STAGED_STORE": staged_store(problem, params, col_out),
               "SPLIT_CHUNK": chunk_of(problem, params), "COL_OUT": int(col_out)}
    defines["WARPS_M"], defines["WARPS_N"] = kernel_warps(params)
    args = ("x", "w", "y") + (("workspace",) if split > 1 or params["TRANSFORM_W"] or params["TRANSFORM_X"]
                              or col_out or params["PAD_DY"] else ())
    copies = _copy_launches(problem, params, defines)
    if epilogue is not None:
        defines.update(epilogue.defines())
        args = args + tuple(epilogue.args)
    spec = KernelSpec.make(KERNEL_FILE, "conv_mma", defines)
    threads = threads_of(params)
    global_size = (column_tiles(problem, params["N_BLK"]) * threads, -(-gemm_shape(problem).m // params["M_BLK"]),
                   problem.groups * split * phases(problem))
    gemm = KernelLaunch(spec, global_size, (threads, 1, 1), args)
    if split == 1:
        return (*copies, gemm)
    reduce = KernelSpec.make(KERNEL_FILE, "reduce_splits", defines)
    extra = tuple(epilogue.args) if epilogue is not None else ()
    return (*copies, gemm, KernelLaunch(reduce, (round_up(output_count(problem), REDUCE_WG),), (REDUCE_WG,),
                                        ("workspace", OUTPUT_NAME[problem.direction]) + extra))


def _copy_launches(problem: ConvProblem, params: Params, defines: dict) -> list[KernelLaunch]:
    """The workspace copies params read (TRANSFORM_W, TRANSFORM_X, PAD_DY). Their defines depend on the problem
    and on which copies there are, not on the tiles: one build serves every point (find and the tuner build far
    fewer kernels)."""
    copies = {**defines, **SMALLEST, "SPLIT_CHUNK": 1, "STAGED_STORE": 0, "COL_OUT": 0,
              "CHANNEL_BLOCKS": problem.direction is not Direction.BACKWARD_WEIGHTS,
              "TRANSFORM_W": params["TRANSFORM_W"], "TRANSFORM_X": params["TRANSFORM_X"], "PAD_DY": params["PAD_DY"]}
    out = []
    if params["TRANSFORM_W"]:
        transform = KernelSpec.make(KERNEL_FILE, "transform_weights", copies)
        if problem.direction is Direction.FORWARD:
            out.append(KernelLaunch(transform, (round_up(problem.w.element_count, REDUCE_WG),), (REDUCE_WG,),
                                    ("w", "workspace")))
        else:   # per group a K/G x C/G*R*S transpose
            out.append(_transpose(transform, problem.k_per_group, problem.c_per_group * problem.r * problem.s,
                                  problem.groups, "w"))
    if params["TRANSFORM_X"]:
        channels, pixels, source = transform_x_source(problem)
        out.append(_transpose(KernelSpec.make(KERNEL_FILE, "transform_x", copies), channels, pixels, problem.n,
                              source))
    if params["PAD_DY"]:
        out.append(KernelLaunch(KernelSpec.make(KERNEL_FILE, "pad_dy", copies),
                                (round_up(pad_dy_bytes(problem) // 2, REDUCE_WG * 4),), (REDUCE_WG * 4,),
                                ("y", "workspace")))
    return out


def _transpose(spec: KernelSpec, rows: int, cols: int, batch: int, source: str) -> KernelLaunch:
    """A transposing copy (transpose_tile in conv_mma.cl) of batch rows x cols matrices of source into the
    workspace: one work-group per 32 x 32 tile."""
    return KernelLaunch(spec, (round_up(cols, TX_TILE), -(-rows // TX_TILE) * TX_ROWS, batch), (TX_TILE, TX_ROWS, 1),
                        (source, "workspace"))


def col2im_launches(problem: ConvProblem, params: Params) -> tuple[KernelLaunch, ...]:
    """COL2IM: the column matrix by the GEMM kernel (COL_OUT), then col2im (conv_im2col.cl) gathers dx from it."""
    gemm, inner = col2im_problem(problem), dict(params, COL2IM=False)
    out = [dataclasses.replace(launch, args=tuple(_COL2IM_ROLES.get(a, a) if isinstance(a, str) else a
                                                  for a in launch.args))
           for launch in launches(gemm, inner, col_out=True)]
    spec = KernelSpec.make("conv_im2col.cl", "col2im", {**problem_defines(problem), "NB": problem.n, "COL_HALF": 0})
    count = problem.n * problem.c * problem.in_h * problem.in_w
    out.append(KernelLaunch(spec, (round_up(count, REDUCE_WG * 4),), (REDUCE_WG * 4,),
                            ("workspace", "x", np.int32(partial_offset(gemm, inner) // 4), np.int32(0))))
    return tuple(out)


def emulated(solution: Solution) -> Solution:
    """solution with every kernel built with MMA_EMULATE=1 (no PTX: runs on any OpenCL device, slowly), for
    tests and dry runs of the benchmarks."""
    def spec(s: KernelSpec) -> KernelSpec:
        return dataclasses.replace(s, defines=tuple(sorted(s.defines + (("MMA_EMULATE", "1"),))))
    return dataclasses.replace(solution, launches=tuple(dataclasses.replace(launch, spec=spec(launch.spec))
                                                        for launch in solution.launches))
