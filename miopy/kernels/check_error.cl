/* Find's accuracy check on the device: the largest hybrid error |got - want| / (1 + |want|) over n elements,
 * one partial maximum per work-group (the host takes the max of those). An element the reference left NaN
 * (a gap of a strided tensor: both runs start from NaN-poisoned buffers) is skipped; a NaN or infinite
 * result where the reference is finite (an unwritten or overflowed element) counts as an infinite error.
 * Needs WG (a power of two) defined; DATA_T / LOAD come from types.h. */
#include "types.h"

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void max_hybrid_error(__global const DATA_T* restrict got, __global const DATA_T* restrict want, const ulong n,
                      __global float* restrict partial)
{
    __local float best[WG];
    float m = 0.0f;
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
        const float w = LOAD(want, i);
        if (isnan(w))
            continue;
        const float e = fabs(LOAD(got, i) - w) / (1.0f + fabs(w));
        m = (isnan(e) || isinf(e)) ? INFINITY : fmax(m, e);
        if (isinf(m))
            break;
    }
    const int lid = get_local_id(0);
    best[lid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            best[lid] = fmax(best[lid], best[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = best[0];
}
