/* Global average pooling: one work-group of WG work-items per (n, c) plane sums its H x W elements with a
 * strided loop and a tree reduction in local memory, then writes the mean (y is N x C x 1 x 1).
 *
 * Defines (all ints):
 *   WG                    work-group size, a power of two
 *   C H W                 input dims (N is the number of work-groups / C)
 *   XS_N XS_C XS_H XS_W   element strides of x;  YS_N YS_C  of y
 *   MIOPY_HALF            storage type (types.h)
 */
#include "types.h"

#if !defined(WG) || !defined(C) || !defined(H) || !defined(W) || !defined(XS_N) || !defined(YS_N)
#error "pooling_global.cl needs WG, C H W, XS_*, YS_*"
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void pool_global_avg(__global const DATA_T* restrict x, __global DATA_T* restrict y)
{
    __local float part[WG];
    const int plane = get_group_id(0), lid = get_local_id(0);
    const int n = plane / C, c = plane % C;
    const __global DATA_T* base = x + n * XS_N + c * XS_C;
    float acc = 0.0f;
    for (int i = lid; i < H * W; i += WG)
        acc += LOAD(base, (i / W) * XS_H + (i % W) * XS_W);
    part[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = WG / 2; step > 0; step /= 2) {
        if (lid < step) part[lid] += part[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) STORE(y, n * YS_N + c * YS_C, part[0] / (float)(H * W));
}
