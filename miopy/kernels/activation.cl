/* Standalone activation, forward and backward: one work-item per element of an N x C x H x W tensor,
 * any element strides (in-place allowed: no restrict).
 *
 * Defines (all ints):
 *   ACTIV_MODE                 activation mode (see activation.h)
 *   N C H W                    tensor dims
 *   XS_N XS_C XS_H XS_W        element strides of x      YS_*   of y
 *   DXS_* DYS_*                element strides of dx and dy (backward only)
 *   MIOPY_HALF                 the tensors hold half values (kernels/types.h); arithmetic is float
 */
#include "types.h"
#include "activation.h"

#define AT(T, n, c, h, w) ((n) * T##S_N + (c) * T##S_C + (h) * T##S_H + (w) * T##S_W)

/* y = f(x) */
__kernel void activation_fwd(__global const DATA_T* x, __global DATA_T* y,
                             const float alpha, const float beta, const float gamma)
{
    const int gid = get_global_id(0);
    if (gid >= N * C * H * W) return;
    const int w = gid % W, h = (gid / W) % H, c = (gid / (H * W)) % C, n = gid / (C * H * W);
    STORE(y, AT(Y, n, c, h, w), miopy_activ_fwd(LOAD(x, AT(X, n, c, h, w)), alpha, beta, gamma));
}

#ifdef DXS_N
/* dx = dy * f'(x), using y = f(x) where that is cheaper (MIOpen's formulas) */
__kernel void activation_bwd(__global DATA_T* dx, __global const DATA_T* dy, __global const DATA_T* x,
                             __global const DATA_T* y, const float alpha, const float beta, const float gamma)
{
    const int gid = get_global_id(0);
    if (gid >= N * C * H * W) return;
    const int w = gid % W, h = (gid / W) % H, c = (gid / (H * W)) % C, n = gid / (C * H * W);
    STORE(dx, AT(DX, n, c, h, w), miopy_activ_bwd(LOAD(dy, AT(DY, n, c, h, w)), LOAD(x, AT(X, n, c, h, w)),
                                                   LOAD(y, AT(Y, n, c, h, w)), alpha, beta, gamma));
}
#endif
