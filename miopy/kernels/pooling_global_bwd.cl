/* Global average pooling backward: dx = dy / (H x W) spread evenly over each (n, c) plane. One work-item per
 * element of dx in N x C x H x W order (consecutive work-items on consecutive pixels: coalesced writes for
 * a packed dx); each reads its plane's dy, which neighbouring work-items share through the cache.
 *
 * Defines (all ints):
 *   C H W                 dims (dx is N x C x H x W, dy N x C x 1 x 1)
 *   COUNT                 elements of dx (N x C x H x W)
 *   XS_N XS_C XS_H XS_W   element strides of dx;  YS_N YS_C  of dy
 *   X_PACKED              1: dx is packed NCHW (the work-item's index is its offset)
 *   MIOPY_HALF            storage type (types.h)
 */
#include "types.h"

#if !defined(C) || !defined(H) || !defined(W) || !defined(COUNT) || !defined(XS_N) || !defined(YS_N) \
    || !defined(X_PACKED)
#error "pooling_global_bwd.cl needs C H W, COUNT, XS_*, YS_* and X_PACKED"
#endif

#define HW (H * W)

__kernel void pool_global_avg_bwd(__global DATA_T* restrict dx, __global const DATA_T* restrict dy)
{
    const int gid = get_global_id(0);
    if (gid >= COUNT) return;
    const int plane = gid / HW, n = plane / C, c = plane % C;
#if X_PACKED
    const int out = gid;
#else
    const int i = gid % HW;
    const int out = n * XS_N + c * XS_C + (i / W) * XS_H + (i % W) * XS_W;
#endif
    STORE(dx, out, LOAD(dy, n * YS_N + c * YS_C) / (float)HW);
}
