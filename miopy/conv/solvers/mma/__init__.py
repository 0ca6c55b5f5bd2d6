"""ConvImplicitGemmMma, implicit-GEMM convolution on NVIDIA tensor cores, split by concern:

    solver          the Solver: applicability, invalid_reason, search_space, default_params, workspace, solution
    geometry        the GEMM the kernel runs and its layout: shape, phases, splits, warps, local memory, stores
    workspace       the workspace: the copies the kernels read, then the split partials or COL2IM's column matrix
    validity        the rules of invalid_reason, one function each
    params          the tuning grid (perf DB keys), each parameter's meaning, the smallest point
    defaults        default_params on mma.sync: the score model and the rules after it
    wgmma_defaults  default_params on Hopper's wgmma
    measured        the thresholds, tiles and model coefficients chosen by measurement, as data
    launches        the kernels of a solution (conv_mma.cl and its headers; col2im)

What other modules use is re-exported here.
"""
from .geometry import PTX_CP_ASYNC, gemm_shape, gemm_view, local_bytes, mma_k, phased, staged_store
from .launches import emulated
from .measured import CHOICES
from .solver import NEEDS_PTX, TENSOR_CORE_TOLERANCE, ConvImplicitGemmMma
from .validity import WGMMA_N
from .wgmma_defaults import WGMMA_PARAMS, WGMMA_W_PARAMS
from .workspace import TRANSFORM_X_CAP, col2im_fits, column_bytes, pad_dy_fits, transform_x_bytes

__all__ = ["CHOICES", "PTX_CP_ASYNC", "NEEDS_PTX", "TENSOR_CORE_TOLERANCE", "TRANSFORM_X_CAP", "WGMMA_N",
           "WGMMA_PARAMS", "WGMMA_W_PARAMS", "ConvImplicitGemmMma", "col2im_fits", "column_bytes", "emulated",
           "gemm_shape", "gemm_view", "local_bytes", "mma_k", "pad_dy_fits", "phased", "staged_store",
           "transform_x_bytes"]
