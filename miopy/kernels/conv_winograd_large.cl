/* Winograd F(m x m, r x r) transforms for filters larger than 3x3 (conv_winograd.cl has 3x3's hand-written
 * ones): filters into U, input tiles into V, products M back to the output, around the batched GEMM of
 * conv_winograd_gemm.cl. The same layout and roles as conv_winograd.cl: a forward, stride-1 r x r
 * cross-correlation of an input tensor (N, IN_C, IN_H, IN_W) into (N, OUT_C, OUT_H, OUT_W); backward-data
 * is that with dy as input, the filters rotated 180 degrees and their channel axes swapped (FS_*).
 *
 * The transforms are the Toom-Cook matrices G (ALPHA x r), B^T (ALPHA x ALPHA) and A^T (m x ALPHA) of the
 * points named below, tabulated as exact fractions (scaled so B^T holds small integers and halves); a
 * matrix entry that is zero costs nothing (the products of constants are folded after unrolling).
 *
 * Defines (all ints):
 *   WINO_M WINO_R          output tile m and filter size r: (2, 5) or (3, 5); ALPHA = m + r - 1
 *   MIOPY_HALF             storage type of the input, filters and output (types.h); the workspace is float
 *   N IN_C IN_H IN_W       input tensor dims     OUT_C OUT_H OUT_W   output tensor dims
 *   PAD_H PAD_W            zero padding of the input (0 .. r-1)
 *   IS_N IS_C IS_H IS_W    element strides of the input tensor;  OS_N OS_C OS_H OS_W  of the output
 *   FS_BASE FS_OUT FS_IN FS_R FS_S   filter tap (o, i, r, s) is at FS_BASE + o*FS_OUT + i*FS_IN + r*FS_R + s*FS_S
 *   TILES_H TILES_W TILES  output tiles per plane along H and W, and in all (N * TILES_H * TILES_W)
 *   IN_CP OUT_CP TILES_P   padded reduction, output-channel and tile counts of the workspace arrays
 *   U_OFF V_OFF M_OFF      offsets in floats of U [ALPHA^2][IN_CP][OUT_CP], V [ALPHA^2][IN_CP][TILES_P]
 *                          and M [ALPHA^2][OUT_CP][TILES_P] in the workspace
 */
#include "types.h"
#include "epilogue.h"

#if !defined(WINO_M) || !defined(WINO_R)
#error "conv_winograd_large.cl needs WINO_M and WINO_R"
#endif
#define ALPHA (WINO_M + WINO_R - 1)
#define AA (ALPHA * ALPHA)

#if WINO_M == 2 && WINO_R == 5
/* points 0, 1, -1, 2, -2 and infinity */
__constant float WINO_G[6 * 5] = {
    1.0f / 4.0f, 0.0f, 0.0f, 0.0f, 0.0f,
    -1.0f / 6.0f, -1.0f / 6.0f, -1.0f / 6.0f, -1.0f / 6.0f, -1.0f / 6.0f,
    -1.0f / 6.0f, 1.0f / 6.0f, -1.0f / 6.0f, 1.0f / 6.0f, -1.0f / 6.0f,
    1.0f / 24.0f, 1.0f / 12.0f, 1.0f / 6.0f, 1.0f / 3.0f, 2.0f / 3.0f,
    1.0f / 24.0f, -1.0f / 12.0f, 1.0f / 6.0f, -1.0f / 3.0f, 2.0f / 3.0f,
    0.0f, 0.0f, 0.0f, 0.0f, 1.0f};
__constant float WINO_BT[6 * 6] = {
    4.0f, 0.0f, -5.0f, 0.0f, 1.0f, 0.0f,
    0.0f, -4.0f, -4.0f, 1.0f, 1.0f, 0.0f,
    0.0f, 4.0f, -4.0f, -1.0f, 1.0f, 0.0f,
    0.0f, -2.0f, -1.0f, 2.0f, 1.0f, 0.0f,
    0.0f, 2.0f, -1.0f, -2.0f, 1.0f, 0.0f,
    0.0f, 4.0f, 0.0f, -5.0f, 0.0f, 1.0f};
__constant float WINO_AT[2 * 6] = {
    1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f,
    0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 1.0f};

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

/* U[xi][i][o] = (G g G^T)[xi] for filter g = taps (o, i, :, :); one work-item per (o, i) of OUT_CP x IN_CP. */
__kernel void wino_filter_transform(__global const DATA_T* restrict w, __global float* restrict ws)
{
    const int o = get_global_id(0), i = get_global_id(1);
    float g[WINO_R * WINO_R], t[ALPHA * WINO_R], u[AA];
    const bool real = o < OUT_C && i < IN_C;
    #pragma unroll
    for (int r = 0; r < WINO_R; ++r)
        #pragma unroll
        for (int s = 0; s < WINO_R; ++s)
            g[r * WINO_R + s] = real ? (float)LOAD(w, FS_BASE + o * FS_OUT + i * FS_IN + r * FS_R + s * FS_S) : 0.0f;
    #pragma unroll
    for (int s = 0; s < WINO_R; ++s) APPLY(WINO_G, ALPHA, WINO_R, g + s, WINO_R, t + s, WINO_R)     /* t = G g */
    #pragma unroll
    for (int a = 0; a < ALPHA; ++a) APPLY(WINO_G, ALPHA, WINO_R, t + a * WINO_R, 1, u + a * ALPHA, 1) /* u = t G^T */
    __global float* dst = ws + U_OFF + i * OUT_CP + o;
    #pragma unroll
    for (int xi = 0; xi < AA; ++xi) dst[xi * (IN_CP * OUT_CP)] = u[xi];
}

/* V[xi][c][t] = (B^T d B)[xi] for the ALPHA x ALPHA input patch d of tile t, channel c (zero outside the
 * input); one work-item per (t, c) of TILES_P x IN_CP, tiles fastest so the stores coalesce. */
__kernel void wino_input_transform(__global const DATA_T* restrict in, __global float* restrict ws)
{
    const int tile = get_global_id(0), c = get_global_id(1);
    const int tw = tile % TILES_W, th = (tile / TILES_W) % TILES_H, n = tile / (TILES_W * TILES_H);
    const int h0 = th * WINO_M - PAD_H, w0 = tw * WINO_M - PAD_W;
    const bool real = tile < TILES && c < IN_C;
    const int base = n * IS_N + c * IS_C;
    float d[AA], t[AA], v[AA];
    #pragma unroll
    for (int a = 0; a < ALPHA; ++a)
        #pragma unroll
        for (int b = 0; b < ALPHA; ++b) {
            const int h = h0 + a, x = w0 + b;
            const bool inside = real && h >= 0 && h < IN_H && x >= 0 && x < IN_W;
            d[a * ALPHA + b] = inside ? (float)LOAD(in, base + h * IS_H + x * IS_W) : 0.0f;
        }
    #pragma unroll
    for (int b = 0; b < ALPHA; ++b) APPLY(WINO_BT, ALPHA, ALPHA, d + b, ALPHA, t + b, ALPHA)          /* t = B^T d */
    #pragma unroll
    for (int a = 0; a < ALPHA; ++a) APPLY(WINO_BT, ALPHA, ALPHA, t + a * ALPHA, 1, v + a * ALPHA, 1)  /* v = t B */
    __global float* dst = ws + V_OFF + c * TILES_P + tile;
    #pragma unroll
    for (int xi = 0; xi < AA; ++xi) dst[xi * (IN_CP * TILES_P)] = v[xi];
}

/* out[n][o][tile rows, cols] = (A^T M A) for the products of tile t, output channel o; one work-item per
 * (t, o) with t < TILES; edge tiles store only the part inside OUT_H x OUT_W. Applies the epilogue. */
__kernel void wino_output_transform(__global const float* restrict ws, __global DATA_T* restrict out
                                    MIOPY_EPILOGUE_PARAMS)
{
    const int tile = get_global_id(0), o = get_global_id(1);
    if (tile >= TILES) return;
    const int tw = tile % TILES_W, th = (tile / TILES_W) % TILES_H, n = tile / (TILES_W * TILES_H);
    __global const float* src = ws + M_OFF + o * TILES_P + tile;
    float m[AA], t[WINO_M * ALPHA], y[WINO_M * WINO_M];
    #pragma unroll
    for (int xi = 0; xi < AA; ++xi) m[xi] = src[xi * (OUT_CP * TILES_P)];
    #pragma unroll
    for (int b = 0; b < ALPHA; ++b) APPLY(WINO_AT, WINO_M, ALPHA, m + b, ALPHA, t + b, ALPHA)            /* t = A^T m */
    #pragma unroll
    for (int a = 0; a < WINO_M; ++a) APPLY(WINO_AT, WINO_M, ALPHA, t + a * ALPHA, 1, y + a * WINO_M, 1)  /* y = t A */
    #pragma unroll
    for (int a = 0; a < WINO_M; ++a)
        #pragma unroll
        for (int b = 0; b < WINO_M; ++b) {
            const int p = th * WINO_M + a, q = tw * WINO_M + b;
            const int oi = n * OS_N + o * OS_C + p * OS_H + q * OS_W;
            if (p < OUT_H && q < OUT_W)
                STORE(out, oi, MIOPY_EPILOGUE(y[a * WINO_M + b], o, p * OUT_W + q, oi));
        }
}
