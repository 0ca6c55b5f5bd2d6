/* Naive direct convolution: one work-item per output element, any pad / stride / dilation / groups,
 * any element strides. The always-applicable fallback and the simplest correct kernel.
 *
 * Defines (all ints):
 *   N C H W        input dims          K R S   filter dims (weights K x C/G x R x S)
 *   P Q            output dims         G       groups
 *   PAD_H PAD_W  STRIDE_H STRIDE_W  DIL_H DIL_W
 *   XS_N XS_C XS_H XS_W, WS_K WS_C WS_R WS_S, YS_N YS_K YS_P YS_Q   element strides of x, w, y
 *   MIOPY_HALF     1: x, w, y hold half values (kernels/types.h); sums are float either way
 *   INDEX_T        type of element offsets and work-item ids: int (default), or long where a tensor spans
 *                  2^31 elements or more, or there are that many work-items
 */
#include "types.h"
#include "epilogue.h"

#ifndef INDEX_T
#define INDEX_T int
#endif
#define CG (C / G)
#define KG (K / G)
#define X_AT(n, c, h, w) ((INDEX_T)(n) * XS_N + (INDEX_T)(c) * XS_C + (INDEX_T)(h) * XS_H + (INDEX_T)(w) * XS_W)
#define W_AT(k, c, r, s) ((INDEX_T)(k) * WS_K + (INDEX_T)(c) * WS_C + (INDEX_T)(r) * WS_R + (INDEX_T)(s) * WS_S)
#define Y_AT(n, k, p, q) ((INDEX_T)(n) * YS_N + (INDEX_T)(k) * YS_K + (INDEX_T)(p) * YS_P + (INDEX_T)(q) * YS_Q)

/* y[n,k,p,q] = sum_{c,r,s} x[n, g*CG + c, p*U - PAD + r*DIL, ...] * w[k, c, r, s] */
__kernel void naive_fwd(__global const DATA_T* restrict x, __global const DATA_T* restrict w,
                        __global DATA_T* restrict y MIOPY_EPILOGUE_PARAMS)
{
    const INDEX_T gid = get_global_id(0);
    if (gid >= (INDEX_T)N * K * P * Q) return;
    const int q = gid % Q, p = (gid / Q) % P, k = (gid / ((INDEX_T)P * Q)) % K;
    const INDEX_T n = gid / ((INDEX_T)K * P * Q);
    const int c0 = (k / KG) * CG;
    float acc = 0.0f;
    for (int c = 0; c < CG; ++c)
        for (int r = 0; r < R; ++r) {
            const int h = p * STRIDE_H - PAD_H + r * DIL_H;
            if (h < 0 || h >= H) continue;
            for (int s = 0; s < S; ++s) {
                const int wi = q * STRIDE_W - PAD_W + s * DIL_W;
                if (wi < 0 || wi >= W) continue;
                acc += LOAD(x, X_AT(n, c0 + c, h, wi)) * LOAD(w, W_AT(k, c, r, s));
            }
        }
    const INDEX_T yi = Y_AT(n, k, p, q);
    STORE(y, yi, MIOPY_EPILOGUE(acc, k, p * Q + q, yi));
}

/* dx[n,c,h,w] = sum over k in c's group and taps (r,s) that land on (h,w) of dy[n,k,p,q] * w[k,c',r,s] */
__kernel void naive_bwd_data(__global DATA_T* restrict dx, __global const DATA_T* restrict w,
                             __global const DATA_T* restrict dy)
{
    const INDEX_T gid = get_global_id(0);
    if (gid >= (INDEX_T)N * C * H * W) return;
    const int wi = gid % W, h = (gid / W) % H, c = (gid / ((INDEX_T)H * W)) % C;
    const INDEX_T n = gid / ((INDEX_T)C * H * W);
    const int g = c / CG, cg = c % CG;
    float acc = 0.0f;
    for (int r = 0; r < R; ++r) {
        const int ph = h + PAD_H - r * DIL_H;
        if (ph < 0 || ph % STRIDE_H != 0 || ph / STRIDE_H >= P) continue;
        for (int s = 0; s < S; ++s) {
            const int qw = wi + PAD_W - s * DIL_W;
            if (qw < 0 || qw % STRIDE_W != 0 || qw / STRIDE_W >= Q) continue;
            for (int kk = 0; kk < KG; ++kk) {
                const int k = g * KG + kk;
                acc += LOAD(dy, Y_AT(n, k, ph / STRIDE_H, qw / STRIDE_W)) * LOAD(w, W_AT(k, cg, r, s));
            }
        }
    }
    STORE(dx, X_AT(n, c, h, wi), acc);
}

/* dw[k,c,r,s] = sum_{n,p,q} dy[n,k,p,q] * x[n, g*CG + c, p*U - PAD + r*DIL, ...] in blocks of SUM_BLOCK
 * terms, each joined to the running total with a compensated add (types.h): rounding then stays that of a
 * SUM_BLOCK-term sum however long N*P*Q (fixed order: deterministic). */
#ifndef SUM_BLOCK
#define SUM_BLOCK 32
#endif
__kernel void naive_bwd_weights(__global const DATA_T* restrict x, __global DATA_T* restrict dw,
                                __global const DATA_T* restrict dy)
{
    const INDEX_T gid = get_global_id(0);
    if (gid >= (INDEX_T)K * CG * R * S) return;
    const int s = gid % S, r = (gid / S) % R, c = (gid / (R * S)) % CG;
    const INDEX_T k = gid / ((INDEX_T)CG * R * S);
    const int cx = (k / KG) * CG + c;
    float block = 0.0f, total = 0.0f;
    int terms = 0;
    for (int n = 0; n < N; ++n)
        for (int p = 0; p < P; ++p) {
            const int h = p * STRIDE_H - PAD_H + r * DIL_H;
            if (h < 0 || h >= H) continue;
            for (int q = 0; q < Q; ++q) {
                const int wi = q * STRIDE_W - PAD_W + s * DIL_W;
                if (wi < 0 || wi >= W) continue;
                block += LOAD(dy, Y_AT(n, k, p, q)) * LOAD(x, X_AT(n, cx, h, wi));
                if (++terms == SUM_BLOCK) {
                    terms = 0;
                    COMPENSATED_ADD(float, total, block)
                }
            }
        }
    STORE(dw, W_AT(k, c, r, s), total + block);
}
