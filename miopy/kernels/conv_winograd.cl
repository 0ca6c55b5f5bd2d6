/* Winograd F(m x m, 3 x 3) transforms: filters into U, input tiles into V, products M back to output.
 *
 * The convolution computed is always a forward, stride-1, 3x3 cross-correlation of an input tensor
 * (N, IN_C, IN_H, IN_W) into an output tensor (N, OUT_C, OUT_H, OUT_W). Backward-data is that with
 * dy as input, dx as output, the filters rotated 180 degrees and their two channel axes swapped: the
 * filter addressing below expresses both (no host work). Between the input and output transforms a
 * batched GEMM (winograd_gemm.cl) computes, for each of the ALPHA*ALPHA transformed positions xi,
 *     M[xi][o][t] = sum_i U[xi][i][o] * V[xi][i][t]
 * All three live in the workspace, padded so the GEMM needs no bounds checks: the reduction axis to
 * IN_CP, output channels to OUT_CP and tiles to TILES_P. The transforms write zeros into the padding.
 *
 * Defines (all ints):
 *   WINO_M                 output tile size m: 2 for F(2x2,3x3), 4 for F(4x4,3x3); ALPHA = m + 2
 *   N IN_C IN_H IN_W       input tensor dims     OUT_C OUT_H OUT_W   output tensor dims
 *   PAD_H PAD_W            zero padding of the input (0..2)
 *   IS_N IS_C IS_H IS_W    element strides of the input tensor;  OS_N OS_C OS_H OS_W  of the output
 *   FS_BASE FS_OUT FS_IN FS_R FS_S   filter tap (o, i, r, s) is at FS_BASE + o*FS_OUT + i*FS_IN + r*FS_R + s*FS_S
 *   TILES_H TILES_W TILES  output tiles per plane along H and W, and in all (N * TILES_H * TILES_W)
 *   IN_CP OUT_CP TILES_P   padded reduction, output-channel and tile counts of the workspace arrays
 *   U_OFF V_OFF M_OFF      offsets in floats of U [ALPHA^2][IN_CP][OUT_CP], V [ALPHA^2][IN_CP][TILES_P]
 *                          and M [ALPHA^2][OUT_CP][TILES_P] in the workspace
 *   MIOPY_HALF             filters, input and output hold half values (kernels/types.h); the workspace is
 *                          float either way
 */
#include "types.h"
#include "epilogue.h"

#define ALPHA (WINO_M + 2)
#define AA (ALPHA * ALPHA)

/* One-dimensional transforms; each reads its operand at stride si and writes at stride so. F(2,3) is
 * Lavin & Gray's, "Fast Algorithms for Convolutional Neural Networks" (2016). */
#if WINO_M == 2
/* G (4x3) times a column of 3 filter taps */
void filter_1d(const float* g, int si, float* o, int so)
{
    o[0] = g[0];
    o[so] = 0.5f * (g[0] + g[si] + g[2 * si]);
    o[2 * so] = 0.5f * (g[0] - g[si] + g[2 * si]);
    o[3 * so] = g[2 * si];
}

/* B^T (4x4) times a column of 4 inputs */
void input_1d(const float* d, int si, float* o, int so)
{
    o[0] = d[0] - d[2 * si];
    o[so] = d[si] + d[2 * si];
    o[2 * so] = d[2 * si] - d[si];
    o[3 * so] = d[si] - d[3 * si];
}

/* A^T (2x4) times a column of 4 products */
void output_1d(const float* m, int si, float* o, int so)
{
    o[0] = m[0] + m[si] + m[2 * si];
    o[so] = m[si] - m[2 * si] - m[3 * si];
}
#elif WINO_M == 4
/* F(4,3) from the points 0, 1, -1, 1/2, -2 and infinity rather than Lavin's 0, +-1, +-2: B^T is exact in
 * binary and the fp32 error is about half (Barabasz et al., "Error analysis and improving the accuracy of
 * Winograd convolution for deep neural networks", 2020). */

/* G (6x3) times a column of 3 filter taps */
void filter_1d(const float* g, int si, float* o, int so)
{
    const float g0 = g[0], g1 = g[si], g2 = g[2 * si];
    o[0] = g0;
    o[so] = (1.0f / 3.0f) * (g0 + g1 + g2);
    o[2 * so] = (1.0f / 3.0f) * (g1 - g0 - g2);
    o[3 * so] = (-4.0f / 15.0f) * (4.0f * g0 + 2.0f * g1 + g2);
    o[4 * so] = (1.0f / 15.0f) * (g0 - 2.0f * g1 + 4.0f * g2);
    o[5 * so] = g2;
}

/* B^T (6x6) times a column of 6 inputs */
void input_1d(const float* d, int si, float* o, int so)
{
    const float d0 = d[0], d1 = d[si], d2 = d[2 * si], d3 = d[3 * si], d4 = d[4 * si], d5 = d[5 * si];
    o[0] = d0 - 1.5f * d1 - 2.0f * d2 + 1.5f * d3 + d4;
    o[so] = -d1 + 0.5f * d2 + 2.5f * d3 + d4;
    o[2 * so] = d1 - 2.5f * d2 + 0.5f * d3 + d4;
    o[3 * so] = 2.0f * (d3 - d1) - d2 + d4;
    o[4 * so] = 0.5f * (d1 - d3) - d2 + d4;
    o[5 * so] = d1 - 1.5f * d2 - 2.0f * d3 + 1.5f * d4 + d5;
}

/* A^T (4x6) times a column of 6 products */
void output_1d(const float* m, int si, float* o, int so)
{
    const float m0 = m[0], m1 = m[si], m2 = m[2 * si], m3 = m[3 * si], m4 = m[4 * si], m5 = m[5 * si];
    const float sum12 = m1 + m2, dif12 = m1 - m2;
    o[0] = m0 + sum12 + m3 + m4;
    o[so] = dif12 + 0.5f * m3 - 2.0f * m4;
    o[2 * so] = sum12 + 0.25f * m3 + 4.0f * m4;
    o[3 * so] = dif12 + 0.125f * m3 - 8.0f * m4 + m5;
}
#else
#error "WINO_M must be 2 or 4"
#endif

/* U[xi][i][o] = (G g G^T)[xi] for filter g = taps (o, i, :, :); one work-item per (o, i) of OUT_CP x IN_CP. */
__kernel void wino_filter_transform(__global const DATA_T* restrict w, __global float* restrict ws)
{
    const int o = get_global_id(0), i = get_global_id(1);
    float g[9], t[ALPHA * 3], u[AA];
    const bool real = o < OUT_C && i < IN_C;
    #pragma unroll
    for (int r = 0; r < 3; ++r)
        #pragma unroll
        for (int s = 0; s < 3; ++s)
            g[r * 3 + s] = real ? LOAD(w, FS_BASE + o * FS_OUT + i * FS_IN + r * FS_R + s * FS_S) : 0.0f;
    #pragma unroll
    for (int s = 0; s < 3; ++s) filter_1d(g + s, 3, t + s, 3);              /* t = G g */
    #pragma unroll
    for (int a = 0; a < ALPHA; ++a) filter_1d(t + a * 3, 1, u + a * ALPHA, 1); /* u = t G^T */
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
    __global const DATA_T* src = in + n * IS_N + c * IS_C;
    float d[AA], t[AA], v[AA];
    #pragma unroll
    for (int a = 0; a < ALPHA; ++a)
        #pragma unroll
        for (int b = 0; b < ALPHA; ++b) {
            const int h = h0 + a, x = w0 + b;
            const bool inside = real && h >= 0 && h < IN_H && x >= 0 && x < IN_W;
            d[a * ALPHA + b] = inside ? LOAD(src, h * IS_H + x * IS_W) : 0.0f;
        }
    #pragma unroll
    for (int b = 0; b < ALPHA; ++b) input_1d(d + b, ALPHA, t + b, ALPHA);              /* t = B^T d */
    #pragma unroll
    for (int a = 0; a < ALPHA; ++a) input_1d(t + a * ALPHA, 1, v + a * ALPHA, 1);      /* v = t B */
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
    for (int b = 0; b < ALPHA; ++b) output_1d(m + b, ALPHA, t + b, ALPHA);             /* t = A^T m */
    #pragma unroll
    for (int a = 0; a < WINO_M; ++a) output_1d(t + a * ALPHA, 1, y + a * WINO_M, 1);   /* y = t A */
    __global DATA_T* dst = out + n * OS_N + o * OS_C;
    #pragma unroll
    for (int a = 0; a < WINO_M; ++a)
        #pragma unroll
        for (int b = 0; b < WINO_M; ++b) {
            const int p = th * WINO_M + a, q = tw * WINO_M + b;
            if (p < OUT_H && q < OUT_W)
                STORE(dst, p * OS_H + q * OS_W, MIOPY_EPILOGUE(y[a * WINO_M + b], o, p * OUT_W + q,
                                                               n * OS_N + o * OS_C + p * OS_H + q * OS_W));
        }
}
