/* Batch-norm inference (+ activation) on its own: y = epilogue(x), one work-item per element of an
 * N x C x H x W tensor, any element strides (in-place allowed: no restrict on x and y). The epilogue is
 * the same one fused convolutions apply (fused_epilogue.h), with channel c and in-plane index h * W + w;
 * with only FUSE_BIAS it is the standalone bias add of the unfused path.
 *
 * Defines (all ints):
 *   N C H W                    tensor dims
 *   XS_N XS_C XS_H XS_W        element strides of x      YS_*   of y
 *   MIOPY_FUSED=1, FUSE_*      the epilogue (see fused_epilogue.h)
 *   MIOPY_HALF                 x, y (and z, bias) hold half values (kernels/types.h)
 */
#include "types.h"
#include "epilogue.h"

#define AT(T, n, c, h, w) ((n) * T##S_N + (c) * T##S_C + (h) * T##S_H + (w) * T##S_W)

__kernel void pointwise_epilogue(__global const DATA_T* x, __global DATA_T* y MIOPY_EPILOGUE_PARAMS)
{
    const int gid = get_global_id(0);
    if (gid >= N * C * H * W) return;
    const int w = gid % W, h = (gid / W) % H, c = (gid / (H * W)) % C, n = gid / (C * H * W);
    const int yi = AT(Y, n, c, h, w);
    STORE(y, yi, MIOPY_EPILOGUE(LOAD(x, AT(X, n, c, h, w)), c, h * W + w, yi));
}
