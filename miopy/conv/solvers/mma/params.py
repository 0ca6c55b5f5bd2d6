"""ConvImplicitGemmMma's tuning grid (the keys and values of its perf DB records: never change them), what each
parameter does, the smallest point, and the validity check the default rules ask."""
from __future__ import annotations

from collections.abc import Callable

from ....device import DeviceInfo
from ....solver import Params
from ...problem import ConvProblem
from .validity import WGMMA_N
from .workspace import COL2IM_CAP, TRANSFORM_X_CAP

GRID = {"M_BLK": (16, 32, 64, 128, 256), "N_BLK": (16, 32, 64, 128, 256), "K_BLK": (8, 16, 32, 64),
        "WARPS_M": (1, 2, 4), "WARPS_N": (1, 2, 4), "STAGES": (1, 2, 3, 4), "CHANNEL_BLOCKS": (False, True),
        "SPLIT": (1, 2, 4, 8, 16, 32, 64, 128, 256), "TRANSFORM_W": (False, True), "LDMATRIX": (False, True),
        "VECTOR_A": (False, True), "CP_ASYNC": (False, True), "VECTOR_B": (0, 2, 4, 8),
        "TRANSFORM_X": (False, True), "COL2IM": (False, True), "PAD_DY": (False, True), "WGMMA": (False, True)}

PARAM_DOC = {
    "M_BLK": "work-group tile rows (output channels; input channels in backward-data)",
    "N_BLK": "work-group tile columns (output pixels; filter taps in backward-weights)",
    "K_BLK": "slice of the inner dimension staged in local memory per step (a multiple of the mma's k)",
    "WARPS_M": "warps along the tile's rows (each warp owns M_BLK/WARPS_M rows, a multiple of 16)",
    "WARPS_N": "warps along the tile's columns (each warp owns N_BLK/WARPS_N columns, a multiple of 8)",
    "STAGES": "local buffers: 2 stages the next slice while this one is multiplied (one barrier a step); "
              "3 and 4 (CP_ASYNC) keep STAGES-1 slices' copies in flight",
    "CHANNEL_BLOCKS": "forward / backward-data: loop over (K_BLK channels, one tap) slices, channels "
                      "padded to K_BLK; else over the flat channel x tap index",
    "SPLIT": "split-K: partial sums over that many chunks of the inner loop (N*P*Q in backward-weights, the "
             "slices of C/G*R*S or K/G*R*S forward / backward-data) into the workspace, then a fixed-order "
             "sum (deterministic; forward applies the epilogue there)",
    "TRANSFORM_W": "forward / backward-data with CHANNEL_BLOCKS: first copy the weights channel-fastest into "
                   "the workspace, so the A slices are read coalesced",
    "LDMATRIX": "read mma fragments from local memory with ldmatrix.x4 (B too when fp16 or backward-weights)",
    "VECTOR_A": "fetch A as 16-byte vectors along k (needs k contiguous: transformed or 1x1 forward weights, "
                "dy planes; channel / plane sizes a multiple of the vector)",
    "VECTOR_B": "forward / backward-data, CHANNEL_BLOCKS, stride 1 along w: gather B as that many consecutive "
                "columns of an output row, one vector (or one cp.async) where the tap keeps them aligned and "
                "inside, one local store (W and Q multiples of it; 16 bytes at most)",
    "TRANSFORM_X": "first copy x (forward, backward-weights) or dy (backward-data) channel-fastest (NHWC) into "
                   "the workspace, so B is read as 16-byte vectors of channels (one bounds check and one cp.async "
                   "per vector, fp16 too): along k forward / backward-data (with CHANNEL_BLOCKS), along the "
                   "columns, ordered (tap, c), in backward-weights; channels per group a multiple of the vector, "
                   f"the copy within {TRANSFORM_X_CAP >> 20} MiB",
    "CP_ASYNC": "copy slices global -> local with cp.async (no registers, zero-fill for padding) into a ring of "
                "STAGES >= 2 buffers: fp32 A and B; fp16 A (16-byte VECTOR_A, else pairs along k: k contiguous, "
                "sizes even) and, with VECTOR_B, B's aligned vectors (its 2-byte gather otherwise stays on "
                "registers); needs the device's cp.async probe",
    "PAD_DY": "fp16 backward-weights over planes whose P*Q is not a multiple of 8: first copy dy with each plane "
              "padded with zeros to one, so A is read as 16-byte vectors (and by cp.async) there too",
    "WGMMA": "Hopper's wgmma (through miopy.ptx_patch) instead of mma.sync, one m64nN_BLK per warpgroup of four "
             "warps reading both operands from local memory; WARPS_M counts the warpgroups (M_BLK = 64 x "
             f"WARPS_M), WARPS_N = 1; needs CP_ASYNC, no LDMATRIX, N_BLK in {WGMMA_N} and the device's wgmma "
             "probe; forward / backward-data also CHANNEL_BLOCKS, TRANSFORM_W, TRANSFORM_X and VECTOR_A; "
             "backward-weights TRANSFORM_X and VECTOR_A with fp16 data (B MN-major: wgmma transposes 16-bit "
             "types only), no TRANSFORM_X with TF32 (B K-major, its operands truncated to TF32)",
    "COL2IM": "backward-data (one group, fewer than 16 input channels, a filter larger than 1x1) as a GEMM and "
              "a gather: the column matrix "
              "dcol = W^T dy (C*R*S x N*P*Q, fp32 in the workspace, within "
              f"{COL2IM_CAP >> 20} MiB) by this kernel as the 1x1 forward convolution of dy it is (the other "
              "params are that GEMM's; it reads the weights' transposing copy, TRANSFORM_W, and does not "
              "split), then col2im adds each dx element's taps in a fixed order. For few input channels, "
              "where C/G rows fill a fraction of the mma's 16",
}

# the smallest point (every switch off): the default where no candidate is valid
SMALLEST: Params = {"M_BLK": 16, "N_BLK": 16, "K_BLK": 16, "WARPS_M": 1, "WARPS_N": 1, "STAGES": 1,
                    "CHANNEL_BLOCKS": False, "SPLIT": 1, "TRANSFORM_W": False, "LDMATRIX": False, "VECTOR_A": False,
                    "CP_ASYNC": False, "VECTOR_B": 0, "TRANSFORM_X": False, "COL2IM": False, "PAD_DY": False,
                    "WGMMA": False}

# whether params run a problem on a device: the solver's is_valid, as the default rules (defaults.py) take it
Valid = Callable[[ConvProblem, Params, DeviceInfo], bool]
