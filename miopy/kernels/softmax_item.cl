/* Softmax with one work-item per row, for short rows: in channel mode neighbouring work-items are
 * neighbouring (h, w) positions, so every pass reads coalesced. Two passes over the row: (max, sum), then
 * the outputs. In place is allowed.
 *
 * Defines: those of softmax.h.
 */
#include "softmax.h"

#ifdef XS_N
__kernel void softmax_item_fwd(__global const DATA_T* x, __global DATA_T* y)
{
    const int r = get_global_id(0);
    if (r >= ROWS) return;
    float m = MAX_START, s = 0.0f;
    for (int i = 0; i < LEN; ++i)
        online_add(&m, &s, LOAD(x, AT(X, r, i)));
    for (int i = 0; i < LEN; ++i)
        STORE(y, AT(Y, r, i), softmax_out(LOAD(x, AT(X, r, i)), m, s));
}
#endif

#ifdef DXS_N
__kernel void softmax_item_bwd(__global DATA_T* dx, __global const DATA_T* dy, __global const DATA_T* y)
{
    const int r = get_global_id(0);
    if (r >= ROWS) return;
    float sum = 0.0f;
    for (int i = 0; i < LEN; ++i)
        sum += softmax_dot_term(LOAD(dy, AT(DY, r, i)), LOAD(y, AT(Y, r, i)));
    for (int i = 0; i < LEN; ++i)
        STORE(dx, AT(DX, r, i), softmax_grad(LOAD(dy, AT(DY, r, i)), LOAD(y, AT(Y, r, i)), sum));
}
#endif
