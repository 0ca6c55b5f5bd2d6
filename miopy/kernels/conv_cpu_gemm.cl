/* Convolution as GEMMs over channels-last copies, for CPU OpenCL devices (ConvCpuGemm): the inner
 * dimension is the input channels (forward, backward-data) or the N*P*Q output pixels (backward-weights),
 * and each work-item holds a register tile whose VW-wide float vectors run along channels, so a layer
 * with few pixels per row (7x7, 14x14) fills every lane. No local memory, work-group size left to the
 * runtime; accumulators are named variables and vector loads dereference an unaligned vector type (PoCL 3
 * compiles vloadN as a call). Groups = 1, packed NCHW tensors.
 *
 *   cpu_pack_nhwc:    in (PLANES_N x CH x SRC_H x SRC_W, NCHW) -> out[n][h][w][c] (DST_H x DST_W, CH_P channels),
 *                     out pixel (h, w) = in pixel (h - TOP, w - LEFT), zero outside (padding; negative TOP /
 *                     LEFT crop), channels CH..CH_P-1 zero
 *   cpu_pack_weights: w (K x C x R x S) -> wp[r][s][ci][co] with co padded to CO_P: forward ci = c, co = k;
 *                     FLIP (backward-data) ci = k, co = c and the filter rotated 180 degrees
 *   cpu_gemm_fwd:     out[n, co0..co0+VW-1, p, q0..q0+PT-1] = sum_{r,s,ci} wp[r][s][ci][co] * in_p[n][p*SH + r*DH][q*SW + s*DW][ci]
 *                     (forward: in = x padded, out = y; backward-data at stride 1: in = dy padded by the
 *                     filter's reach minus the pads, out = dx, weights flipped)
 *   cpu_gemm_bwd_weights: dw[k0..k0+KT-1, c0..c0+VW-1, r, s] = sum_{n,p,q} dy[n, k, p, q] * x_p[n][p*SH + r*DH][q*SW + s*DW][c]
 *                     (each output row's Q terms summed apart, then added to a running total: a fixed order,
 *                     and a 262144-term sum stays within 3e-6 of float64)
 *
 * Defines (all ints):
 *   cpu_pack_nhwc: PACK_INPUT=1, PLANES_N CH CH_P SRC_H SRC_W DST_H DST_W TOP LEFT
 *   cpu_pack_weights: PACK_WEIGHTS=1, K C R S CO_P FLIP
 *   cpu_gemm_fwd: N CI CO R S HI WI PO QO SH SW DH DW CO_P (padded input dims HI WI, its channels CI)
 *   cpu_gemm_bwd_weights: N C K R S HI WI P Q SH SW DH DW C_P (x padded: HI x WI, C_P channels)
 *   VW  vector width (4, 8, 16) along output channels (fwd) or input channels (bwd-weights)
 *   PT  cpu_gemm_fwd: output pixels per work-item (1..12); KT  cpu_gemm_bwd_weights: K per work-item (1..12)
 *   MIOPY_HALF (types.h): tensors hold half values (the packed copies too); arithmetic is float
 */
#include "types.h"

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/* ---- packing: one work-item per destination row (pixel row of all channels, or weight row) ---- */
#ifdef PACK_INPUT
__kernel void cpu_pack_nhwc(__global const DATA_T* restrict in, __global DATA_T* restrict out, const int out_off)
{
    const int row = get_global_id(0);   /* n * DST_H + h */
    if (row >= PLANES_N * DST_H) return;
    const int n = row / DST_H, h = row % DST_H - TOP;
    __global DATA_T* dst = out + out_off + row * (DST_W * CH_P);
    for (int w = 0; w < DST_W; ++w)
        for (int c = 0; c < CH_P; ++c) {
            const int sw = w - LEFT;
            const bool inside = c < CH && h >= 0 && h < SRC_H && sw >= 0 && sw < SRC_W;
            STORE(dst, w * CH_P + c, inside ? LOAD(in, ((n * CH + c) * SRC_H + h) * SRC_W + sw) : 0.0f);
        }
}
#endif

#ifdef PACK_WEIGHTS
#ifndef FLIP
#define FLIP 0
#endif
#define PACK_CI (FLIP ? K : C)
#define PACK_CO (FLIP ? C : K)
/* One work-item per (r, s, ci) row of CO_P outputs. */
__kernel void cpu_pack_weights(__global const DATA_T* restrict w, __global DATA_T* restrict wp, const int wp_off)
{
    const int row = get_global_id(0);
    if (row >= R * S * PACK_CI) return;
    const int ci = row % PACK_CI, s = (row / PACK_CI) % S, r = row / (PACK_CI * S);
    const int rr = FLIP ? R - 1 - r : r, ss = FLIP ? S - 1 - s : s;
    for (int co = 0; co < CO_P; ++co) {
        const int k = FLIP ? ci : co, c = FLIP ? co : ci;
        STORE(wp, wp_off + row * CO_P + co, co < PACK_CO ? LOAD(w, ((k * C + c) * R + rr) * S + ss) : 0.0f);
    }
}
#endif

#if defined(VW) && (defined(PT) || defined(KT))
#define VEC CAT(float, VW)
#ifdef __clang__
typedef float vec_unaligned __attribute__((ext_vector_type(VW), aligned(4)));
#define VLOAD_AT(p) ((VEC)(*(const vec_unaligned*)(p)))
#define VSTORE_AT(v, p) (*(vec_unaligned*)(p) = (v))
#else
#define VLOAD_AT(p) CAT(vload, VW)(0, p)
#define VSTORE_AT(v, p) CAT(vstore, VW)(v, 0, p)
#endif
#if MIOPY_HALF
/* half data: VW values converted one by one */
inline void load_vec(VEC* out, __global const DATA_T* p)
{
    float lanes[VW];
    for (int i = 0; i < VW; ++i) lanes[i] = LOAD(p, i);
    *out = VLOAD_AT(lanes);
}
#else
#define load_vec(out, p) (*(out) = ((VEC)(*(__global const vec_unaligned*)(p))))
#endif

#define I_1(X) X(0)
#define I_2(X) I_1(X) X(1)
#define I_3(X) I_2(X) X(2)
#define I_4(X) I_3(X) X(3)
#define I_5(X) I_4(X) X(4)
#define I_6(X) I_5(X) X(5)
#define I_7(X) I_6(X) X(6)
#define I_8(X) I_7(X) X(7)
#define I_9(X) I_8(X) X(8)
#define I_10(X) I_9(X) X(9)
#define I_11(X) I_10(X) X(10)
#define I_12(X) I_11(X) X(11)
#define ZERO(i) VEC acc##i = (VEC)(0.0f);
#endif

/* ---- forward (and backward-data at stride 1). Global size: (ceil(QO / PT), PO, N * CO_P / VW). ---- */
#if defined(VW) && defined(PT)
#define EACH_PIXEL(X) CAT(I_, PT)(X)
#define FWD_FMA(i) acc##i += LOAD(pix, (i) * (SW * CI)) * wv;
#define FWD_STORE(i) if (q0 + (i) < QO) { \
        float lanes[VW]; \
        VSTORE_AT(acc##i, lanes); \
        for (int l = 0; l < VW && co0 + l < CO; ++l) \
            STORE(out, ((n * CO + co0 + l) * PO + p) * QO + q0 + (i), lanes[l]); \
    }

__kernel void cpu_gemm_fwd(__global const DATA_T* restrict in, __global const DATA_T* restrict wp,
                           __global DATA_T* restrict out, const int in_off, const int wp_off)
{
    const int q0 = get_global_id(0) * PT, p = get_global_id(1);
    const int n = get_global_id(2) / (CO_P / VW), co0 = (get_global_id(2) % (CO_P / VW)) * VW;
    EACH_PIXEL(ZERO)
    for (int r = 0; r < R; ++r)
        for (int s = 0; s < S; ++s) {
            __global const DATA_T* pix = in + in_off + ((n * HI + p * SH + r * DH) * WI + q0 * SW + s * DW) * CI;
            __global const DATA_T* wrow = wp + wp_off + (r * S + s) * CI * CO_P + co0;
            for (int ci = 0; ci < CI; ++ci, ++pix, wrow += CO_P) {
                VEC wv;
                load_vec(&wv, wrow);
                EACH_PIXEL(FWD_FMA)
            }
        }
    EACH_PIXEL(FWD_STORE)
}
#endif

/* ---- backward-weights. Global size: (C_P / VW, R * S, K / KT). ---- */
#if defined(VW) && defined(KT)
#define EACH_K(X) CAT(I_, KT)(X)
#define BWW_FMA(t) acc##t += LOAD(dyp, (t) * (P * Q)) * xv;
#define BWW_TOTAL(t) VEC total##t = (VEC)(0.0f);
#define BWW_FOLD(t) COMPENSATED_ADD(VEC, total##t, acc##t)
#define FOLD_STEPS 32   /* terms per lane summed before the compensated running total (types.h) */
#define BWW_STORE(t) { \
        float lanes[VW]; \
        VSTORE_AT(total##t + acc##t, lanes); \
        for (int l = 0; l < VW && c0 + l < C; ++l) \
            STORE(dw, (((k0 + (t)) * C + c0 + l) * R + r) * S + s, lanes[l]); \
    }

__kernel void cpu_gemm_bwd_weights(__global const DATA_T* restrict xp, __global DATA_T* restrict dw,
                                   __global const DATA_T* restrict dy, const int xp_off)
{
    const int c0 = get_global_id(0) * VW, r = get_global_id(1) / S, s = get_global_id(1) % S;
    const int k0 = get_global_id(2) * KT;
    EACH_K(ZERO)
    EACH_K(BWW_TOTAL)
    for (int n = 0; n < N; ++n)
        for (int p = 0; p < P; ++p) {
            __global const DATA_T* row = xp + xp_off + ((n * HI + p * SH + r * DH) * WI + s * DW) * C_P + c0;
            __global const DATA_T* dyp = dy + ((n * K + k0) * P + p) * Q;
            for (int q0 = 0; q0 < Q; q0 += FOLD_STEPS) {
                for (int q = q0; q < min(Q, q0 + FOLD_STEPS); ++q, ++dyp, row += SW * C_P) {
                    VEC xv;
                    load_vec(&xv, row);
                    EACH_K(BWW_FMA)
                }
                EACH_K(BWW_FOLD)   /* blocks of FOLD_STEPS terms, then the running total: long sums stay accurate */
            }
        }
    EACH_K(BWW_STORE)
}
#endif
