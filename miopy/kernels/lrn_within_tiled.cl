/* Within-channel LRN through local memory: each work-group of TW x TH work-items computes a TW x TH tile of
 * one (n, c) plane. It first stages the tile and its halo (the window's reach on each side) in local memory,
 * one value per element: x^2 forward, the backward's window term dy * x * scale^(-beta - 1) (one pow per
 * element instead of one per window term), zero outside the plane; then each work-item sums its window from
 * local memory in a fixed order (deterministic). Consecutive work-items are consecutive pixels of a row:
 * reads and writes are coalesced where rows are contiguous.
 *
 * Forward: scale = k + alpha_over_area * sum over the LRN_N x LRN_N window of x^2, y = x * scale^-beta.
 * Backward: dx = dy * scale^-beta - 2 * alpha_over_area * beta * x * sum over the windows holding the element.
 *
 * Defines (all ints):
 *   TW TH                 tile width and height (the work-group is TW x TH, one output each)
 *   TILES_W TILES_H       tiles across a plane's width and height
 *   LRN_N LRN_PRE LRN_POST   window size and its elements before / after the centre (LRN_PRE + 1 + LRN_POST)
 *   N C H W               dims
 *   XS_* YS_* SS_*        element strides of x, y, scale (forward);  DXS_* DYS_* XS_* SS_* (backward)
 *   SAVE_SCALE            forward: also write the scale
 *   MIOPY_HALF            storage type (types.h)
 */
#include "types.h"

#if !defined(TW) || !defined(TH) || !defined(TILES_W) || !defined(TILES_H) || !defined(LRN_N) \
    || !defined(LRN_PRE) || !defined(LRN_POST) || !defined(N) || !defined(XS_N)
#error "lrn_within_tiled.cl needs TW TH TILES_W TILES_H, LRN_N LRN_PRE LRN_POST, N C H W, XS_*"
#endif
#ifndef SAVE_SCALE
#define SAVE_SCALE 0
#endif

#define AT(T, n, c, h, w) ((n) * T##S_N + (c) * T##S_C + (h) * T##S_H + (w) * T##S_W)

/* The forward's window covers LRN_PRE before and LRN_POST after the centre; the windows holding an element
 * (the backward's gather) cover LRN_POST before and LRN_PRE after it. */
#ifdef DXS_N
#define BEFORE LRN_POST
#define AFTER LRN_PRE
#else
#define BEFORE LRN_PRE
#define AFTER LRN_POST
#endif
#define LW (TW + BEFORE + AFTER)   /* staged width and height */
#define LH (TH + BEFORE + AFTER)

/* The tile's (n, c, first row, first column) from the work-group id. */
#define TILE_ORIGIN \
    int group = get_group_id(0); \
    const int w0 = (group % TILES_W) * TW; group /= TILES_W; \
    const int h0 = (group % TILES_H) * TH; group /= TILES_H; \
    const int c = group % C, n = group / C; \
    const int lid = get_local_id(0), tw = lid % TW, th = lid / TW, h = h0 + th, w = w0 + tw

/* The sum of the staged values over the LRN_N x LRN_N window of work-item (th, tw), in a fixed order. */
inline float window_sum(__local const float* staged, const int th, const int tw)
{
    float sum = 0.0f;
    for (int i = 0; i < LRN_N; ++i)
        for (int j = 0; j < LRN_N; ++j)
            sum += staged[(th + i) * LW + tw + j];
    return sum;
}

#ifndef DXS_N
__kernel __attribute__((reqd_work_group_size(TW * TH, 1, 1)))
void lrn_within_tiled_fwd(__global const DATA_T* restrict x, __global DATA_T* restrict y,
#if SAVE_SCALE
                          __global DATA_T* restrict scale,
#endif
                          const float alpha_over_area, const float beta, const float k)
{
    __local float staged[LH * LW];
    TILE_ORIGIN;
    for (int e = lid; e < LH * LW; e += TW * TH) {
        const int hh = h0 - BEFORE + e / LW, ww = w0 - BEFORE + e % LW;
        float v = 0.0f;
        if (hh >= 0 && hh < H && ww >= 0 && ww < W) v = LOAD(x, AT(X, n, c, hh, ww));
        staged[e] = v * v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (h >= H || w >= W) return;
    const float s = k + alpha_over_area * window_sum(staged, th, tw);
    STORE(y, AT(Y, n, c, h, w), LOAD(x, AT(X, n, c, h, w)) * pow(s, -beta));
#if SAVE_SCALE
    STORE(scale, AT(S, n, c, h, w), s);
#endif
}

#else
__kernel __attribute__((reqd_work_group_size(TW * TH, 1, 1)))
void lrn_within_tiled_bwd(__global DATA_T* restrict dx, __global const DATA_T* restrict dy,
                          __global const DATA_T* restrict x, __global const DATA_T* restrict scale,
                          const float alpha_over_area, const float beta)
{
    __local float staged[LH * LW];
    TILE_ORIGIN;
    for (int e = lid; e < LH * LW; e += TW * TH) {
        const int hh = h0 - BEFORE + e / LW, ww = w0 - BEFORE + e % LW;
        float term = 0.0f;
        if (hh >= 0 && hh < H && ww >= 0 && ww < W)
            term = LOAD(dy, AT(DY, n, c, hh, ww)) * LOAD(x, AT(X, n, c, hh, ww))
                   * pow(LOAD(scale, AT(S, n, c, hh, ww)), -beta - 1.0f);
        staged[e] = term;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (h >= H || w >= W) return;
    const float s = LOAD(scale, AT(S, n, c, h, w));
    const float grad = LOAD(dy, AT(DY, n, c, h, w)) * pow(s, -beta)
                       - 2.0f * alpha_over_area * beta * LOAD(x, AT(X, n, c, h, w)) * window_sum(staged, th, tw);
    STORE(dx, AT(DX, n, c, h, w), grad);
}
#endif
