/* Cross-channel LRN with one work-item per (n, h, w) column walking the channels: the window's values
 * sit in shift registers (arrays of LRN_N floats indexed by unrolled constants), so every element is read
 * once and the backward takes one pow per element (the per-element kernel recomputes one per window term).
 * Neighbouring work-items are neighbouring pixels: every load is coalesced in NCHW.
 *
 * Defines (all ints):
 *   LRN_N LRN_PRE LRN_POST   window size and its elements before / after the centre channel
 *   N C H W                  dims
 *   XS_* YS_* SS_*           element strides of x, y, scale (forward); DXS_* DYS_* XS_* SS_* (backward)
 *   SAVE_SCALE               forward: also write the scale
 *   MIOPY_HALF               storage type (types.h)
 */
#include "types.h"

#if !defined(LRN_N) || !defined(LRN_PRE) || !defined(LRN_POST) || !defined(N) || !defined(XS_N)
#error "lrn_column.cl needs LRN_N, LRN_PRE, LRN_POST, N C H W, XS_*"
#endif
#ifndef SAVE_SCALE
#define SAVE_SCALE 0
#endif

#define AT(T, n, c, h, w) ((n) * T##S_N + (c) * T##S_C + (h) * T##S_H + (w) * T##S_W)

#ifdef YS_N
/* xv[j] holds x of channel c - LRN_PRE + j (0 outside the tensor) */
__kernel void lrn_column_fwd(__global const DATA_T* restrict x, __global DATA_T* restrict y,
#if SAVE_SCALE
                             __global DATA_T* restrict scale,
#endif
                             const float alpha_over_area, const float beta, const float k)
{
    const int gid = get_global_id(0);
    if (gid >= N * H * W) return;
    const int w = gid % W, h = (gid / W) % H, n = gid / (H * W);
    float xv[LRN_N];
#pragma unroll
    for (int j = 0; j < LRN_N; ++j) {
        const int cc = j - LRN_PRE;
        xv[j] = cc >= 0 && cc < C ? LOAD(x, AT(X, n, cc, h, w)) : 0.0f;
    }
    for (int c = 0; c < C; ++c) {
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < LRN_N; ++j) sum += xv[j] * xv[j];
        const float s = k + alpha_over_area * sum;
        STORE(y, AT(Y, n, c, h, w), xv[LRN_PRE] * pow(s, -beta));
#if SAVE_SCALE
        STORE(scale, AT(S, n, c, h, w), s);
#endif
#pragma unroll
        for (int j = 0; j < LRN_N - 1; ++j) xv[j] = xv[j + 1];
        const int next = c + 1 + LRN_POST;
        xv[LRN_N - 1] = next < C ? LOAD(x, AT(X, n, next, h, w)) : 0.0f;
    }
}
#endif

#ifdef DXS_N
/* Slot j holds channel c - LRN_POST + j (the windows holding channel c): t = dy x scale^(-beta - 1),
 * g = dy scale^-beta, xv = x. */
__kernel void lrn_column_bwd(__global DATA_T* restrict dx, __global const DATA_T* restrict dy,
                             __global const DATA_T* restrict x, __global const DATA_T* restrict scale,
                             const float alpha_over_area, const float beta)
{
    const int gid = get_global_id(0);
    if (gid >= N * H * W) return;
    const int w = gid % W, h = (gid / W) % H, n = gid / (H * W);
    float t[LRN_N], g[LRN_N], xv[LRN_N];
#pragma unroll
    for (int j = 0; j < LRN_N; ++j) {
        const int cc = j - LRN_POST;
        t[j] = g[j] = xv[j] = 0.0f;
        if (cc >= 0 && cc < C) {
            const float s = LOAD(scale, AT(S, n, cc, h, w));
            xv[j] = LOAD(x, AT(X, n, cc, h, w));
            g[j] = LOAD(dy, AT(DY, n, cc, h, w)) * pow(s, -beta);
            t[j] = g[j] * xv[j] / s;
        }
    }
    for (int c = 0; c < C; ++c) {
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < LRN_N; ++j) acc += t[j];
        STORE(dx, AT(DX, n, c, h, w), g[LRN_POST] - 2.0f * alpha_over_area * beta * xv[LRN_POST] * acc);
#pragma unroll
        for (int j = 0; j < LRN_N - 1; ++j) {
            t[j] = t[j + 1];
            g[j] = g[j + 1];
            xv[j] = xv[j + 1];
        }
        const int next = c + 1 + LRN_PRE;
        t[LRN_N - 1] = g[LRN_N - 1] = xv[LRN_N - 1] = 0.0f;
        if (next < C) {
            const float s = LOAD(scale, AT(S, n, next, h, w));
            xv[LRN_N - 1] = LOAD(x, AT(X, n, next, h, w));
            g[LRN_N - 1] = LOAD(dy, AT(DY, n, next, h, w)) * pow(s, -beta);
            t[LRN_N - 1] = g[LRN_N - 1] * xv[LRN_N - 1] / s;
        }
    }
}
#endif
