/* Tiled, register-blocked SGEMM over a batch, optionally split along the inner dimension:
 *
 *     C[b] = A[b] * B[b] + beta * C[b]        A: GEMM_M x GEMM_K, B: GEMM_K x GEMM_N, C: GEMM_M x GEMM_N
 *
 * Each work-group computes a TILE_M x TILE_N block of C, staging K_BLK-deep slices of A and B in local
 * memory; each work-item accumulates WPT_M x WPT_N outputs in registers. The inner loop reads its rows /
 * columns from local memory as float4 (float2 / float when WPT < 4): work-item t owns rows
 * t*VW + v + c*(RM*VW) for v < VW, so neighbouring work-items read neighbouring vectors, conflict-free.
 * Local arrays are padded by 4 floats: rows stay 16-byte aligned and the transposed stores of a
 * K_BLK x 4 patch of a row-major operand spread over all 32 banks. Global loads are scalar and
 * coalesced along the operand's contiguous dimension, so any layout, offset and remainder works.
 *
 * Defines (ints unless said):
 *   GEMM_M GEMM_N GEMM_K         matrix sizes (any value; edges are guarded)
 *   TRANS_A TRANS_B              0/1. A(m,k) = a[m*LDA + A_IDX(k)], or a[k*LDA + A_IDX(m)] when TRANS_A;
 *                                B(k,n) = b[k*LDB + B_IDX(n)], or b[n*LDB + B_IDX(k)] when TRANS_B;
 *                                C(m,n) = c[m*LDC + C_IDX(n)]
 *   LDA LDB LDC                  leading dimensions (element stride between rows of the stored matrix)
 *   A_BATCH B_BATCH C_BATCH      element strides between batch entries (groups or images); the batch
 *                                count is the launch's third dimension divided by SPLIT_K
 *   X_MAP_INNER X_MAP_MID X_STEP_INNER X_STEP_MID X_STEP_OUTER   (X in A, B, C; all optional)
 *                                maps the index i along the operand's contiguous dimension to an element
 *                                offset: i = (outer, mid, inner) with sizes (., MID, INNER) ->
 *                                outer*STEP_OUTER + mid*STEP_MID + inner*STEP_INNER. Lets one GEMM run over
 *                                images concatenated along a dimension, or read a strided plane, without a
 *                                copy. Without X_MAP_INNER the index is the offset.
 *   TILE_M TILE_N WPT_M WPT_N K_BLK  tiling: work-group (TILE_N/WPT_N) x (TILE_M/WPT_M) work-items
 *   SPLIT_K K_CHUNK              split of the inner dimension: group z = batch*SPLIT_K + split sums
 *                                k in [split*K_CHUNK, (split+1)*K_CHUNK) (K_CHUNK a multiple of K_BLK) and
 *                                writes its partial C at element offset split*SPLIT_STRIDE
 *   SPLIT_STRIDE                 element distance between partial outputs (0 when SPLIT_K == 1)
 *   SUM_STEPS                    0, or K_BLK slices summed in registers before they join a second register
 *                                tile (the running total, compensated): set where K_CHUNK is long
 *   EVEN_M EVEN_N EVEN_K         0/1: GEMM_M % TILE_M == 0 (etc.), drop the edge guards
 *   GEMM_EPILOGUE                0/1: C is a forward convolution output: store MIOPY_EPILOGUE(v, k, pq, yi)
 *                                (never split: yi = c_off + batch * C_BATCH + at is the offset in C)
 *                                with k = batch*GEMM_M + m (batch = group) and pq = n % EPI_PLANE
 *   EPI_PLANE                    P*Q of that output
 *   MIOPY_HALF                   0/1: A and B hold half values (kernels/types.h); tiles and sums are float
 *   C_HALF                       0/1: C holds half values (default MIOPY_HALF; 0 for float partials or a
 *                                float intermediate in the workspace)
 */
#include "types.h"
#include "epilogue.h"

#ifndef C_HALF
#define C_HALF MIOPY_HALF
#endif
#if C_HALF
#define C_T half
#define LOAD_C(p, i) vload_half((i), (p))
#define STORE_C(p, i, v) vstore_half_rte((v), (i), (p))
#else
#define C_T float
#define LOAD_C(p, i) ((p)[i])
#define STORE_C(p, i, v) ((p)[i] = (v))
#endif

#define RN (TILE_N / WPT_N)                 /* work-items along n (local dim 0) */
#define RM (TILE_M / WPT_M)                 /* work-items along m (local dim 1) */
#define THREADS (RN * RM)
#define VW_M (WPT_M < 4 ? WPT_M : 4)       /* width of one local-memory read of A */
#define VW_N (WPT_N < 4 ? WPT_N : 4)
#define LDS_A (TILE_M + 4)
#define LDS_B (TILE_N + 4)

#define MAP3(i, inner, mid, s_in, s_mid, s_out) \
    (((i) / ((inner) * (mid))) * (s_out) + (((i) / (inner)) % (mid)) * (s_mid) + ((i) % (inner)) * (s_in))
#ifdef A_MAP_INNER
#define A_IDX(i) MAP3(i, A_MAP_INNER, A_MAP_MID, A_STEP_INNER, A_STEP_MID, A_STEP_OUTER)
#else
#define A_IDX(i) (i)
#endif
#ifdef B_MAP_INNER
#define B_IDX(i) MAP3(i, B_MAP_INNER, B_MAP_MID, B_STEP_INNER, B_STEP_MID, B_STEP_OUTER)
#else
#define B_IDX(i) (i)
#endif
#ifdef C_MAP_INNER
#define C_IDX(i) MAP3(i, C_MAP_INNER, C_MAP_MID, C_STEP_INNER, C_STEP_MID, C_STEP_OUTER)
#else
#define C_IDX(i) (i)
#endif

#if TRANS_A
#define A_AT(m, k) (A_IDX(m) + (k) * LDA)
#else
#define A_AT(m, k) ((m) * LDA + A_IDX(k))
#endif
#if TRANS_B
#define B_AT(k, n) ((n) * LDB + B_IDX(k))
#else
#define B_AT(k, n) ((k) * LDB + B_IDX(n))
#endif
#define C_AT(m, n) ((m) * LDC + C_IDX(n))

#define IN_M(m) (EVEN_M || (m) < GEMM_M)
#define IN_N(n) (EVEN_N || (n) < GEMM_N)
#define IN_K(k, k_end) (EVEN_K || (k) < (k_end))
/* Local row / column of a work-item's i-th accumulator row / column (see the header). */
#define ROW_OF(tm, i) (((i) / VW_M) * (RM * VW_M) + (tm) * VW_M + (i) % VW_M)
#define COL_OF(tn, j) (((j) / VW_N) * (RN * VW_N) + (tn) * VW_N + (j) % VW_N)

/* Stage A(m0 .. m0+TILE_M, k0 .. k0+K_BLK) as tile[k][m]; consecutive work-items read consecutive
 * addresses of A's contiguous dimension. Out-of-range elements are zero. */
inline void load_a_tile(__global const DATA_T* restrict a, __local float* restrict tile,
                        const int m0, const int k0, const int k_end, const int tid)
{
    #pragma unroll
    for (int i = 0; i < (TILE_M * K_BLK + THREADS - 1) / THREADS; ++i) {
        const int e = tid + i * THREADS;
        if ((TILE_M * K_BLK) % THREADS != 0 && e >= TILE_M * K_BLK) break;
#if TRANS_A
        const int mm = e % TILE_M, kk = e / TILE_M;
#else
        const int kk = e % K_BLK, mm = e / K_BLK;
#endif
        const int m = m0 + mm, k = k0 + kk;
        tile[kk * LDS_A + mm] = (IN_M(m) && IN_K(k, k_end)) ? LOAD(a, A_AT(m, k)) : 0.0f;
    }
}

/* Stage B(k0 .. k0+K_BLK, n0 .. n0+TILE_N) as tile[k][n]. */
inline void load_b_tile(__global const DATA_T* restrict b, __local float* restrict tile,
                        const int n0, const int k0, const int k_end, const int tid)
{
    #pragma unroll
    for (int i = 0; i < (TILE_N * K_BLK + THREADS - 1) / THREADS; ++i) {
        const int e = tid + i * THREADS;
        if ((TILE_N * K_BLK) % THREADS != 0 && e >= TILE_N * K_BLK) break;
#if TRANS_B
        const int kk = e % K_BLK, nn = e / K_BLK;
#else
        const int nn = e % TILE_N, kk = e / TILE_N;
#endif
        const int n = n0 + nn, k = k0 + kk;
        tile[kk * LDS_B + nn] = (IN_N(n) && IN_K(k, k_end)) ? LOAD(b, B_AT(k, n)) : 0.0f;
    }
}

/* Read the WPT floats a work-item owns in one local row into regs, VW at a time (16-byte loads when
 * VW == 4; the row start and t*VW are multiples of VW, so the vector reads are aligned). */
#define READ_LOCAL(regs, row, t, WPT, VW, R)                                                     \
    for (int v = 0; v < (WPT) / (VW); ++v) {                                                     \
        __local const float* src = (row) + v * ((R) * (VW)) + (t) * (VW);                        \
        if ((VW) == 4) {                                                                         \
            const float4 q = *(__local const float4*)src;                                        \
            regs[4 * v] = q.x; regs[4 * v + 1] = q.y; regs[4 * v + 2] = q.z; regs[4 * v + 3] = q.w; \
        } else if ((VW) == 2) {                                                                  \
            const float2 q = *(__local const float2*)src;                                        \
            regs[2 * v] = q.x; regs[2 * v + 1] = q.y;                                            \
        } else {                                                                                 \
            regs[v] = src[0];                                                                    \
        }                                                                                        \
    }

__kernel __attribute__((reqd_work_group_size(RN, RM, 1)))
void gemm(__global const DATA_T* restrict a, __global const DATA_T* restrict b, __global C_T* restrict c,
          const int a_off, const int b_off, const int c_off, const float beta MIOPY_EPILOGUE_PARAMS)
{
    __local float a_tile[K_BLK * LDS_A] __attribute__((aligned(16)));
    __local float b_tile[K_BLK * LDS_B] __attribute__((aligned(16)));
    const int tn = get_local_id(0), tm = get_local_id(1), tid = tm * RN + tn;
    const int n0 = get_group_id(0) * TILE_N, m0 = get_group_id(1) * TILE_M;
    const int split = get_group_id(2) % SPLIT_K, batch = get_group_id(2) / SPLIT_K;
    a += a_off + batch * A_BATCH;
    b += b_off + batch * B_BATCH;
    c += c_off + batch * C_BATCH + split * SPLIT_STRIDE;
    const int k_begin = split * K_CHUNK, k_end = min(k_begin + K_CHUNK, GEMM_K);

    float acc[WPT_M][WPT_N];
    #pragma unroll
    for (int i = 0; i < WPT_M; ++i)
        #pragma unroll
        for (int j = 0; j < WPT_N; ++j) acc[i][j] = 0.0f;
#if SUM_STEPS > 0
    /* A long inner chunk: acc holds the last SUM_STEPS slices only (and the rounding error of the last join),
     * total the rest, joined with COMPENSATED_ADD (types.h): rounding stays that of a SUM_STEPS*K_BLK-term sum */
    float total[WPT_M][WPT_N];
    #pragma unroll
    for (int i = 0; i < WPT_M; ++i)
        #pragma unroll
        for (int j = 0; j < WPT_N; ++j) total[i][j] = 0.0f;
    int steps = 0;
#endif

    for (int k0 = k_begin; k0 < k_end; k0 += K_BLK) {
        load_a_tile(a, a_tile, m0, k0, k_end, tid);
        load_b_tile(b, b_tile, n0, k0, k_end, tid);
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int kk = 0; kk < K_BLK; ++kk) {
            float ra[WPT_M], rb[WPT_N];
            READ_LOCAL(ra, a_tile + kk * LDS_A, tm, WPT_M, VW_M, RM)
            READ_LOCAL(rb, b_tile + kk * LDS_B, tn, WPT_N, VW_N, RN)
            #pragma unroll
            for (int i = 0; i < WPT_M; ++i)
                #pragma unroll
                for (int j = 0; j < WPT_N; ++j) acc[i][j] = mad(ra[i], rb[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#if SUM_STEPS > 0
        if (++steps == SUM_STEPS) {
            steps = 0;
            #pragma unroll
            for (int i = 0; i < WPT_M; ++i)
                #pragma unroll
                for (int j = 0; j < WPT_N; ++j) COMPENSATED_ADD(float, total[i][j], acc[i][j])
        }
#endif
    }
#if SUM_STEPS > 0
    #pragma unroll
    for (int i = 0; i < WPT_M; ++i)
        #pragma unroll
        for (int j = 0; j < WPT_N; ++j) acc[i][j] += total[i][j];
#endif

    #pragma unroll
    for (int i = 0; i < WPT_M; ++i) {
        const int m = m0 + ROW_OF(tm, i);
        if (!IN_M(m)) continue;
        #pragma unroll
        for (int j = 0; j < WPT_N; ++j) {
            const int n = n0 + COL_OF(tn, j);
            if (!IN_N(n)) continue;
            const int at = C_AT(m, n);
            const float v = beta == 0.0f ? acc[i][j] : mad(beta, LOAD_C(c, at), acc[i][j]);
#if GEMM_EPILOGUE
            STORE_C(c, at, MIOPY_EPILOGUE(v, batch * GEMM_M + m, n % EPI_PLANE, c_off + batch * C_BATCH + at));
#else
            STORE_C(c, at, v);
#endif
        }
    }
}
