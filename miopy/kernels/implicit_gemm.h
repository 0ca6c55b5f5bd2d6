/* The implicit GEMM of a convolution, shared by conv_direct_local.cl and conv_mma.cl. Per group g the output is
 *     out[m][col] = sum_kk A[m][kk] * B[kk][col]
 *   forward           m = k (K/G)   col = (n, p, q) (N*P*Q)   kk = (c, r, s)   A = w    B = x gathered
 *   backward-data     m = c (C/G)   col = (n, h, w) (N*H*W)   kk = (k, r, s)   A = w    B = dy gathered
 *   backward-weights  m = k (K/G)   col = (c, r, s)           kk = (n, p, q)   A = dy   B = x gathered
 * Gathered operands read zero outside the image (padding), and for backward-data where a tap does not land on an
 * output position (stride). Each kernel maps (m, col, kk) to tensor offsets with these macros in its own inner_at
 * (a slice row as (chan, tap)) and operand functions a_col, a_row (A), b_col, b_row (B: a column's and a row's
 * tap_t, an offset and the (h, w) it adds), its switches adding copies and phases to the map.
 *
 * Defines it needs: the problem (N C H W K R S P Q G, see conv_naive.cl), the element strides XS_N XS_C XS_H XS_W,
 * WS_K WS_C WS_R WS_S, YS_N YS_K YS_P YS_Q of x, w, y; THREADS, M_BLK, N_BLK, K_BLK (the work-group's work-items,
 * tile and slice); and, before it is included, B_KK_FAST (1: B's slices are fetched kk-fast, like A's).
 *
 * What it defines:
 *   CG KG RS           input and output channels per group, taps of the filter
 *   X_AT W_AT Y_AT     element offsets in x (n, c, h, w), w (k, c, r, s), y (n, k, p, q)
 *   TAP_R TAP_S        a tap's filter row and column (tap = r * S + s)
 *   OFF_IMAGE          a tap coordinate that fails every bounds check
 *   A_KK_STEP .. B_NIDX   how THREADS work-items fetch a K_BLK x BLK slice: the fast index varies across
 *                      neighbouring work-items (coalesced). Per work-item NKK rows kk = T_KK + i * KK_STEP and NIDX
 *                      columns idx = T_IDX + j * IDX_STEP (A_* of A, always kk-fast; B_* of B)
 */
#ifndef MIOPY_IMPLICIT_GEMM_H
#define MIOPY_IMPLICIT_GEMM_H
#ifndef B_KK_FAST
#error "implicit_gemm.h needs B_KK_FAST defined before it"
#endif

#define CG (C / G)
#define KG (K / G)
#define RS (R * S)
#define X_AT(n, c, h, w) ((n) * XS_N + (c) * XS_C + (h) * XS_H + (w) * XS_W)
#define W_AT(k, c, r, s) ((k) * WS_K + (c) * WS_C + (r) * WS_R + (s) * WS_S)
#define Y_AT(n, k, p, q) ((n) * YS_N + (k) * YS_K + (p) * YS_P + (q) * YS_Q)

#define TAP_R(tap) ((int)((uint)(tap) / S))
#define TAP_S(tap) ((int)((uint)(tap) % S))
#define OFF_IMAGE (-(1 << 28))

#define A_KK_STEP (THREADS < K_BLK ? THREADS : K_BLK)
#define A_IDX_STEP (THREADS / A_KK_STEP)
#define A_T_KK (t % A_KK_STEP)
#define A_T_IDX (t / A_KK_STEP)
#if B_KK_FAST
#define B_KK_STEP (THREADS < K_BLK ? THREADS : K_BLK)
#define B_IDX_STEP (THREADS / B_KK_STEP)
#define B_T_KK (t % B_KK_STEP)
#define B_T_IDX (t / B_KK_STEP)
#else
#define B_IDX_STEP (THREADS < N_BLK ? THREADS : N_BLK)
#define B_KK_STEP (THREADS / B_IDX_STEP)
#define B_T_KK (t / B_IDX_STEP)
#define B_T_IDX (t % B_IDX_STEP)
#endif
#define A_NKK (K_BLK / A_KK_STEP)
#define A_NIDX (M_BLK / A_IDX_STEP)
#define B_NKK (K_BLK / B_KK_STEP)
#define B_NIDX (N_BLK / B_IDX_STEP)

#endif
