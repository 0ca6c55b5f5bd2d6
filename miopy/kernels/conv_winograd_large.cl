/* Winograd F(m x m, r x r) transforms for filters larger than 3x3 (conv_winograd.cl has 3x3's hand-written
 * ones): the Toom-Cook matrices G (ALPHA x r), B^T (ALPHA x ALPHA) and A^T (m x ALPHA) of the points named
 * below, tabulated as exact fractions (scaled so B^T holds small integers and halves), applied as the
 * one-dimensional transforms conv_winograd.h's kernels expect (A and G^T, backward-weights', are the
 * transposes). A matrix entry that is zero costs nothing (products of constants fold after unrolling).
 * The kernels, the tensors' roles and the defines are in conv_winograd.h; WINO_M WINO_R: (2, 5) or (3, 5).
 */
#if !defined(WINO_M) || !defined(WINO_R)
#error "conv_winograd_large.cl needs WINO_M and WINO_R"
#endif
#define ALPHA (WINO_M + WINO_R - 1)
#define AA (ALPHA * ALPHA)

#if WINO_M == 2 && WINO_R == 5
/* points 0, 1, -1, 1/2, -2 and infinity rather than 0, +-1, +-2 (as F(4,3) in conv_winograd.cl): a float32
 * emulation of the weight gradient rounds 1.5x less (13.8 against 21.6 units of u * |dw| with 16-tile
 * blocks; docs/notes/performance.md), Barabasz et al.'s finding for F(4,3) */
__constant float WINO_G[6 * 5] = {
    1.0f, 0.0f, 0.0f, 0.0f, 0.0f,
    1.0f / 3.0f, 1.0f / 3.0f, 1.0f / 3.0f, 1.0f / 3.0f, 1.0f / 3.0f,
    -1.0f / 3.0f, 1.0f / 3.0f, -1.0f / 3.0f, 1.0f / 3.0f, -1.0f / 3.0f,
    -16.0f / 15.0f, -8.0f / 15.0f, -4.0f / 15.0f, -2.0f / 15.0f, -1.0f / 15.0f,
    1.0f / 15.0f, -2.0f / 15.0f, 4.0f / 15.0f, -8.0f / 15.0f, 16.0f / 15.0f,
    0.0f, 0.0f, 0.0f, 0.0f, 1.0f};
__constant float WINO_BT[6 * 6] = {
    1.0f, -3.0f / 2.0f, -2.0f, 3.0f / 2.0f, 1.0f, 0.0f,
    0.0f, -1.0f, 1.0f / 2.0f, 5.0f / 2.0f, 1.0f, 0.0f,
    0.0f, 1.0f, -5.0f / 2.0f, 1.0f / 2.0f, 1.0f, 0.0f,
    0.0f, -2.0f, -1.0f, 2.0f, 1.0f, 0.0f,
    0.0f, 1.0f / 2.0f, -1.0f, -1.0f / 2.0f, 1.0f, 0.0f,
    0.0f, 1.0f, -3.0f / 2.0f, -2.0f, 3.0f / 2.0f, 1.0f};
__constant float WINO_AT[2 * 6] = {
    1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f,
    0.0f, 1.0f, -1.0f, 1.0f / 2.0f, -2.0f, 1.0f};

#elif WINO_M == 3 && WINO_R == 5
/* points 0, 1, -1, 2, -2, 1/2 and infinity */
__constant float WINO_G[7 * 5] = {
    -1.0f / 2.0f, 0.0f, 0.0f, 0.0f, 0.0f,
    -1.0f / 3.0f, -1.0f / 3.0f, -1.0f / 3.0f, -1.0f / 3.0f, -1.0f / 3.0f,
    1.0f / 9.0f, -1.0f / 9.0f, 1.0f / 9.0f, -1.0f / 9.0f, 1.0f / 9.0f,
    1.0f / 36.0f, 1.0f / 18.0f, 1.0f / 9.0f, 2.0f / 9.0f, 4.0f / 9.0f,
    -1.0f / 60.0f, 1.0f / 30.0f, -1.0f / 15.0f, 2.0f / 15.0f, -4.0f / 15.0f,
    32.0f / 45.0f, 16.0f / 45.0f, 8.0f / 45.0f, 4.0f / 45.0f, 2.0f / 45.0f,
    0.0f, 0.0f, 0.0f, 0.0f, 1.0f};
__constant float WINO_BT[7 * 7] = {
    -2.0f, 4.0f, 5.0f / 2.0f, -5.0f, -1.0f / 2.0f, 1.0f, 0.0f,
    0.0f, 2.0f, -2.0f, -9.0f / 2.0f, 1.0f / 2.0f, 1.0f, 0.0f,
    0.0f, -2.0f, 6.0f, -7.0f / 2.0f, -3.0f / 2.0f, 1.0f, 0.0f,
    0.0f, 1.0f, -3.0f / 2.0f, -2.0f, 3.0f / 2.0f, 1.0f, 0.0f,
    0.0f, -1.0f, 5.0f / 2.0f, 0.0f, -5.0f / 2.0f, 1.0f, 0.0f,
    0.0f, 4.0f, 0.0f, -5.0f, 0.0f, 1.0f, 0.0f,
    0.0f, -2.0f, 4.0f, 5.0f / 2.0f, -5.0f, -1.0f / 2.0f, 1.0f};
__constant float WINO_AT[3 * 7] = {
    1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f,
    0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 1.0f / 2.0f, 0.0f,
    0.0f, 1.0f, 1.0f, 4.0f, 4.0f, 1.0f / 4.0f, 1.0f};

#else
#error "WINO_M, WINO_R must be (2, 5) or (3, 5)"
#endif

/* o[i * so] = sum_j mat[i][j] * v[j * si] for a ROWS x COLS constant matrix; zero entries are skipped. */
#define APPLY(mat, ROWS, COLS, v, si, o, so)                                     \
    _Pragma("unroll") for (int i_ = 0; i_ < (ROWS); ++i_) {                      \
        float sum_ = 0.0f;                                                       \
        _Pragma("unroll") for (int j_ = 0; j_ < (COLS); ++j_)                    \
            if (mat[i_ * (COLS) + j_] != 0.0f) sum_ = mad(mat[i_ * (COLS) + j_], (v)[j_ * (si)], sum_); \
        (o)[i_ * (so)] = sum_;                                                   \
    }

/* o[j * so] = sum_i mat[i][j] * v[i * si]: the transpose of APPLY's matrix (backward-weights' A and G^T). */
#define APPLY_T(mat, ROWS, COLS, v, si, o, so)                                   \
    _Pragma("unroll") for (int j_ = 0; j_ < (COLS); ++j_) {                      \
        float sum_ = 0.0f;                                                       \
        _Pragma("unroll") for (int i_ = 0; i_ < (ROWS); ++i_)                    \
            if (mat[i_ * (COLS) + j_] != 0.0f) sum_ = mad(mat[i_ * (COLS) + j_], (v)[i_ * (si)], sum_); \
        (o)[j_ * (so)] = sum_;                                                   \
    }

void filter_1d(const float* g, int si, float* o, int so) { APPLY(WINO_G, ALPHA, WINO_R, g, si, o, so) }
void input_1d(const float* d, int si, float* o, int so) { APPLY(WINO_BT, ALPHA, ALPHA, d, si, o, so) }
void output_1d(const float* m, int si, float* o, int so) { APPLY(WINO_AT, WINO_M, ALPHA, m, si, o, so) }
void grad_output_1d(const float* y, int si, float* o, int so) { APPLY_T(WINO_AT, WINO_M, ALPHA, y, si, o, so) }
void grad_filter_1d(const float* u, int si, float* o, int so) { APPLY_T(WINO_G, ALPHA, WINO_R, u, si, o, so) }

#include "conv_winograd.h"
