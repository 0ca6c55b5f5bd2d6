/* Implicit-GEMM convolution on NVIDIA tensor cores through inline PTX mma.sync (or Hopper's wgmma), all three
 * directions: the kernel conv_mma, split-K's reduce_splits, and the workspace copies its switches read
 * (transform_weights, transform_x, pad_dy).
 *
 * The GEMM per group g is implicit_gemm.h's (conv_direct_local.cl's):  out[m][col] = sum_kk A[m][kk] * B[kk][col]
 *   forward           m = k (K/G)   col = (n, p, q)   kk = (c, r, s)   A = w    B = x gathered (im2col)
 *   backward-data     m = c (C/G)   col = (n, h, w)   kk = (k, r, s)   A = w    B = dy gathered
 *   backward-weights  m = k (K/G)   col = (c, r, s)   kk = (n, p, q)   A = dy   B = x gathered
 * A work-group of WARPS_M x WARPS_N warps computes an M_BLK x N_BLK tile; each warp a
 * (M_BLK/WARPS_M) x (N_BLK/WARPS_N) block of 16x8 mma tiles whose sums stay in registers (fp32).
 * Each step stages a K_BLK slice of A and B in local memory (fetched into registers one step ahead,
 * converted once: fp32 -> TF32 with cvt.rna, fp16 kept as raw bits; or copied by cp.async into a ring of
 * buffers), and every warp runs K_BLK/MMA_K mma sub-steps over it. Local tiles are padded so every fragment
 * read of a warp hits 32 distinct banks (mma_tiles.h). Stores from the fetch pattern are conflict-free too.
 *
 * Data types (types.h): MIOPY_HALF=0: fp32 tensors, mma.m16n8k8 .tf32 (10-bit mantissa products, fp32
 * sums); MIOPY_HALF=1: fp16 tensors, mma.m16n8k16 .f16 with fp32 sums, fp16 output rounded once.
 * The hardware rounds each product's operands only; sums are fp32 (see docs/guide/tensor_cores.md for the
 * error bound the tests use).
 *
 * Defines (all ints), each documented in the header that reads it:
 *   N C H W K R S P Q G PAD_H PAD_W STRIDE_H STRIDE_W DIL_H DIL_W   problem (see conv_naive.cl)
 *   XS_N XS_C XS_H XS_W, WS_K WS_C WS_R WS_S, YS_N YS_K YS_P YS_Q   element strides of x, w, y
 *   DIRECTION        1 forward, 2 backward-data, 4 backward-weights
 *   M_BLK N_BLK K_BLK   work-group tile and inner slice (K_BLK a multiple of MMA_K)
 *   WARPS_M WARPS_N  warps per work-group along m and col; local size (32*WARPS_M*WARPS_N, 1, 1)
 *   STAGES CP_ASYNC VECTOR_A VECTOR_B   how slices reach local memory (mma_copy.h)
 *   CHANNEL_BLOCKS SPLIT SPLIT_CHUNK PHASED TRANSFORM_W TRANSFORM_X PAD_DY   the GEMM's loop and operands
 *                    (mma_addressing.h; the copies' kernels below)
 *   LDMATRIX MMA_EMULATE   how fragments are read, and the emulated mma for tests (mma_fragments.h)
 *   WGMMA            Hopper's wgmma instead of mma.sync (mma_wgmma.h)
 *   STAGED_STORE COL_OUT   where and how the sums are stored (mma_store.h)
 *   MIOPY_HALF       0 fp32 data with TF32 mma, 1 fp16 data with f16 mma
 * mma_config.h gives every switch its default and refuses combinations that cannot run.
 */
#include "types.h"
#include "epilogue.h"
#include "mma_config.h"
#include "implicit_gemm.h"
#include "mma_tiles.h"
#include "mma_addressing.h"
#include "mma_copy.h"
#include "mma_fragments.h"
#include "mma_wgmma.h"
#include "mma_store.h"

#if DIRECTION == 1
#define X_CONST const
#define W_CONST const
#define Y_CONST
#elif DIRECTION == 2
#define X_CONST
#define W_CONST const
#define Y_CONST const
#else
#define X_CONST const
#define W_CONST
#define Y_CONST const
#endif

__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1)))
void conv_mma(__global X_CONST DATA_T* restrict x, __global W_CONST DATA_T* restrict w,
              __global Y_CONST DATA_T* restrict y PARTIAL_PARAM MIOPY_EPILOGUE_PARAMS)
{
    /* one array, so STAGED_STORE's bands may use all of it (A_TILE is a multiple of 16 elements: B's tiles stay
     * 16-byte aligned, and 256-byte, so their banks are as in an array of their own) */
    __local raw_t tiles[STAGES * (A_TILE + B_TILE)] __attribute__((aligned(WGMMA ? 1024 : 16)));
    __local raw_t* const a_tiles = tiles;
    __local raw_t* const b_tiles = tiles + STAGES * A_TILE;
#if MMA_EMULATE
    __local float emu[WARPS_M * WARPS_N * EMU_WARP];
#endif
    const int t = get_local_id(0), lane = t % 32, warp = t / 32, gid = lane / 4, tig = lane % 4;
    const int wm = (warp / WARPS_N) * WARP_M, wn = (warp % WARPS_N) * WARP_N;
    const int n0 = get_group_id(0) * N_BLK, m0 = get_group_id(1) * M_BLK;
    /* dimension 2: (group, split, phase), phase fastest */
    const int phase = get_group_id(2) % PHASES, group_split = get_group_id(2) / PHASES;
    const int col_base = phase * GEMM_N;    /* the phase's first column of the output (PHASED) */
#if SPLIT > 1
    const int g = group_split / SPLIT, split = group_split % SPLIT;
#else
    const int g = group_split, split = 0;
#endif
#if SPLIT > 1 || COL_OUT
    __global float* restrict partial = (__global float*)(workspace + PARTIAL_OFFSET);
#endif
    const range_t kr = make_range(split, phase);
#if TRANSFORM_W
    __global const src_t* restrict a_src = (__global const src_t*)workspace;
#elif DIRECTION != 4
    __global const src_t* restrict a_src = (__global const src_t*)w;
#endif
#if TRANSFORM_X && DIRECTION != 4
    __global const src_t* restrict b_src = (__global const src_t*)(workspace + X_OFFSET);
#elif DIRECTION == 1
    __global const src_t* restrict b_src = (__global const src_t*)x;
#elif DIRECTION == 2
    __global const src_t* restrict b_src = (__global const src_t*)y;
#else
#if PAD_DY
    __global const src_t* restrict a_src = (__global const src_t*)(workspace + DY_OFFSET);
#else
    __global const src_t* restrict a_src = (__global const src_t*)y;
#endif
#if TRANSFORM_X
    __global const src_t* restrict b_src = (__global const src_t*)(workspace + X_OFFSET);
#else
    __global const src_t* restrict b_src = (__global const src_t*)x;
#endif
#endif

    int a_cols[A_NCOLS];
    #pragma unroll
    for (int j = 0; j < A_NCOLS; ++j) {
        const int m = m0 + A_COL_OF(t, j);
        a_cols[j] = m < GEMM_M ? a_col(g, m) : -1;
    }
    tap_t b_cols[B_NCOLS];
    #pragma unroll
    for (int j = 0; j < B_NCOLS; ++j)
        b_cols[j] = b_col(g, n0 + B_COL_OF(t, j), kr);

    float acc[TILES_M * TILES_N * 4];
    #pragma unroll
    for (int i = 0; i < TILES_M * TILES_N * 4; ++i)
        acc[i] = 0.0f;

    const int steps = STEPS(kr);
#if CP_ASYNC
    /* A ring of STAGES buffers: slice s lands in buffer s % STAGES. Iteration i waits until this work-item's
     * copies of slice i have landed (wait_group: all but the newest STAGES-2 groups) and the barrier makes every
     * work-item's visible, and frees the buffer of slice i-1 (everyone has multiplied it); then the copies of
     * slice i + STAGES - 1 go into that buffer (one commit group per slice, empty past the end) while slice i is
     * multiplied. An operand on the register path (fp16 B) is fetched before the multiply, stored after it. */
#if B_ASYNC
    b_reg_t* b_reg = 0;
#else
    b_reg_t b_reg[B_REGS];
#endif
    uint b_mask;
    #pragma unroll 1
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < steps) {
            fetch_a(a_src, a_cols, 0, a_tiles + s * A_TILE, t, s, kr);
            fetch_b(b_src, b_cols, b_reg, b_tiles + s * B_TILE, t, s, kr, &b_mask);
#if !B_ASYNC
            stage_b(b_tiles + s * B_TILE, b_reg, t, b_mask);
#endif
        }
        cp_commit();
    }
    int read = 0, write = STAGES - 1;
    for (int step = 0; step < steps; ++step) {
        cp_wait();
        PROXY_FENCE();
        barrier(CLK_LOCAL_MEM_FENCE);
        const int next = step + STAGES - 1;
        if (next < steps) {
            fetch_a(a_src, a_cols, 0, a_tiles + write * A_TILE, t, next, kr);
            fetch_b(b_src, b_cols, b_reg, b_tiles + write * B_TILE, t, next, kr, &b_mask);
        }
        cp_commit();
        multiply_slice(a_tiles + read * A_TILE, b_tiles + read * B_TILE, acc, wm, wn, gid, tig EMU_ARG);
#if !B_ASYNC
        if (next < steps)
            stage_b(b_tiles + write * B_TILE, b_reg, t, b_mask);
#endif
        read = read == STAGES - 1 ? 0 : read + 1;
        write = write == STAGES - 1 ? 0 : write + 1;
    }
#else
    /* Iteration i fetches slice i into registers, multiplies slice i-1 from local memory (the global
     * reads in flight meanwhile), then stages slice i. */
    a_reg_t a_reg[A_REGS];
    b_reg_t b_reg[B_REGS];
    uint b_mask;
    for (int step = 0; step <= steps; ++step) {
        if (step < steps) {
            fetch_a(a_src, a_cols, a_reg, 0, t, step, kr);
            fetch_b(b_src, b_cols, b_reg, 0, t, step, kr, &b_mask);
        }
        if (step > 0) {
            const int prev = STAGES == 2 ? (step - 1) & 1 : 0;
            multiply_slice(a_tiles + prev * A_TILE, b_tiles + prev * B_TILE, acc, wm, wn, gid, tig EMU_ARG);
        }
        if (step < steps) {
#if STAGES == 1
            barrier(CLK_LOCAL_MEM_FENCE);
#endif
            const int cur = STAGES == 2 ? step & 1 : 0;
            stage(a_tiles + cur * A_TILE, b_tiles + cur * B_TILE, a_reg, b_reg, t);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
#endif

#if OUT_VEC
    __local float* restrict band = (__local float*)tiles + warp * 16 * OUT_LD;
    #pragma unroll
    for (int i = 0; i < TILES_M; ++i) {
        barrier(CLK_LOCAL_MEM_FENCE);    /* every warp is done with the tiles (i = 0) or its last band */
        #pragma unroll
        for (int j = 0; j < TILES_N; ++j) {
            #pragma unroll
            for (int half_m = 0; half_m < 2; ++half_m) {
                const int at = (i * TILES_N + j) * 4 + half_m * 2;
                *(__local float2*)(band + (gid + 8 * half_m) * OUT_LD + j * 8 + 2 * tig) = (float2)(acc[at], acc[at + 1]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int v = lane; v < 16 * (WARP_N / OUT_VEC); v += 32) {
            const int row = v / (WARP_N / OUT_VEC), at = v % (WARP_N / OUT_VEC) * OUT_VEC;
            const int m = m0 + wm + i * 16 + row, col = n0 + wn + at;
            if (m < GEMM_M && col < GEMM_N)    /* GEMM_N is a multiple of OUT_VEC: a run is all in or all out */
                STORE_OUT_RUN(g, m, col, band + row * OUT_LD + at);
        }
    }
#else
    #pragma unroll
    for (int i = 0; i < TILES_M; ++i) {
        #pragma unroll
        for (int half_m = 0; half_m < 2; ++half_m) {
            const int m = m0 + wm + i * 16 + gid + half_m * 8;
            if (m >= GEMM_M) continue;
            #pragma unroll
            for (int j = 0; j < TILES_N; ++j) {
                #pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int col = n0 + wn + j * 8 + 2 * tig + e;
                    if (col < GEMM_N)
                        STORE_SUM(m, col_base + col, acc[(i * TILES_N + j) * 4 + half_m * 2 + e]);
                }
            }
        }
    }
#endif
}

#if SPLIT > 1
/* The output (dw; y through the epilogue; dx) = the sum over splits, in order, of the partial sums
 * (deterministic). One work-item per output element, consecutive work-items on consecutive columns. */
#if DIRECTION == 1
#define REDUCE_OUT __global DATA_T* restrict y MIOPY_EPILOGUE_PARAMS
#elif DIRECTION == 2
#define REDUCE_OUT __global DATA_T* restrict x
#else
#define REDUCE_OUT __global DATA_T* restrict w
#endif
__kernel void reduce_splits(__global const uchar* restrict workspace, REDUCE_OUT)
{
    const int i = get_global_id(0);
    if (i >= OUT_COUNT) return;
    __global const float* restrict partial = (__global const float*)(workspace + PARTIAL_OFFSET);
    float sum = 0.0f;
    for (int s = 0; s < SPLIT; ++s)
        sum += partial[s * OUT_COUNT + i];
    const int gm = i / OUT_COLS, col = i - gm * OUT_COLS;
    STORE_OUT(gm / GEMM_M, gm % GEMM_M, col, sum);
}
#endif

#define TX_TILE 32
#define TX_ROWS 8
#if TRANSFORM_W && DIRECTION == 1
/* The weights, channel-fastest for the A operand (TRANSFORM_W, mma_addressing.h): wt[k][tap][c]. One work-item
 * per element of w; a k's block is C/G * R * S elements in both, so the scattered stores stay within it. */
__kernel void transform_weights(__global const DATA_T* restrict w, __global src_t* restrict wt)
{
    const int i = get_global_id(0);
    if (i >= K * CG * RS) return;
    const int k = i / (CG * RS), crs = i % (CG * RS), c = crs / RS, tap = crs % RS;
    src_t v = ((__global const src_t*)w)[W_AT(k, c, TAP_R(tap), TAP_S(tap))];
#if !MIOPY_HALF    /* rounded to TF32 once here (idempotent on the register path; cp.async copies it as is) */
    v = as_float(to_raw(v));
#endif
    wt[(k * RS + tap) * CG + c] = v;
}
#endif

#if (TRANSFORM_W && DIRECTION != 1) || TRANSFORM_X
/* dst = the transpose of src, a packed rows x cols matrix, through 32 x 32 tiles in local memory so reads and writes
 * are both coalesced; fp32 rounded to TF32 once here (idempotent on the register path; cp.async copies it as is).
 * The work-group's tile: columns from get_group_id(0), rows from get_group_id(1). */
inline void transpose_tile(__global const src_t* restrict src, __global src_t* restrict dst, const int rows,
                           const int cols, __local src_t (*tile)[TX_TILE + 1])
{
    const int col0 = get_group_id(0) * TX_TILE, row0 = get_group_id(1) * TX_TILE;
    const int tx = get_local_id(0), ty = get_local_id(1);
    #pragma unroll
    for (int i = ty; i < TX_TILE; i += TX_ROWS) {
        const int row = row0 + i, col = col0 + tx;
        if (row < rows && col < cols) {
            src_t v = src[(long)row * cols + col];
#if !MIOPY_HALF
            v = as_float(to_raw(v));
#endif
            tile[i][tx] = v;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
    for (int i = ty; i < TX_TILE; i += TX_ROWS) {
        const int row = row0 + tx, col = col0 + i;
        if (row < rows && col < cols)
            dst[(long)col * rows + row] = tile[tx][i];
    }
}
#endif

#if TRANSFORM_W && DIRECTION != 1
/* Backward-data: wt[g][c][tap][k within g], per group the transpose of w's KG x (CG * RS) matrix, through local
 * tiles (a store per element would scatter them KG elements apart). Grid: (CG * RS columns, KG rows / 32 * TX_ROWS,
 * G). */
__kernel __attribute__((reqd_work_group_size(TX_TILE, TX_ROWS, 1)))
void transform_weights(__global const DATA_T* restrict w, __global src_t* restrict wt)
{
    __local src_t tile[TX_TILE][TX_TILE + 1];
    const long group = (long)get_group_id(2) * KG * CG * RS;
    transpose_tile((__global const src_t*)w + group, wt + group, KG, CG * RS, tile);
}
#endif

#if TRANSFORM_X
/* x (forward, backward-weights) or dy (backward-data) copied channel-fastest, [n][h][w][c] as XB_AT / YB_AT read
 * it, after the weight copy in the workspace: per image the transpose of a TX_C x (TX_H * TX_W) matrix. */
__kernel __attribute__((reqd_work_group_size(TX_TILE, TX_ROWS, 1)))
void transform_x(__global const DATA_T* restrict src, __global uchar* restrict workspace)
{
    __local src_t tile[TX_TILE][TX_TILE + 1];
    const long image = (long)get_group_id(2) * TX_C * TX_H * TX_W;
    transpose_tile((__global const src_t*)src + image, (__global src_t*)(workspace + X_OFFSET) + image, TX_C,
                   TX_H * TX_W, tile);
}
#endif

#if PAD_DY
/* dy with each plane padded with zeros to PQ_A elements, after the channel-fastest copy of x in the workspace: one
 * work-item per element of the copy (consecutive work-items on consecutive elements of both). */
__kernel void pad_dy(__global const DATA_T* restrict y, __global uchar* restrict workspace)
{
    const int i = get_global_id(0);
    if (i >= N * K * PQ_A) return;
    const int plane = i / PQ_A, pq = i - plane * PQ_A;
    ((__global src_t*)(workspace + DY_OFFSET))[i] = pq < P * Q ? ((__global const src_t*)y)[plane * (P * Q) + pq]
                                                               : (src_t)0;
}
#endif
