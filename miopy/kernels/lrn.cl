/* Local response normalisation, forward and backward; one work-item per element of an N x C x H x W
 * tensor, any element strides. scale = k + alpha_over_area * sum of x^2 over the element's window (zero
 * outside), y = x * scale^-beta. The backward recomputes y / scale from x and the saved scale:
 * dx = dy * scale^-beta - 2 * alpha_over_area * beta * x * sum over the windows holding the element of
 * dy * x * scale^(-beta - 1).
 *
 * Defines (all ints):
 *   MODE                  0 within-channel (a window of LRN_N x LRN_N pixels), 1 cross-channel (LRN_N channels)
 *   LRN_PRE LRN_POST      window elements before and after the centre (LRN_PRE + 1 + LRN_POST = LRN_N)
 *   N C H W               dims
 *   XS_* YS_* SS_*        element strides of x, y, scale (forward);  DXS_* DYS_* XS_* SS_* (backward)
 *   SAVE_SCALE            forward: also write the scale (for the backward)
 *   MIOPY_HALF            storage type (types.h)
 * Arguments alpha_over_area, beta, k are numbers, so new values never recompile.
 */
#include "types.h"

#if !defined(MODE) || !defined(LRN_PRE) || !defined(LRN_POST) || !defined(N) || !defined(XS_N)
#error "lrn.cl needs MODE, LRN_PRE, LRN_POST, N C H W, XS_*"
#endif
#ifndef SAVE_SCALE
#define SAVE_SCALE 0
#endif
#if (SAVE_SCALE || defined(DXS_N)) && !defined(SS_N)
#error "lrn.cl needs the scale's strides SS_* to save or read it"
#endif

#define AT(T, n, c, h, w) ((n) * T##S_N + (c) * T##S_C + (h) * T##S_H + (w) * T##S_W)

#ifdef YS_N
__kernel void lrn_fwd(__global const DATA_T* restrict x, __global DATA_T* restrict y,
#if SAVE_SCALE
                      __global DATA_T* restrict scale,
#endif
                      const float alpha_over_area, const float beta, const float k)
{
    const int gid = get_global_id(0);
    if (gid >= N * C * H * W) return;
    const int w = gid % W, h = (gid / W) % H, c = (gid / (H * W)) % C, n = gid / (C * H * W);
    float sum = 0.0f;
#if MODE == 1
    for (int cc = max(c - LRN_PRE, 0); cc <= min(c + LRN_POST, C - 1); ++cc) {
        const float v = LOAD(x, AT(X, n, cc, h, w));
        sum += v * v;
    }
#else
    for (int hh = max(h - LRN_PRE, 0); hh <= min(h + LRN_POST, H - 1); ++hh)
        for (int ww = max(w - LRN_PRE, 0); ww <= min(w + LRN_POST, W - 1); ++ww) {
            const float v = LOAD(x, AT(X, n, c, hh, ww));
            sum += v * v;
        }
#endif
    const float s = k + alpha_over_area * sum;
    STORE(y, AT(Y, n, c, h, w), LOAD(x, AT(X, n, c, h, w)) * pow(s, -beta));
#if SAVE_SCALE
    STORE(scale, AT(S, n, c, h, w), s);
#endif
}
#endif

#ifdef DXS_N
/* dy * x * scale^(-beta - 1) at one element */
#define TERM(n, c, h, w) (LOAD(dy, AT(DY, n, c, h, w)) * LOAD(x, AT(X, n, c, h, w)) \
                          * pow(LOAD(scale, AT(S, n, c, h, w)), -beta - 1.0f))

__kernel void lrn_bwd(__global DATA_T* restrict dx, __global const DATA_T* restrict dy,
                      __global const DATA_T* restrict x, __global const DATA_T* restrict scale,
                      const float alpha_over_area, const float beta)
{
    const int gid = get_global_id(0);
    if (gid >= N * C * H * W) return;
    const int w = gid % W, h = (gid / W) % H, c = (gid / (H * W)) % C, n = gid / (C * H * W);
    float acc = 0.0f;
#if MODE == 1
    for (int cc = max(c - LRN_POST, 0); cc <= min(c + LRN_PRE, C - 1); ++cc)
        acc += TERM(n, cc, h, w);
#else
    for (int hh = max(h - LRN_POST, 0); hh <= min(h + LRN_PRE, H - 1); ++hh)
        for (int ww = max(w - LRN_POST, 0); ww <= min(w + LRN_PRE, W - 1); ++ww)
            acc += TERM(n, c, hh, ww);
#endif
    const float s = LOAD(scale, AT(S, n, c, h, w));
    const float grad = LOAD(dy, AT(DY, n, c, h, w)) * pow(s, -beta)
                       - 2.0f * alpha_over_area * beta * LOAD(x, AT(X, n, c, h, w)) * acc;
    STORE(dx, AT(DX, n, c, h, w), grad);
}
#endif
