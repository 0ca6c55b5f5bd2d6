/* Depthwise convolution (groups == C, K = MULT * C output channels, MULT >= 1): per-channel planes, no
 * GEMM structure, in all three directions.
 *
 * Forward and backward-data (kernel dw_tile): each work-item computes a TILE_H x TILE_W tile of consecutive
 * rows and columns of one output plane in registers; a work-group covers a (WG_Y*TILE_H) x (WG_X*TILE_W)
 * block of that plane. Its input window (x forward, dy backward-data) is staged zero-padded in local memory
 * (USE_LOCAL 1) or read from global memory with bounds checks (USE_LOCAL 0). The plane's R x S filter
 * is held in registers. Forward output channel k reads input channel k / MULT; backward-data channel c
 * sums over its MULT output channels c*MULT + j.
 *
 * Backward-weights (kernels dw_wgrad, then dw_wgrad_reduce when SPLIT > 1): dw[k,0,r,s] is a sum over the
 * N*P rows and Q columns of dy's plane k. SPLIT work-groups per channel each take a chunk of ROWS_PER_SPLIT
 * rows; every work-item sums its share of (row, TILE_W columns) steps into R*S registers, the work-group
 * adds its work-items' sums in a fixed tree through local memory, and dw_wgrad_reduce adds the SPLIT
 * partial sums in order (workspace: SPLIT * K * R * S floats). Deterministic; every stored value is a sum
 * of short sums, so rounding grows with the log of the reduction length, not the length.
 *
 * Defines (all ints):
 *   N C H W K R S P Q G PAD_H PAD_W STRIDE_H STRIDE_W DIL_H DIL_W   problem (see conv_naive.cl); G == C
 *   XS_N XS_C XS_H XS_W, WS_K WS_C WS_R WS_S, YS_N YS_K YS_P YS_Q   element strides of x, w, y
 *   MIOPY_HALF     storage type of x, w, y (types.h); arithmetic and workspace are float
 *   DIRECTION      1 forward, 2 backward-data, 4 backward-weights
 *   TILE_H TILE_W  forward / backward-data: outputs per work-item; backward-weights: TILE_H is 1 and TILE_W
 *                  the columns of dy one step reads
 *   WG_X WG_Y      work-group shape (backward-weights: WG_X * WG_Y work-items in one dimension, a power of 2)
 *   USE_LOCAL      forward / backward-data: stage the input window in local memory
 *   SPLIT ROWS_PER_SPLIT   backward-weights: work-groups per channel, rows (n, p) each sums
 */
#include "types.h"
#include "epilogue.h"

#if !defined(DIRECTION) || !defined(TILE_H) || !defined(TILE_W) || !defined(WG_X) || !defined(WG_Y)
#error "conv_depthwise.cl needs DIRECTION, TILE_H, TILE_W, WG_X and WG_Y"
#endif
#if G != C || K % C != 0
#error "depthwise: G must equal C and K be a multiple of C"
#endif

#define MULT (K / C)
#define RS (R * S)
#define WG_SIZE (WG_X * WG_Y)
#define X_AT(n, c, h, w) ((n) * XS_N + (c) * XS_C + (h) * XS_H + (w) * XS_W)
#define W_AT(k, r, s) ((k) * WS_K + (r) * WS_R + (s) * WS_S)
#define Y_AT(n, k, p, q) ((n) * YS_N + (k) * YS_K + (p) * YS_P + (q) * YS_Q)

#if DIRECTION != 4
/* ---------------------------------------------------------------- forward and backward-data: dw_tile */
#if DIRECTION == 1
#define OUT_H P
#define OUT_W Q
#define IN_H H
#define IN_W W
#define IN_SH XS_H
#define IN_SW XS_W
#define PLANES K
#define STEPS 1
#define X_CONST const
#define Y_CONST
#define SRC x
/* rows / columns of input one block reads */
#define SPAN_H ((WG_Y * TILE_H - 1) * STRIDE_H + (R - 1) * DIL_H + 1)
#define SPAN_W ((WG_X * TILE_W - 1) * STRIDE_W + (S - 1) * DIL_W + 1)
#elif DIRECTION == 2
#define OUT_H H
#define OUT_W W
#define IN_H P
#define IN_W Q
#define IN_SH YS_P
#define IN_SW YS_Q
#define PLANES C
#define STEPS MULT
#define X_CONST
#define Y_CONST const
#define SRC y
#define SPAN_H ((WG_Y * TILE_H - 1 + (R - 1) * DIL_H) / STRIDE_H + 2)
#define SPAN_W ((WG_X * TILE_W - 1 + (S - 1) * DIL_W) / STRIDE_W + 2)
#else
#error "DIRECTION must be 1, 2 or 4"
#endif

#define BLK_H (WG_Y * TILE_H)
#define BLK_W (WG_X * TILE_W)
#define TILES_X ((OUT_W + BLK_W - 1) / BLK_W)
#define L_W (SPAN_W + 1)   /* padded local row */

inline int floor_div(const int a, const int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

#if USE_LOCAL
#define IN(src, base, ih, iw) win[((ih) - ih_blk) * L_W + (iw) - iw_blk]
#else
#define IN(src, base, ih, iw) \
    (((unsigned)(ih) < (unsigned)IN_H && (unsigned)(iw) < (unsigned)IN_W) ? \
     (float)LOAD(src, (base) + (ih) * IN_SH + (iw) * IN_SW) : 0.0f)
#endif

__kernel __attribute__((reqd_work_group_size(WG_X, WG_Y, 1)))
void dw_tile(__global X_CONST DATA_T* restrict x, __global const DATA_T* restrict w,
             __global Y_CONST DATA_T* restrict y MIOPY_EPILOGUE_PARAMS)
{
    const int plane = get_group_id(0) / TILES_X;    /* n * PLANES + channel */
    const int n = plane / PLANES, ch = plane % PLANES;
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int oh_blk = get_group_id(1) * BLK_H, ow_blk = (get_group_id(0) % TILES_X) * BLK_W;
    const int oh0 = oh_blk + ly * TILE_H, ow0 = ow_blk + lx * TILE_W;
#if DIRECTION == 1
    const int ih_blk = oh_blk * STRIDE_H - PAD_H, iw_blk = ow_blk * STRIDE_W - PAD_W;
#else
    const int ih_blk = floor_div(oh_blk + PAD_H - (R - 1) * DIL_H, STRIDE_H);
    const int iw_blk = floor_div(ow_blk + PAD_W - (S - 1) * DIL_W, STRIDE_W);
#endif
#if USE_LOCAL
    __local float win[SPAN_H * L_W];
#endif
    float acc[TILE_H][TILE_W];
    #pragma unroll
    for (int th = 0; th < TILE_H; ++th)
        #pragma unroll
        for (int tw = 0; tw < TILE_W; ++tw) acc[th][tw] = 0.0f;

    for (int j = 0; j < STEPS; ++j) {
#if DIRECTION == 1
        const int k = ch, base = X_AT(n, ch / MULT, 0, 0);
#else
        const int k = ch * MULT + j, base = Y_AT(n, k, 0, 0);
#endif
        float wr[RS];
        #pragma unroll
        for (int r = 0; r < R; ++r)
            #pragma unroll
            for (int s = 0; s < S; ++s) wr[r * S + s] = LOAD(w, W_AT(k, r, s));
#if USE_LOCAL
        if (j > 0) barrier(CLK_LOCAL_MEM_FENCE);
        for (int i = ly * WG_X + lx; i < SPAN_H * SPAN_W; i += WG_SIZE) {
            const int row = i / SPAN_W, col = i % SPAN_W;
            const int ih = ih_blk + row, iw = iw_blk + col;
            win[row * L_W + col] = ((unsigned)ih < (unsigned)IN_H && (unsigned)iw < (unsigned)IN_W)
                                   ? (float)LOAD(SRC, base + ih * IN_SH + iw * IN_SW) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        #pragma unroll
        for (int th = 0; th < TILE_H; ++th)
            #pragma unroll
            for (int r = 0; r < R; ++r)
                #pragma unroll
                for (int tw = 0; tw < TILE_W; ++tw)
                    #pragma unroll
                    for (int s = 0; s < S; ++s) {
#if DIRECTION == 1
                        const int ih = (oh0 + th) * STRIDE_H - PAD_H + r * DIL_H;
                        const int iw = (ow0 + tw) * STRIDE_W - PAD_W + s * DIL_W;
                        acc[th][tw] = mad(IN(SRC, base, ih, iw), wr[r * S + s], acc[th][tw]);
#else
                        const int nh = oh0 + th + PAD_H - r * DIL_H, nw = ow0 + tw + PAD_W - s * DIL_W;
                        if (nh % STRIDE_H == 0 && nw % STRIDE_W == 0)
                            acc[th][tw] = mad(IN(SRC, base, nh / STRIDE_H, nw / STRIDE_W), wr[r * S + s],
                                              acc[th][tw]);
#endif
                    }
    }
    #pragma unroll
    for (int th = 0; th < TILE_H; ++th)
        #pragma unroll
        for (int tw = 0; tw < TILE_W; ++tw) {
            const int oh = oh0 + th, ow = ow0 + tw;
            if (oh < OUT_H && ow < OUT_W) {
#if DIRECTION == 1
                const int yi = Y_AT(n, ch, oh, ow);
                STORE(y, yi, MIOPY_EPILOGUE(acc[th][tw], ch, oh * Q + ow, yi));
#else
                STORE(x, X_AT(n, ch, oh, ow), acc[th][tw]);
#endif
            }
        }
}

#else
/* ---------------------------------------------------------------- backward-weights: dw_wgrad (+ reduce) */
#if !defined(SPLIT) || !defined(ROWS_PER_SPLIT)
#error "backward-weights needs SPLIT and ROWS_PER_SPLIT"
#endif
#if (WG_SIZE & (WG_SIZE - 1)) != 0
#error "WG_X * WG_Y must be a power of two"
#endif
#define ROWS (N * P)
#define QBLKS ((Q + TILE_W - 1) / TILE_W)
#define SUM_ITEMS ((64 + TILE_W - 1) / TILE_W)

/* Group (k, split): sums of dy[n,k,p,q] * x[n, k/MULT, p*U - PAD + r*DIL, ...] over its chunk of rows. */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void dw_wgrad(__global const DATA_T* restrict x, __global DATA_T* restrict w,
              __global const DATA_T* restrict y, __global float* restrict partial)
{
    const int k = get_group_id(0) / SPLIT, split = get_group_id(0) % SPLIT;
    const int c = k / MULT, lid = get_local_id(0);
    const int row0 = split * ROWS_PER_SPLIT;
    const int rows = min(ROWS_PER_SPLIT, ROWS - row0);
    /* acc sums blocks of SUM_ITEMS items (TILE_W terms each) that join total with a compensated add
     * (types.h): a work-item's share of a long N*P*Q then rounds like a sum of about 64 terms */
    float acc[RS], total[RS];
    #pragma unroll
    for (int i = 0; i < RS; ++i) acc[i] = total[i] = 0.0f;
    int items = 0;
    for (int i = lid; i < rows * QBLKS; i += WG_SIZE) {
        const int row = row0 + i / QBLKS, q0 = (i % QBLKS) * TILE_W;
        const int n = row / P, p = row % P;
        float dy[TILE_W];
        #pragma unroll
        for (int t = 0; t < TILE_W; ++t) dy[t] = q0 + t < Q ? (float)LOAD(y, Y_AT(n, k, p, q0 + t)) : 0.0f;
        #pragma unroll
        for (int r = 0; r < R; ++r) {
            const int ih = p * STRIDE_H - PAD_H + r * DIL_H;
            if ((unsigned)ih >= (unsigned)H) continue;
            const int xrow = X_AT(n, c, ih, 0);
            #pragma unroll
            for (int s = 0; s < S; ++s)
                #pragma unroll
                for (int t = 0; t < TILE_W; ++t) {
                    const int iw = (q0 + t) * STRIDE_W - PAD_W + s * DIL_W;
                    if ((unsigned)iw < (unsigned)W)
                        acc[r * S + s] = mad(dy[t], (float)LOAD(x, xrow + iw * XS_W), acc[r * S + s]);
                }
        }
        if (++items == SUM_ITEMS) {
            items = 0;
            #pragma unroll
            for (int j = 0; j < RS; ++j) COMPENSATED_ADD(float, total[j], acc[j])
        }
    }
    #pragma unroll
    for (int j = 0; j < RS; ++j) acc[j] += total[j];
    __local float red[RS * WG_SIZE];
    #pragma unroll
    for (int i = 0; i < RS; ++i) red[i * WG_SIZE + lid] = acc[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = WG_SIZE / 2; step > 0; step >>= 1) {
        if (lid < step)
            for (int i = 0; i < RS; ++i) red[i * WG_SIZE + lid] += red[i * WG_SIZE + lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = lid; i < RS; i += WG_SIZE) {
#if SPLIT == 1
        STORE(w, W_AT(k, i / S, i % S), red[i * WG_SIZE]);
#else
        partial[(split * K + k) * RS + i] = red[i * WG_SIZE];
#endif
    }
}

/* dw = the SPLIT partial sums of dw_wgrad, added in split order (deterministic). */
__kernel void dw_wgrad_reduce(__global const float* restrict partial, __global DATA_T* restrict w)
{
    const int i = get_global_id(0);
    if (i >= K * RS) return;
    float sum = 0.0f, low = 0.0f;   /* compensated, in split order (types.h) */
    for (int s = 0; s < SPLIT; ++s) {
        low += partial[s * K * RS + i];
        COMPENSATED_ADD(float, sum, low)
    }
    sum += low;
    const int k = i / RS, rs = i % RS;
    STORE(w, W_AT(k, rs / S, rs % S), sum);
}
#endif
