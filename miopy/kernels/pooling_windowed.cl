/* 2-D pooling over any window, stride and per-side padding, forward and backward; one work-item per
 * output element (forward) or per input element (backward, gathering the outputs whose windows cover it:
 * no atomics, deterministic).
 *
 * Defines (all ints):
 *   MODE                  0 max, 1 average with padding excluded, 2 average with padding included
 *   N C H W               input dims;  OH OW  output dims
 *   KH KW SH SW           window and strides
 *   PT PB PL PR           pads top, bottom, left, right (the average's divisor counts padding up to them)
 *   XS_N XS_C XS_H XS_W   element strides of x (forward) or dx (backward)
 *   YS_N YS_C YS_H YS_W   element strides of y (forward) or dy (backward)
 *   SAVE_INDICES          forward, max only: write each output's argmax (h * W + w in its input plane) to
 *                         indices, packed over (n, c, oh, ow); the max backward reads them
 *   MIOPY_HALF            storage type (types.h)
 */
#include "types.h"

#if !defined(MODE) || !defined(N) || !defined(OH) || !defined(KH) || !defined(PT) || !defined(XS_N) || !defined(YS_N)
#error "pooling_windowed.cl needs MODE, N C H W, OH OW, KH KW SH SW, PT PB PL PR, XS_*, YS_*"
#endif
#ifndef SAVE_INDICES
#define SAVE_INDICES 0
#endif

#define X_AT(n, c, h, w) ((n) * XS_N + (c) * XS_C + (h) * XS_H + (w) * XS_W)
#define Y_AT(n, c, h, w) ((n) * YS_N + (c) * YS_C + (h) * YS_H + (w) * YS_W)

/* Loops over a window (forward) or over the windows holding an element (backward) have constant trip
 * counts, so a small window's loads are issued together: unrolled up to 8 x 8. */
#define SMALL_WINDOW (KH <= 8 && KW <= 8)
#define COVER_H ((KH + SH - 1) / SH)   /* at most this many output rows' windows hold one input row */
#define COVER_W ((KW + SW - 1) / SW)

/* The divisor of the average at output (oh, ow): PyTorch's pool size (window clipped to the far pads)
 * with padding included, else the count of input elements under the window. */
inline float pool_divisor(const int oh, const int ow)
{
    const int h0 = oh * SH - PT, w0 = ow * SW - PL;
#if MODE == 2
    return (float)((min(h0 + KH, H + PB) - h0) * (min(w0 + KW, W + PR) - w0));
#else
    return (float)((min(h0 + KH, H) - max(h0, 0)) * (min(w0 + KW, W) - max(w0, 0)));
#endif
}

__kernel void pool_fwd(__global const DATA_T* restrict x, __global DATA_T* restrict y
#if SAVE_INDICES
                       , __global int* restrict indices
#endif
                       )
{
    const int gid = get_global_id(0);
    if (gid >= N * C * OH * OW) return;
    const int ow = gid % OW, oh = (gid / OW) % OH, c = (gid / (OW * OH)) % C, n = gid / (OW * OH * C);
    const int h0 = oh * SH - PT, w0 = ow * SW - PL;
    const __global DATA_T* plane = x + X_AT(n, c, 0, 0);
#if MODE == 0
    float best = -INFINITY;
    int arg = max(h0, 0) * W + max(w0, 0);
#else
    float sum = 0.0f;
#endif
    /* the window's rows and columns inside the input, in row-major order (constant trip counts) */
#if SMALL_WINDOW
#pragma unroll
#endif
    for (int i = 0; i < KH; ++i) {
        const int h = h0 + i;
        if (h < 0 || h >= H) continue;
#if SMALL_WINDOW
#pragma unroll
#endif
        for (int j = 0; j < KW; ++j) {
            const int w = w0 + j;
            if (w < 0 || w >= W) continue;
            const float v = LOAD(plane, h * XS_H + w * XS_W);
#if MODE == 0
            if (v > best || isnan(v)) { best = v; arg = h * W + w; }
#else
            sum += v;
#endif
        }
    }
#if MODE == 0
    STORE(y, Y_AT(n, c, oh, ow), best);
#if SAVE_INDICES
    indices[gid] = arg;
#endif
#else
    STORE(y, Y_AT(n, c, oh, ow), sum / pool_divisor(oh, ow));
#endif
}

/* dx from dy (x's dims in N C H W, y's in OH OW): max routes each dy to its saved argmax, average
 * spreads it evenly over its window. */
__kernel void pool_bwd(__global DATA_T* restrict dx, __global const DATA_T* restrict dy
#if MODE == 0
                       , __global const int* restrict indices
#endif
                       )
{
    const int gid = get_global_id(0);
    if (gid >= N * C * H * W) return;
    const int w = gid % W, h = (gid / W) % H, c = (gid / (W * H)) % C, n = gid / (W * H * C);
    /* outputs whose window covers (h, w): oh * SH - PT <= h < oh * SH - PT + KH */
    const int oh0 = h + PT < KH ? 0 : (h + PT - KH) / SH + 1, oh1 = min((h + PT) / SH + 1, OH);
    const int ow0 = w + PL < KW ? 0 : (w + PL - KW) / SW + 1, ow1 = min((w + PL) / SW + 1, OW);
    float grad = 0.0f;
#if MODE == 0
    const int here = h * W + w;
    const __global int* plane = indices + (n * C + c) * OH * OW;
#endif
    /* at most COVER_H x COVER_W windows hold an element (constant trip counts) */
#if SMALL_WINDOW
#pragma unroll
#endif
    for (int i = 0; i < COVER_H; ++i) {
        const int oh = oh0 + i;
        if (oh >= oh1) continue;
#if SMALL_WINDOW
#pragma unroll
#endif
        for (int j = 0; j < COVER_W; ++j) {
            const int ow = ow0 + j;
            if (ow >= ow1) continue;
#if MODE == 0
            if (plane[oh * OW + ow] == here) grad += LOAD(dy, Y_AT(n, c, oh, ow));
#else
            grad += LOAD(dy, Y_AT(n, c, oh, ow)) / pool_divisor(oh, ow);
#endif
        }
    }
    STORE(dx, X_AT(n, c, h, w), grad);
}
