/* Shared pieces of the batch-norm kernels: data indexing, alpha/beta blending, work-group reductions and
 * Chan's merge of (count, mean, sum of squared deviations).
 *
 * Defines (all ints):
 *   N C H W                    data dims
 *   T##S_N T##S_C T##S_H T##S_W element strides of each data tensor T (X, Y, DY, DX)
 *   T##_PLANE                  1 when T's h, w plane is contiguous (S_W == 1, S_H == W): hw indexes it directly
 *   MIOPY_HALF                 data storage type (types.h); parameters and statistics are always float
 *   WG                         work-group size, a power of two (only kernels that reduce over a work-group)
 */
#ifndef MIOPY_BATCHNORM_H
#define MIOPY_BATCHNORM_H
#include "types.h"

#if !defined(N) || !defined(C) || !defined(H) || !defined(W)
#error "N, C, H and W must be defined"
#endif

#define HW (H * W)

/* Offset of element (n, c, hw) of tensor T, hw = h * W + w the index within the channel plane. */
#define OFF(T, n, c, hw) ((n) * T##S_N + (c) * T##S_C + \
    (T##_PLANE ? (hw) : ((hw) / W) * T##S_H + ((hw) % W) * T##S_W))

/* out = alpha * v + beta * out; out is read only when beta != 0 (it may hold anything otherwise). */
#define BLEND(old, v, alpha, beta) ((beta) == 0.0f ? (alpha) * (v) : (alpha) * (v) + (beta) * (old))
#define STORE_BLEND(p, i, v, alpha, beta) \
    STORE(p, i, (beta) == 0.0f ? (alpha) * (v) : (alpha) * (v) + (beta) * LOAD(p, i))
#define STORE_BLEND_F(p, i, v, alpha, beta) ((p)[i] = BLEND((p)[i], (v), (alpha), (beta)))

#ifdef WG
/* Sum of v over the work-group (size WG, a power of two), the same on every work-item. The tree order is
 * fixed, so the result is deterministic. scratch holds WG floats. */
float wg_sum(float v, __local float* scratch)
{
    const int lid = get_local_id(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float total = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

/* Two sums at once (scratch holds 2 * WG floats). */
float2 wg_sum2(float2 v, __local float* scratch)
{
    const int lid = get_local_id(0);
    scratch[lid] = v.x;
    scratch[WG + lid] = v.y;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) {
            scratch[lid] += scratch[lid + s];
            scratch[WG + lid] += scratch[WG + lid + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float2 total = (float2)(scratch[0], scratch[WG]);
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}
#endif

/* Chan et al.'s parallel merge: (n, mean, m2) absorbs (nb, mb, m2b); m2 is the sum of squared deviations
 * from the mean. Counts are exact integers; means of shifted data stay small, so nothing cancels. */
void chan_merge(int* n, float* mean, float* m2, const int nb, const float mb, const float m2b)
{
    if (nb == 0) return;
    const int total = *n + nb;
    const float delta = mb - *mean;
    const float frac = (float)nb / (float)total;
    *mean += delta * frac;
    *m2 += m2b + delta * delta * (float)(*n) * frac;
    *n = total;
}

#endif
