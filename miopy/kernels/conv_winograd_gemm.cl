/* Batched GEMM of the Winograd domain: for each of the ALPHA*ALPHA transformed positions z,
 *     C[z][m][n] = sum_k A[z][k][m] * B[z][k][n]
 * with A = U (reduction x output channels), B = V (reduction x tiles) and C = M (output channels x tiles),
 * all row-major in one workspace buffer and padded (by the transforms) so that no access needs a bounds
 * check: every row is a whole number of float4s and the tile grid never leaves the padded arrays.
 *
 * A work-group computes a TILE_M x TILE_N block of C[z]; each work-item a WORK_M x WORK_N sub-block held
 * in registers, as WORK_M/4 x WORK_N/4 float4 pieces spaced TILE_M/WORK_M x TILE_N/WORK_N float4s apart
 * (so neighbouring work-items read neighbouring float4s of local memory and store neighbouring float4s of
 * C). K_BLK rows of the A and B blocks are staged in local memory, double-buffered: the next rows are
 * fetched into registers while the current ones are multiplied, so each step needs one barrier.
 *
 * Defines (all ints):
 *   GEMM_M GEMM_N GEMM_K    padded sizes: rows of C (output channels), its columns (tiles), reduction
 *   A_OFF B_OFF C_OFF       offsets in floats of A [z][GEMM_K][GEMM_M], B [z][GEMM_K][GEMM_N] and
 *                           C [z][GEMM_M][GEMM_N] in the workspace (multiples of 4)
 *   TILE_M TILE_N           block of C per work-group
 *   WORK_M WORK_N           block of C per work-item (multiples of 4)
 *   K_BLK                   reduction rows staged in local memory per step (divides GEMM_K)
 *   SPLIT GEMM_BATCH        optional (backward-weights): the reduction is cut into SPLIT chunks of
 *   SPLIT_CHUNK             SPLIT_CHUNK rows (a multiple of K_BLK; the last may be short or empty);
 *                           group z of the third axis sums chunk z / GEMM_BATCH of GEMM z % GEMM_BATCH
 *                           into the partial C [z / GEMM_BATCH][z % GEMM_BATCH] (default: 1 chunk)
 *   ACCUMULATE_ARG          defined: the kernel takes an int argument accumulate; when it is set, C += the
 *                           product (backward-weights' later passes over the tiles) instead of C =
 *   SUM_STEPS               0, or K_BLK steps summed in registers before they join a second register
 *                           tile (the running total, compensated: types.h), so rounding is that of a
 *                           SUM_STEPS * K_BLK-term sum, whatever the chunk's length
 * Launch: global (ceil(n / TILE_N) * TILE_N / WORK_N, ceil(m / TILE_M) * TILE_M / WORK_M, ALPHA^2 * SPLIT),
 *         local (TILE_N / WORK_N, TILE_M / WORK_M, 1).
 */
#include "types.h"

#ifndef SPLIT
#define SPLIT 1
#define GEMM_BATCH (1 << 30)
#define SPLIT_CHUNK GEMM_K
#endif
#ifndef SUM_STEPS
#define SUM_STEPS 0
#endif
#define THREADS_N (TILE_N / WORK_N)
#define THREADS_M (TILE_M / WORK_M)
#define WG (THREADS_N * THREADS_M)
#define A_ITEMS (K_BLK * TILE_M / 4)   /* float4s of one staged A block */
#define B_ITEMS (K_BLK * TILE_N / 4)
#define A_LOADS ((A_ITEMS + WG - 1) / WG)
#define B_LOADS ((B_ITEMS + WG - 1) / WG)
/* Component i (a constant after unrolling) of float4 v */
#define COMPONENT(v, i) ((i) == 0 ? (v).s0 : (i) == 1 ? (v).s1 : (i) == 2 ? (v).s2 : (v).s3)

/* Fetch rows k0 .. k0+K_BLK of a block (ITEMS float4s, rows of WIDTH4 float4s, row pitch PITCH4) into
 * registers; STAGE stores them into a local block. LOADS is a small constant: the loops unroll. */
#define FETCH(dst, src, k0, ITEMS, LOADS, WIDTH4, PITCH4)                           \
    for (int l = 0; l < LOADS; ++l) {                                               \
        const int item = lid + l * WG;                                              \
        if (ITEMS % WG == 0 || item < ITEMS)                                        \
            dst[l] = src[((k0) + item / (WIDTH4)) * (PITCH4) + item % (WIDTH4)];    \
    }

#define STAGE(tile, src, ITEMS, LOADS, WIDTH4)                                      \
    for (int l = 0; l < LOADS; ++l) {                                               \
        const int item = lid + l * WG;                                              \
        if (ITEMS % WG == 0 || item < ITEMS)                                        \
            tile[item / (WIDTH4)][item % (WIDTH4)] = src[l];                        \
    }

__kernel __attribute__((reqd_work_group_size(THREADS_N, THREADS_M, 1)))
void wino_gemm(__global float* restrict ws
#ifdef ACCUMULATE_ARG
               , const int accumulate
#endif
               )
{
    __local float4 a_tile[2][K_BLK][TILE_M / 4];
    __local float4 b_tile[2][K_BLK][TILE_N / 4];
    const int tx = get_local_id(0), ty = get_local_id(1), lid = ty * THREADS_N + tx;
    const int z = get_group_id(2) % GEMM_BATCH, split = get_group_id(2) / GEMM_BATCH;
    const int m0 = get_group_id(1) * TILE_M, n0 = get_group_id(0) * TILE_N;
    const int k_begin = split * SPLIT_CHUNK, k_end = min(k_begin + SPLIT_CHUNK, GEMM_K);
    __global const float4* a = (__global const float4*)(ws + A_OFF + z * (GEMM_K * GEMM_M) + m0);
    __global const float4* b = (__global const float4*)(ws + B_OFF + z * (GEMM_K * GEMM_N) + n0);

    float4 a_next[A_LOADS], b_next[B_LOADS];
    float4 acc[WORK_M][WORK_N / 4];   /* row i, columns 4v..4v+3 of the work-item's sub-block */
    #pragma unroll
    for (int i = 0; i < WORK_M; ++i)
        #pragma unroll
        for (int v = 0; v < WORK_N / 4; ++v) acc[i][v] = (float4)(0.0f);
#if SUM_STEPS > 0
    float4 total[WORK_M][WORK_N / 4];
    #pragma unroll
    for (int i = 0; i < WORK_M; ++i)
        #pragma unroll
        for (int v = 0; v < WORK_N / 4; ++v) total[i][v] = (float4)(0.0f);
    int steps = 0;
#endif

    if (k_begin < k_end) {   /* uniform over the work-group */
        FETCH(a_next, a, k_begin, A_ITEMS, A_LOADS, TILE_M / 4, GEMM_M / 4)
        FETCH(b_next, b, k_begin, B_ITEMS, B_LOADS, TILE_N / 4, GEMM_N / 4)
        STAGE(a_tile[0], a_next, A_ITEMS, A_LOADS, TILE_M / 4)
        STAGE(b_tile[0], b_next, B_ITEMS, B_LOADS, TILE_N / 4)
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int k0 = k_begin; k0 < k_end; k0 += K_BLK) {
        const int buf = ((k0 - k_begin) / K_BLK) & 1;
        const bool more = k0 + K_BLK < k_end;
        if (more) {
            FETCH(a_next, a, k0 + K_BLK, A_ITEMS, A_LOADS, TILE_M / 4, GEMM_M / 4)
            FETCH(b_next, b, k0 + K_BLK, B_ITEMS, B_LOADS, TILE_N / 4, GEMM_N / 4)
        }
        #pragma unroll
        for (int kk = 0; kk < K_BLK; ++kk) {
            float4 a4[WORK_M / 4], b4[WORK_N / 4];
            #pragma unroll
            for (int u = 0; u < WORK_M / 4; ++u) a4[u] = a_tile[buf][kk][u * THREADS_M + ty];
            #pragma unroll
            for (int v = 0; v < WORK_N / 4; ++v) b4[v] = b_tile[buf][kk][v * THREADS_N + tx];
            #pragma unroll
            for (int i = 0; i < WORK_M; ++i) {
                const float a_val = COMPONENT(a4[i / 4], i % 4);
                #pragma unroll
                for (int v = 0; v < WORK_N / 4; ++v) acc[i][v] = mad((float4)(a_val), b4[v], acc[i][v]);
            }
        }
        if (more) {
            STAGE(a_tile[buf ^ 1], a_next, A_ITEMS, A_LOADS, TILE_M / 4)
            STAGE(b_tile[buf ^ 1], b_next, B_ITEMS, B_LOADS, TILE_N / 4)
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#if SUM_STEPS > 0
        if (++steps == SUM_STEPS) {
            steps = 0;
            #pragma unroll
            for (int i = 0; i < WORK_M; ++i)
                #pragma unroll
                for (int v = 0; v < WORK_N / 4; ++v) COMPENSATED_ADD(float4, total[i][v], acc[i][v])
        }
#endif
    }
#if SUM_STEPS > 0
    #pragma unroll
    for (int i = 0; i < WORK_M; ++i)
        #pragma unroll
        for (int v = 0; v < WORK_N / 4; ++v) acc[i][v] += total[i][v];
#endif

    __global float4* c = (__global float4*)(ws + C_OFF + (split * GEMM_BATCH + z) * (GEMM_M * GEMM_N)
                                            + m0 * GEMM_N + n0);
    #pragma unroll
    for (int u = 0; u < WORK_M / 4; ++u)
        #pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int row = (u * THREADS_M + ty) * 4 + i;
            #pragma unroll
            for (int v = 0; v < WORK_N / 4; ++v)
#ifdef ACCUMULATE_ARG
                if (accumulate) c[row * (GEMM_N / 4) + v * THREADS_N + tx] += acc[u * 4 + i][v];
                else
#endif
                c[row * (GEMM_N / 4) + v * THREADS_N + tx] = acc[u * 4 + i][v];
        }
}
