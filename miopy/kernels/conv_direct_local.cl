/* Direct convolution as an implicit GEMM through local memory (Tsai et al., "Performance-portable
 * autotuning of OpenCL kernels for convolutional layers"), in all three directions, no im2col buffer.
 *
 * Per group g the output is the GEMM of implicit_gemm.h, out[m][col] = sum_kk A[m][kk] * B[kk][col] (A = w,
 * B = x gathered forward; A = w, B = dy gathered backward-data; A = dy, B = x gathered backward-weights), with
 * its offsets, taps and slice fetch pattern. A work-group of M_DIM x N_DIM work-items computes an
 * M_BLK x N_BLK tile; each work-item keeps M_PER x N_PER sums in registers. Each step stages a K_BLK
 * slice of A and B in local memory (fetched into registers one step ahead); the inner product loop has
 * no bounds checks: edges and the inner dimension's remainder are zero-filled when slices are fetched.
 *
 * Defines (all ints):
 *   N C H W K R S P Q G PAD_H PAD_W STRIDE_H STRIDE_W DIL_H DIL_W   problem (see conv_naive.cl)
 *   XS_N XS_C XS_H XS_W, WS_K WS_C WS_R WS_S, YS_N YS_K YS_P YS_Q   element strides of x, w, y
 *   MIOPY_HALF    1: x, w, y hold half values (kernels/types.h); tiles, sums and split partials are float
 *   DIRECTION     1 forward, 2 backward-data, 4 backward-weights
 *   M_DIM N_DIM   work-group shape: local size (N_DIM, M_DIM)
 *   M_PER N_PER   sums per work-item along m and col
 *   K_BLK         inner-dimension slice staged per step
 *   VEC           width of local-memory reads (1, 2 or 4); a work-item's rows are VEC-wide runs
 *                 strided by M_DIM*VEC (columns likewise), so neighbouring work-items read neighbouring runs
 *   DOUBLE_BUF    1: two local buffers and one barrier per step; 0: one buffer and two barriers
 *   CHANNEL_BLOCKS  forward / backward-data: 1 steps over (block of K_BLK channels, one tap), 0 over the
 *                 flat (channel, tap) index (see inner_at)
 *   SPLIT         backward-weights: partial sums over SPLIT chunks of N*P*Q of SPLIT_CHUNK each
 *                 (a multiple of K_BLK), written to `partial` and summed in order by reduce_splits
 *   SUM_STEPS     backward-weights: slices summed in registers before they join a second register tile (the
 *                 running total, compensated: types.h); 0: one tile (the chunks are short enough to sum directly)
 */
#include "types.h"
#include "epilogue.h"

#define M_BLK (M_DIM * M_PER)
#define N_BLK (N_DIM * N_PER)
#define THREADS (M_DIM * N_DIM)
#define A_LD (M_BLK + 4)           /* padded rows: transposed stores hit distinct banks */
#define B_LD (N_BLK + 4)
#define BUFS (DOUBLE_BUF ? 2 : 1)

#if DIRECTION == 1
#define GEMM_M KG
#define GEMM_N (N * P * Q)
#define GEMM_K (CG * RS)
#define X_CONST const
#define W_CONST const
#define Y_CONST
#define A_SRC w
#define B_SRC x
#define B_KK_FAST 0                /* neighbouring work-items fetch neighbouring (n, p, q): coalesced */
#elif DIRECTION == 2
#define GEMM_M CG
#define GEMM_N (N * H * W)
#define GEMM_K (KG * RS)
#define X_CONST
#define W_CONST const
#define Y_CONST const
#define A_SRC w
#define B_SRC y
#define B_KK_FAST 0
#else
#define GEMM_M KG
#define GEMM_N (CG * RS)
#define GEMM_K (N * P * Q)
#define X_CONST const
#define W_CONST
#define Y_CONST const
#define A_SRC y
#define B_SRC x
#define B_KK_FAST 1                /* neighbouring work-items fetch neighbouring (n, p, q): coalesced */
#endif
/* the offsets, taps and fetch pattern of implicit_gemm.h, which reads B_KK_FAST */
#include "implicit_gemm.h"

/* -- the inner dimension ------------------------------------------------------------------------------
 * Row `row` of slice `step`, as (chan, tap): forward chan = c, backward-data chan = k, tap = r*S + s;
 * backward-weights chan = the flat (n, p, q) index, tap unused. valid: inside the inner dimension. */
typedef struct { int chan, tap, valid; } inner_t;

inline inner_t make_inner(int chan, int tap, int valid)
{
    inner_t in;
    in.chan = chan, in.tap = tap, in.valid = valid;
    return in;
}

#if DIRECTION == 4
#define STEPS(k_begin, k_end) (((k_end) - (k_begin) + K_BLK - 1) / K_BLK)
inline inner_t inner_at(int step, int row, int k_begin, int k_end)
{
    const int kk = k_begin + step * K_BLK + row;
    return make_inner(kk, 0, kk < k_end);
}
#elif CHANNEL_BLOCKS
/* Steps run over blocks of K_BLK channels, each block over all R*S taps: a step has a single tap, so
 * its bounds check is shared by all rows. Channels past the last are zero. */
#define CHANS (DIRECTION == 1 ? CG : KG)
#define STEPS(k_begin, k_end) (((CHANS + K_BLK - 1) / K_BLK) * RS)
inline inner_t inner_at(int step, int row, int k_begin, int k_end)
{
    const int block = (int)((uint)step / RS), chan = block * K_BLK + row;
    return make_inner(chan, step - block * RS, CHANS % K_BLK == 0 || chan < CHANS);
}
#else
/* Steps run over the flat (chan, tap) index, chan-major. */
#define STEPS(k_begin, k_end) ((GEMM_K + K_BLK - 1) / K_BLK)
inline inner_t inner_at(int step, int row, int k_begin, int k_end)
{
    const int kk = step * K_BLK + row, chan = (int)((uint)kk / RS);
    return make_inner(chan, kk - chan * RS, GEMM_K % K_BLK == 0 || kk < GEMM_K);
}
#endif

/* A tap of the gathered operand B: an element offset and the (h, w) coordinates it adds. The element of
 * B at (row, col) is at col.off + row.off, at image position (col.h + row.h, col.w + row.w). */
typedef struct { int off, h, w; } tap_t;

inline tap_t make_tap(int off, int h, int w)
{
    tap_t tap;
    tap.off = off, tap.h = h, tap.w = w;
    return tap;
}

/* -- operand addressing, per direction --------------------------------------------------------------- */
#if DIRECTION == 1
/* A[m][c, r, s] = w[g*KG + m][c][r][s] */
inline int a_col(int g, int m) { return (g * KG + m) * WS_K; }
inline int a_row(inner_t in) { return W_AT(0, in.chan, TAP_R(in.tap), TAP_S(in.tap)); }
/* B[c, r, s][n, p, q] = x[n][g*CG + c][p*U - PAD_H + r*DIL_H][q*V - PAD_W + s*DIL_W] */
inline tap_t b_col(int g, int col)
{
    const int n = col / (P * Q), pq = col % (P * Q);
    const int h = (pq / Q) * STRIDE_H - PAD_H, w = (pq % Q) * STRIDE_W - PAD_W;
    return make_tap(X_AT(n, g * CG, h, w), col < GEMM_N ? h : OFF_IMAGE, w);
}
inline tap_t b_row(inner_t in)
{
    const int dh = TAP_R(in.tap) * DIL_H, dw = TAP_S(in.tap) * DIL_W;
    return make_tap(X_AT(0, in.chan, dh, dw), dh, dw);
}
inline float b_load(__global const DATA_T* restrict b, tap_t row, tap_t col)
{
    const int h = col.h + row.h, w = col.w + row.w;
    return ((uint)h < H && (uint)w < W) ? LOAD(b, col.off + row.off) : 0.0f;
}
#elif DIRECTION == 2
/* A[m][k, r, s] = w[g*KG + k][m][r][s] */
inline int a_col(int g, int m) { return W_AT(g * KG, m, 0, 0); }
inline int a_row(inner_t in) { return W_AT(in.chan, 0, TAP_R(in.tap), TAP_S(in.tap)); }
/* B[k, r, s][n, h, w] = dy[n][g*KG + k][(h + PAD_H - r*DIL_H) / U][(w + PAD_W - s*DIL_W) / V] where that
 * divides exactly and lands in the output, else 0 */
inline tap_t b_col(int g, int col)
{
    const int n = col / (H * W), hw = col % (H * W);
    return make_tap(Y_AT(n, g * KG, 0, 0), col < GEMM_N ? hw / W + PAD_H : OFF_IMAGE, hw % W + PAD_W);
}
inline tap_t b_row(inner_t in)
{
    return make_tap(Y_AT(0, in.chan, 0, 0), -TAP_R(in.tap) * DIL_H, -TAP_S(in.tap) * DIL_W);
}
inline float b_load(__global const DATA_T* restrict b, tap_t row, tap_t col)
{
    const uint ph = col.h + row.h, qw = col.w + row.w;   /* negative: huge, so outside */
    const bool inside = ph < P * STRIDE_H && qw < Q * STRIDE_W && ph % STRIDE_H == 0 && qw % STRIDE_W == 0;
    return inside ? LOAD(b, col.off + row.off + Y_AT(0, 0, (int)(ph / STRIDE_H), (int)(qw / STRIDE_W))) : 0.0f;
}
#else
/* A[m][n, p, q] = dy[n][g*KG + m][p][q] */
inline int a_col(int g, int m) { return (g * KG + m) * YS_K; }
inline int a_row(inner_t in)
{
    const int n = (int)((uint)in.chan / (P * Q)), pq = in.chan - n * (P * Q);
    return Y_AT(n, 0, pq / Q, pq % Q);
}
/* B[n, p, q][c, r, s] = x[n][g*CG + c][p*U - PAD_H + r*DIL_H][q*V - PAD_W + s*DIL_W] */
inline tap_t b_col(int g, int col)
{
    const int c = col / RS, rs = col % RS;
    const int h = (rs / S) * DIL_H - PAD_H, w = (rs % S) * DIL_W - PAD_W;
    return make_tap(X_AT(0, g * CG + c, h, w), col < GEMM_N ? h : OFF_IMAGE, w);
}
inline tap_t b_row(inner_t in)
{
    const int n = (int)((uint)in.chan / (P * Q)), pq = in.chan - n * (P * Q);
    const int h = (int)((uint)pq / Q) * STRIDE_H, w = (int)((uint)pq % Q) * STRIDE_W;
    return make_tap(X_AT(n, 0, h, w), h, w);
}
inline float b_load(__global const DATA_T* restrict b, tap_t row, tap_t col)
{
    const int h = col.h + row.h, w = col.w + row.w;
    return ((uint)h < H && (uint)w < W) ? LOAD(b, col.off + row.off) : 0.0f;
}
#endif

/* -- slice fetch (global -> registers) and stage (registers -> local) ---------------------------------- */
/* Fetch slice `step` into registers. a_cols[j] is an A column's offset, or -1 past the edge; rows past
 * the inner dimension read zero (one check per row, none per element for B). */
inline void fetch_a(__global const DATA_T* restrict a, const int* a_cols, float* reg, int t, int step,
                    int k_begin, int k_end)
{
    #pragma unroll
    for (int i = 0; i < A_NKK; ++i) {
        const inner_t in = inner_at(step, A_T_KK + i * A_KK_STEP, k_begin, k_end);
        const int row = a_row(in);
        #pragma unroll
        for (int j = 0; j < A_NIDX; ++j)
            reg[i * A_NIDX + j] = (a_cols[j] >= 0 && in.valid) ? LOAD(a, a_cols[j] + row) : 0.0f;
    }
}

inline void fetch_b(__global const DATA_T* restrict b, const tap_t* b_cols, float* reg, int t, int step,
                    int k_begin, int k_end)
{
    #pragma unroll
    for (int i = 0; i < B_NKK; ++i) {
        const inner_t in = inner_at(step, B_T_KK + i * B_KK_STEP, k_begin, k_end);
        tap_t row = b_row(in);
        row.h = in.valid ? row.h : OFF_IMAGE;
        #pragma unroll
        for (int j = 0; j < B_NIDX; ++j)
            reg[i * B_NIDX + j] = b_load(b, row, b_cols[j]);
    }
}

inline void stage(__local float* a_tile, __local float* b_tile, const float* a_reg, const float* b_reg, int t)
{
    #pragma unroll
    for (int i = 0; i < A_NKK; ++i)
        #pragma unroll
        for (int j = 0; j < A_NIDX; ++j)
            a_tile[(A_T_KK + i * A_KK_STEP) * A_LD + A_T_IDX + j * A_IDX_STEP] = a_reg[i * A_NIDX + j];
    #pragma unroll
    for (int i = 0; i < B_NKK; ++i)
        #pragma unroll
        for (int j = 0; j < B_NIDX; ++j)
            b_tile[(B_T_KK + i * B_KK_STEP) * B_LD + B_T_IDX + j * B_IDX_STEP] = b_reg[i * B_NIDX + j];
}

/* -- the inner product over one staged slice --------------------------------------------------------- */
#if VEC == 4
#define READ_RUN(dst, src) do { const float4 v_ = *(__local const float4*)(src); \
    (dst)[0] = v_.x; (dst)[1] = v_.y; (dst)[2] = v_.z; (dst)[3] = v_.w; } while (0)
#elif VEC == 2
#define READ_RUN(dst, src) do { const float2 v_ = *(__local const float2*)(src); \
    (dst)[0] = v_.x; (dst)[1] = v_.y; } while (0)
#else
#define READ_RUN(dst, src) do { (dst)[0] = *(src); } while (0)
#endif

inline void multiply_slice(__local const float* a_tile, __local const float* b_tile, float* acc, int tm, int tn)
{
    #pragma unroll
    for (int kk = 0; kk < K_BLK; ++kk) {
        float a[M_PER], b[N_PER];
        #pragma unroll
        for (int i = 0; i < M_PER; i += VEC)
            READ_RUN(a + i, a_tile + kk * A_LD + i * M_DIM + tm * VEC);
        #pragma unroll
        for (int j = 0; j < N_PER; j += VEC)
            READ_RUN(b + j, b_tile + kk * B_LD + j * N_DIM + tn * VEC);
        #pragma unroll
        for (int i = 0; i < M_PER; ++i)
            #pragma unroll
            for (int j = 0; j < N_PER; ++j)
                acc[i * N_PER + j] = mad(a[i], b[j], acc[i * N_PER + j]);
    }
}

/* Tile row (or column) of a work-item's i-th sum: VEC-wide runs strided by M_DIM*VEC. */
#define ROW_OF(i, tm) (((i) / VEC) * M_DIM * VEC + (tm) * VEC + (i) % VEC)
#define COL_OF(j, tn) (((j) / VEC) * N_DIM * VEC + (tn) * VEC + (j) % VEC)

#if DIRECTION == 4 && SPLIT > 1
#define PARTIAL_PARAM , __global float* restrict partial
#else
#define PARTIAL_PARAM
#endif

__kernel __attribute__((reqd_work_group_size(N_DIM, M_DIM, 1)))
void conv_direct_local(__global X_CONST DATA_T* restrict x, __global W_CONST DATA_T* restrict w,
                       __global Y_CONST DATA_T* restrict y PARTIAL_PARAM MIOPY_EPILOGUE_PARAMS)
{
    __local float a_tiles[BUFS * K_BLK * A_LD] __attribute__((aligned(16)));
    __local float b_tiles[BUFS * K_BLK * B_LD] __attribute__((aligned(16)));
    const int tn = get_local_id(0), tm = get_local_id(1), t = tm * N_DIM + tn;
    const int n0 = get_group_id(0) * N_BLK, m0 = get_group_id(1) * M_BLK;
#if DIRECTION == 4 && SPLIT > 1
    const int g = get_group_id(2) / SPLIT, split = get_group_id(2) % SPLIT;
    const int k_begin = split * SPLIT_CHUNK, k_end = min(GEMM_K, k_begin + SPLIT_CHUNK);
#else
    const int g = get_group_id(2), k_begin = 0, k_end = GEMM_K;
#endif

    int a_cols[A_NIDX];
    #pragma unroll
    for (int j = 0; j < A_NIDX; ++j) {
        const int m = m0 + A_T_IDX + j * A_IDX_STEP;
        a_cols[j] = m < GEMM_M ? a_col(g, m) : -1;
    }
    tap_t b_cols[B_NIDX];
    #pragma unroll
    for (int j = 0; j < B_NIDX; ++j)
        b_cols[j] = b_col(g, n0 + B_T_IDX + j * B_IDX_STEP);

    float acc[M_PER * N_PER];
    #pragma unroll
    for (int i = 0; i < M_PER * N_PER; ++i)
        acc[i] = 0.0f;
#if DIRECTION == 4 && SUM_STEPS > 0
    /* Backward-weights sums N*P*Q terms: acc holds the last SUM_STEPS slices only (and the rounding error
     * of the last join), total the rest, joined with COMPENSATED_ADD: rounding then stays that of a
     * SUM_STEPS * K_BLK-term sum, however long the chunk. */
    float total[M_PER * N_PER];
    #pragma unroll
    for (int i = 0; i < M_PER * N_PER; ++i)
        total[i] = 0.0f;
#endif

    /* Iteration i fetches slice i into registers, multiplies slice i-1 (its global reads in flight
     * meanwhile), then stages slice i in local memory. */
    float a_reg[A_NKK * A_NIDX], b_reg[B_NKK * B_NIDX];
    const int steps = STEPS(k_begin, k_end);
    for (int step = 0; step <= steps; ++step) {
        if (step < steps) {
            fetch_a(A_SRC, a_cols, a_reg, t, step, k_begin, k_end);
            fetch_b(B_SRC, b_cols, b_reg, t, step, k_begin, k_end);
        }
        if (step > 0) {
            const int prev = DOUBLE_BUF ? (step - 1) & 1 : 0;
            multiply_slice(a_tiles + prev * K_BLK * A_LD, b_tiles + prev * K_BLK * B_LD, acc, tm, tn);
#if DIRECTION == 4 && SUM_STEPS > 0
            if (step % SUM_STEPS == 0) {
                #pragma unroll
                for (int i = 0; i < M_PER * N_PER; ++i)
                    COMPENSATED_ADD(float, total[i], acc[i])
            }
#endif
        }
        if (step < steps) {
#if !DOUBLE_BUF
            barrier(CLK_LOCAL_MEM_FENCE);   /* everyone is done reading the single buffer */
#endif
            const int cur = DOUBLE_BUF ? step & 1 : 0;
            stage(a_tiles + cur * K_BLK * A_LD, b_tiles + cur * K_BLK * B_LD, a_reg, b_reg, t);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }

    #pragma unroll
    for (int i = 0; i < M_PER; ++i) {
        const int m = m0 + ROW_OF(i, tm);
        if (m >= GEMM_M) continue;
        #pragma unroll
        for (int j = 0; j < N_PER; ++j) {
            const int col = n0 + COL_OF(j, tn);
            if (col >= GEMM_N) continue;
#if DIRECTION == 4 && SUM_STEPS > 0
            const float v = total[i * N_PER + j] + acc[i * N_PER + j];
#else
            const float v = acc[i * N_PER + j];
#endif
#if DIRECTION == 1
            const int n = col / (P * Q), pq = col % (P * Q), k = g * KG + m;
            const int yi = Y_AT(n, k, pq / Q, pq % Q);
            STORE(y, yi, MIOPY_EPILOGUE(v, k, pq, yi));
#elif DIRECTION == 2
            const int n = col / (H * W), hw = col % (H * W);
            STORE(x, X_AT(n, g * CG + m, hw / W, hw % W), v);
#elif SPLIT > 1
            partial[(split * K + g * KG + m) * GEMM_N + col] = v;
#else
            const int rs = col % RS;
            STORE(w, W_AT(g * KG + m, col / RS, rs / S, rs % S), v);
#endif
        }
    }
}

#if DIRECTION == 4 && SPLIT > 1
/* dw[k][c][r][s] = compensated sum over splits, in order, of the partial sums (deterministic). One work-item each. */
__kernel void reduce_splits(__global const float* restrict partial, __global DATA_T* restrict w)
{
    const int i = get_global_id(0);
    if (i >= K * CG * RS) return;
    float sum = 0.0f, low = 0.0f;   /* compensated, in split order: rounds like a sum of ~2 terms */
    for (int s = 0; s < SPLIT; ++s) {
        low += partial[s * (K * CG * RS) + i];
        COMPENSATED_ADD(float, sum, low)
    }
    sum += low;
    const int k = i / (CG * RS), crs = i % (CG * RS), rs = crs % RS;
    STORE(w, W_AT(k, crs / RS, rs / S, rs % S), sum);
}
#endif
