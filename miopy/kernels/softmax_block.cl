/* Softmax with one work-group of WG work-items per row: a strided pass reduces (max, sum) per work-item,
 * a tree in local memory combines them, a second pass writes the row. In place is allowed (each element
 * is read and written by the same work-item, after the whole row was reduced).
 *
 * Defines: WG (work-group size, a power of two) and those of softmax.h.
 */
#include "softmax.h"

#ifndef WG
#error "softmax_block.cl needs WG"
#endif

#ifdef XS_N
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void softmax_block_fwd(__global const DATA_T* x, __global DATA_T* y)
{
    __local float lm[WG], ls[WG];
    const int r = get_group_id(0), lid = get_local_id(0);
    float m = MAX_START, s = 0.0f;
    for (int i = lid; i < LEN; i += WG)
        online_add(&m, &s, LOAD(x, AT(X, r, i)));
    lm[lid] = m;
    ls[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = WG / 2; step > 0; step /= 2) {
        if (lid < step) {
            float m1 = lm[lid], s1 = ls[lid];
            online_merge(&m1, &s1, lm[lid + step], ls[lid + step]);
            lm[lid] = m1;
            ls[lid] = s1;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = lm[0];
    s = ls[0];
    for (int i = lid; i < LEN; i += WG)
        STORE(y, AT(Y, r, i), softmax_out(LOAD(x, AT(X, r, i)), m, s));
}
#endif

#ifdef DXS_N
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void softmax_block_bwd(__global DATA_T* dx, __global const DATA_T* dy, __global const DATA_T* y)
{
    __local float part[WG];
    const int r = get_group_id(0), lid = get_local_id(0);
    float acc = 0.0f;
    for (int i = lid; i < LEN; i += WG)
        acc += softmax_dot_term(LOAD(dy, AT(DY, r, i)), LOAD(y, AT(Y, r, i)));
    part[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = WG / 2; step > 0; step /= 2) {
        if (lid < step) part[lid] += part[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float sum = part[0];
    for (int i = lid; i < LEN; i += WG)
        STORE(dx, AT(DX, r, i), softmax_grad(LOAD(dy, AT(DY, r, i)), LOAD(y, AT(Y, r, i)), sum));
}
#endif
