/* The Winograd F(m x m, r x r) kernels shared by conv_winograd.cl (r = 3, hand-written transforms) and
 * conv_winograd_large.cl (r = 5, tabulated Toom-Cook matrices). The including file defines WINO_M, WINO_R
 * (as -D defines), ALPHA = m + r - 1, AA = ALPHA^2 and five one-dimensional transforms, each reading its
 * operand at stride si and writing at stride so:
 *     filter_1d       G   (ALPHA x r)      times r filter taps
 *     input_1d        B^T (ALPHA x ALPHA)  times ALPHA inputs
 *     output_1d       A^T (m x ALPHA)      times ALPHA products
 *     grad_output_1d  A   (ALPHA x m)      times m output gradients        (backward-weights)
 *     grad_filter_1d  G^T (r x ALPHA)      times ALPHA weight gradients    (backward-weights)
 *
 * Forward and backward-data (a forward convolution of dy with rotated, channel-swapped filters):
 *   wino_filter_transform  U[xi][i][o] = (G g G^T)[xi]
 *   wino_input_transform   V[xi] = (B^T d B)[xi] for each input patch and channel
 *   (conv_winograd_gemm.cl) M[xi][o][t] = sum_i U[xi][i][o] V[xi][i][t]
 *   wino_output_transform  y = A^T M A per tile, clipped at the edges, with the epilogue hook
 * Backward-weights (dU[xi][k][c] = sum_t (A dY_t A^T)[xi] (B^T d_t B)[xi]; dw = G^T dU G):
 *   wino_input_transform        V^T[xi][t][c] of x, with the forward's pads (V_CS = 1, V_TS = IN_CP)
 *   wino_grad_output_transform  M^T[xi][t][k] = (A dY A^T)[xi] of the m x m tile of dy (zero outside it)
 *                               (t: the tile's slot in a pass of TILES_P tiles)
 *   (conv_winograd_gemm.cl)     partial dU[s][xi][k][c] over the s-th chunk of the tiles, s < SPLIT
 *   wino_grad_filter_transform  dw[k][c] = G^T (fixed-order sum over s of dU[s]) G
 *
 * Defines (all ints):
 *   N IN_C IN_H IN_W       input tensor dims     OUT_C OUT_H OUT_W   output tensor dims
 *   PAD_H PAD_W            zero padding of the input (0 .. r-1)
 *   IS_N IS_C IS_H IS_W    element strides of the input tensor;  OS_N OS_C OS_H OS_W  of the output
 *   FS_BASE FS_OUT FS_IN FS_R FS_S   filter tap (o, i, r, s) is at FS_BASE + o*FS_OUT + i*FS_IN + r*FS_R + s*FS_S
 *   TILES_H TILES_W TILES  output tiles per plane along H and W, and in all (N * TILES_H * TILES_W)
 *   IN_CP OUT_CP TILES_P   padded input-channel, output-channel and tile counts of the workspace arrays
 *   U_OFF V_OFF M_OFF      offsets in floats of U [AA][IN_CP][OUT_CP], V and M in the workspace
 *   V_CS V_TS              element strides of V[xi] along channels and tiles (TILES_P, 1 forward)
 *   CHANNELS_FAST          0/1: the input transform runs over channels fastest, one NDRange axis of
 *                          IN_CP * TILES_P (stores of V^T coalesce), else over (tiles, channels)
 *   P_OFF                  backward-weights (its kernels exist only with it): offset of the partial dU
 *                          [split][AA][OUT_CP][IN_CP]
 *   SPLIT                  partial dU the filter-gradient transform adds (default 1)
 * Backward-weights runs the two transforms and the GEMM once per pass of TILES_P tiles (the kernel argument
 * first_tile: the pass's first), the GEMM adding each pass into the same partial dU.
 *   MIOPY_HALF             tensors hold half values (kernels/types.h); the workspace is float either way
 */
#include "types.h"
#include "epilogue.h"

#ifndef CHANNELS_FAST
#define CHANNELS_FAST 0
#endif
#ifdef P_OFF   /* backward-weights transforms a pass of TILES_P tiles from first_tile on */
#define PASS_PARAM , const int first_tile
#else
#define PASS_PARAM
#define first_tile 0
#endif

/* dst (OUT x OUT) = T src T^T for the IN x IN array src and the OUT x IN matrix T that f applies, through
 * tmp (OUT x IN): T times each column, then each row of the result times T^T. */
#define TRANSFORM_2D(f, src, IN, OUT, tmp, dst)                                         \
    _Pragma("unroll") for (int b_ = 0; b_ < (IN); ++b_) f((src) + b_, (IN), (tmp) + b_, (IN));   \
    _Pragma("unroll") for (int a_ = 0; a_ < (OUT); ++a_) f((tmp) + a_ * (IN), 1, (dst) + a_ * (OUT), 1);

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
            g[r * WINO_R + s] = real ? LOAD(w, FS_BASE + o * FS_OUT + i * FS_IN + r * FS_R + s * FS_S) : 0.0f;
    TRANSFORM_2D(filter_1d, g, WINO_R, ALPHA, t, u)                                 /* u = G g G^T */
    __global float* dst = ws + U_OFF + i * OUT_CP + o;
    #pragma unroll
    for (int xi = 0; xi < AA; ++xi) dst[xi * (IN_CP * OUT_CP)] = u[xi];
}

/* V[xi] at (c, t) = (B^T d B)[xi] for the ALPHA x ALPHA input patch d of tile t, channel c (zero outside
 * the input); one work-item per (t, c) of TILES_P x IN_CP. */
__kernel void wino_input_transform(__global const DATA_T* restrict in, __global float* restrict ws PASS_PARAM)
{
#if CHANNELS_FAST   /* one axis, channels fastest: IN_CP x TILES_P work-items */
    const int c = get_global_id(0) % IN_CP, slot = get_global_id(0) / IN_CP;
#else
    const int slot = get_global_id(0), c = get_global_id(1);
#endif
    const int tile = first_tile + slot;   /* slot: the tile's place in the workspace */
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
            d[a * ALPHA + b] = inside ? LOAD(in, base + h * IS_H + x * IS_W) : 0.0f;
        }
    TRANSFORM_2D(input_1d, d, ALPHA, ALPHA, t, v)                                   /* v = B^T d B */
    __global float* dst = ws + V_OFF + c * V_CS + slot * V_TS;
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
    TRANSFORM_2D(output_1d, m, ALPHA, WINO_M, t, y)                                 /* y = A^T m A */
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

#ifdef P_OFF
#ifndef SPLIT
#define SPLIT 1
#endif
/* Backward-weights: M^T[xi][t][k] = (A dY A^T)[xi] for the m x m tile t of dy (channel k; zero outside
 * OUT_H x OUT_W and in the padding); one work-item per (k, t) of OUT_CP x TILES_P on one NDRange axis,
 * channels fastest so the stores coalesce. */
__kernel void wino_grad_output_transform(__global const DATA_T* restrict dy, __global float* restrict ws PASS_PARAM)
{
    const int k = get_global_id(0) % OUT_CP, slot = get_global_id(0) / OUT_CP, tile = first_tile + slot;
    const int tw = tile % TILES_W, th = (tile / TILES_W) % TILES_H, n = tile / (TILES_W * TILES_H);
    const bool real = tile < TILES && k < OUT_C;
    const int base = n * OS_N + k * OS_C;
    float d[WINO_M * WINO_M], t[ALPHA * WINO_M], m[AA];
    #pragma unroll
    for (int a = 0; a < WINO_M; ++a)
        #pragma unroll
        for (int b = 0; b < WINO_M; ++b) {
            const int p = th * WINO_M + a, q = tw * WINO_M + b;
            d[a * WINO_M + b] = real && p < OUT_H && q < OUT_W ? LOAD(dy, base + p * OS_H + q * OS_W) : 0.0f;
        }
    TRANSFORM_2D(grad_output_1d, d, WINO_M, ALPHA, t, m)                            /* m = A d A^T */
    __global float* dst = ws + M_OFF + slot * OUT_CP + k;
    #pragma unroll
    for (int xi = 0; xi < AA; ++xi) dst[xi * (TILES_P * OUT_CP)] = m[xi];
}

/* Backward-weights: dw taps (k, c, :, :) = G^T u G with u[xi] the SPLIT partial dU[s][xi][k][c] added in a
 * fixed order, compensated (deterministic, as split_reduce.cl); one work-item
 * per (c, k) of IN_C x OUT_C (rounded up to the work-group), input channels fastest so the loads coalesce. */
__kernel void wino_grad_filter_transform(__global const float* restrict ws, __global DATA_T* restrict dw)
{
    const int c = get_global_id(0), k = get_global_id(1);
    if (c >= IN_C || k >= OUT_C) return;
    __global const float* src = ws + P_OFF + k * IN_CP + c;
    float u[AA], low[AA], t[WINO_R * ALPHA], g[WINO_R * WINO_R];
    #pragma unroll
    for (int xi = 0; xi < AA; ++xi) u[xi] = low[xi] = 0.0f;
    /* The split loop stays rolled: unrolled inside the xi loop (AA x SPLIT loads) NVIDIA's compiler took 5 s
     * over F(4,3) with SPLIT 64 (a cold find's slowest build). Each u[xi] adds its partials in order,
     * compensated (types.h). */
    #pragma unroll 1
    for (int s = 0; s < SPLIT; ++s) {
        #pragma unroll
        for (int xi = 0; xi < AA; ++xi) {
            low[xi] += src[(s * AA + xi) * (OUT_CP * IN_CP)];
            COMPENSATED_ADD(float, u[xi], low[xi])
        }
    }
    #pragma unroll
    for (int xi = 0; xi < AA; ++xi) u[xi] += low[xi];
    TRANSFORM_2D(grad_filter_1d, u, ALPHA, WINO_R, t, g)                            /* g = G^T u G */
    #pragma unroll
    for (int r = 0; r < WINO_R; ++r)
        #pragma unroll
        for (int s = 0; s < WINO_R; ++s)
            STORE(dw, FS_BASE + k * FS_OUT + c * FS_IN + r * FS_R + s * FS_S, g[r * WINO_R + s]);
}
#endif
