/* Global average pooling of small planes: each work-group stages PLANES consecutive (n, c) planes through
 * local memory with one coalesced sweep over their PLANES x H x W elements (consecutive work-items on
 * consecutive elements, which for a packed x are consecutive addresses), then a team of WG / PLANES
 * work-items per plane sums it in a fixed order (member m takes elements m, m + TEAM, ...; member 0 adds
 * the members' sums in order), so results are deterministic. y is N x C x 1 x 1.
 *
 * Defines (all ints):
 *   WG PLANES             work-group size and planes per work-group (WG a multiple of PLANES)
 *   NC C H W              planes in all (N x C) and input dims
 *   HWP                   local row pitch of a staged plane: H x W, made odd so a team's rows fall in
 *                         different local memory banks
 *   X_PACKED              1: x is packed NCHW (planes are consecutive runs of H x W elements)
 *   XS_N XS_C XS_H XS_W   element strides of x;  YS_N YS_C  of y
 *   MIOPY_HALF            storage type (types.h)
 */
#include "types.h"

#if !defined(WG) || !defined(PLANES) || !defined(NC) || !defined(C) || !defined(H) || !defined(W) \
    || !defined(HWP) || !defined(X_PACKED) || !defined(XS_N) || !defined(YS_N)
#error "pooling_global_staged.cl needs WG, PLANES, NC, C H W, HWP, X_PACKED, XS_*, YS_*"
#endif
#if WG % PLANES
#error "WG must be a multiple of PLANES"
#endif

#define HW (H * W)
#define TEAM (WG / PLANES)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void pool_global_avg_staged(__global const DATA_T* restrict x, __global DATA_T* restrict y)
{
    __local float stage[PLANES * HWP];
    __local float part[WG];
    const int lid = get_local_id(0);
    const int first = get_group_id(0) * PLANES;
    const int count = min(PLANES, NC - first) * HW;
    /* a constant trip count, unrolled: several loads in flight per work-item before their local stores */
#pragma unroll 4
    for (int step = 0; step < (PLANES * HW + WG - 1) / WG; ++step) {
        const int e = lid + step * WG, p = e / HW, i = e % HW;
        if (e < count) {
#if X_PACKED
            const float v = LOAD(x, first * HW + e);
#else
            const int plane = first + p;
            const float v = LOAD(x, (plane / C) * XS_N + (plane % C) * XS_C + (i / W) * XS_H + (i % W) * XS_W);
#endif
            stage[p * HWP + i] = v;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int p = lid / TEAM, member = lid % TEAM;
    float acc = 0.0f;
    for (int i = member; i < HW; i += TEAM)
        acc += stage[p * HWP + i];
#if TEAM > 1
    part[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (member != 0) return;
    for (int m = 1; m < TEAM; ++m)
        acc += part[lid + m];
#endif
    const int plane = first + p;
    if (plane < NC) STORE(y, (plane / C) * YS_N + (plane % C) * YS_C, acc / (float)HW);
}
