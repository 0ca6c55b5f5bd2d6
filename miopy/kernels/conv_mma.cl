/* Implicit-GEMM convolution on NVIDIA tensor cores through inline PTX mma.sync, all three directions.
 *
 * The GEMM per group g is the one of conv_direct_local.cl:  out[m][col] = sum_kk A[m][kk] * B[kk][col]
 *   forward           m = k (K/G)   col = (n, p, q)   kk = (c, r, s)   A = w    B = x gathered (im2col)
 *   backward-data     m = c (C/G)   col = (n, h, w)   kk = (k, r, s)   A = w    B = dy gathered
 *   backward-weights  m = k (K/G)   col = (c, r, s)   kk = (n, p, q)   A = dy   B = x gathered
 * A work-group of WARPS_M x WARPS_N warps computes an M_BLK x N_BLK tile; each warp a
 * (M_BLK/WARPS_M) x (N_BLK/WARPS_N) block of 16x8 mma tiles whose sums stay in registers (fp32).
 * Each step stages a K_BLK slice of A and B in local memory (fetched into registers one step ahead,
 * converted once: fp32 -> TF32 with cvt.rna, fp16 kept as raw bits), and every warp runs K_BLK/MMA_K
 * mma sub-steps over it. Local tiles are padded so every fragment read of a warp hits 32 distinct banks:
 *   A as [m][kk], rows K_BLK + PAD_K long (PAD_K = 4 words);
 *   B as [kk][col], rows N_BLK + 8 long (forward, backward-data: gathered along col), or as [col][kk]
 *   like A (backward-weights: gathered along kk). Stores from the fetch pattern are conflict-free too.
 *
 * Data types (types.h): MIOPY_HALF=0: fp32 tensors, mma.m16n8k8 .tf32 (10-bit mantissa products, fp32
 * sums); MIOPY_HALF=1: fp16 tensors, mma.m16n8k16 .f16 with fp32 sums, fp16 output rounded once.
 * The hardware rounds each product's operands only; sums are fp32 (see docs/tensor_cores.md for the
 * error bound the tests use).
 *
 * Defines (all ints):
 *   N C H W K R S P Q G PAD_H PAD_W STRIDE_H STRIDE_W DIL_H DIL_W   problem (see conv_naive.cl)
 *   XS_N XS_C XS_H XS_W, WS_K WS_C WS_R WS_S, YS_N YS_K YS_P YS_Q   element strides of x, w, y
 *   DIRECTION        1 forward, 2 backward-data, 4 backward-weights
 *   M_BLK N_BLK K_BLK   work-group tile and inner slice (K_BLK a multiple of MMA_K)
 *   WARPS_M WARPS_N  warps per work-group along m and col; local size (32*WARPS_M*WARPS_N, 1, 1)
 *   STAGES           local buffers: 2 = double buffering (one barrier per step), 1 = one buffer;
 *                    3, 4 (CP_ASYNC only): copies of slice s + STAGES - 1 in flight while slice s is multiplied
 *   CP_ASYNC         1: slices copied global -> local by cp.async (sm_80+) without passing through registers,
 *                    zero-filled (src-size 0) where the gather reads padding; STAGES >= 2 buffers in a ring,
 *                    cp.async.commit_group per slice, cp.async.wait_group STAGES-2 and one barrier per step.
 *                    fp32: A and B by 4-byte copies (A by 16-byte .cg copies with VECTOR_A), converted to TF32
 *                    when the fragments are read (the weight copy of TRANSFORM_W is rounded already).
 *                    fp16: A by 16-byte copies with VECTOR_A, else by 4-byte pairs along k (A_PAIRS: k contiguous,
 *                    sizes even, as VECTOR_A's checks with 2-vectors); B keeps the register path (a 2-byte element
 *                    is below cp.async's 4-byte minimum), staged after the multiply of each step, except
 *                    (A_PAIRS in backward-weights with P*Q odd) pairs that are misaligned, straddle two dy planes
 *                    or end the tensor, which are read and stored element by element (A_PAIR_TAIL), and
 *                    with VECTOR_B, where each vector that is one aligned copy (or all zeros) goes by cp.async
 *                    0: fetched into registers one step ahead, converted, stored (the STAGES 1-2 loop)
 *   CHANNEL_BLOCKS   forward / backward-data: 1 steps over (K_BLK channels, one tap); 0 the flat index
 *   SPLIT, SPLIT_CHUNK  split-K: partial sums over SPLIT chunks of the inner loop, summed in a fixed order by
 *                    reduce_splits (deterministic; forward applies the epilogue there): backward-weights chunks
 *                    of SPLIT_CHUNK elements of N*P*Q (a multiple of K_BLK), forward / backward-data the
 *                    slices shared out evenly (split s takes steps s*T/SPLIT up to (s+1)*T/SPLIT). Partials are fp32 [split][g][m][col] in the workspace, after
 *                    the weight copy of TRANSFORM_W (at PARTIAL_OFFSET bytes)
 *   TRANSFORM_W      forward / backward-data with CHANNEL_BLOCKS: 1 reads A from a copy of the weights
 *                    that transform_weights lays out channel-fastest (forward wt[k][tap][c], backward-data
 *                    wt[g][c][tap][k within g]), so a slice's rows are consecutive in memory (coalesced);
 *                    0 reads w in place (rows R*S or C*R*S elements apart)
 *   TRANSFORM_X      1 reads B from a channel-fastest (NHWC) copy of the gathered tensor (x forward and
 *                    backward-weights, dy backward-data) that transform_x writes into the workspace after the weight
 *                    copy (fp32 rounded to TF32 there), as 16-byte vectors of consecutive channels (one bounds check
 *                    and one cp.async per vector, fp16 included; the channel count C/G or K/G a multiple of the
 *                    vector). Forward / backward-data (with CHANNEL_BLOCKS): a slice's K_BLK channels of one column
 *                    are consecutive, so vectors run along k and B is staged [col][kk] like A (ldmatrix without
 *                    .trans). Backward-weights: the columns are ordered (tap, c) with c fastest, so vectors run along
 *                    the columns (B_VEC channels of one tap at one n, p, q) and B is staged [kk][col]
 *   VECTOR_A         1: A slices fetched as 16-byte vectors of consecutive k (float4 / 8 halves) where k is
 *                    contiguous in memory (transformed weights, 1x1 forward weights, dy planes in
 *                    backward-weights) and the channel / plane sizes are multiples of the vector
 *   VECTOR_B         0, or 2 / 4 / 8: forward / backward-data with CHANNEL_BLOCKS and stride 1 along w (W and Q
 *                    multiples of it): each work-item gathers B as VECTOR_B consecutive columns (one output
 *                    row's neighbours, neighbours in memory too), read as one vector (or one cp.async of
 *                    VECTOR_B elements) where the tap keeps them aligned and all inside or all outside the image,
 *                    else element by element; staged with one local store
 *   LDMATRIX         1: fragments read with ldmatrix.x4 (A always; B when fp16 or laid out [col][kk]);
 *                    0: one 32-bit local read per register
 *   STAGED_STORE     0: each lane stores its sums where the mma fragments leave them (8 rows x 4 lanes of 2
 *                    columns per warp store); 1, 2, 4 or 8: each warp passes its sums through local memory one
 *                    16-row band at a time and stores rows of that many consecutive output elements per lane (16
 *                    bytes at most), where the output's columns are runs of consecutive elements of that length
 *                    (P*Q forward, H*W backward-data, C/G*R*S backward-weights; no split, no phases, no
 *                    TRANSFORM_X in backward-weights), the bands within the local tiles.
 *   PAD_DY           1 (backward-weights, fp16): A reads a copy of dy whose planes are padded with zeros to a multiple
 *                    of 8 elements (pad_dy writes it into the workspace after the channel-fastest copy), so odd
 *                    planes take 16-byte vectors and cp.async too; the inner loop runs over N * PQ_A terms and B
 *                    reads zeros at the padding's terms
 *   COL_OUT          1 (forward, one group, no split): the sums are backward-data's column matrix, fp32
 *                    [m][col] at PARTIAL_OFFSET in the workspace (y is not written) for col2im to gather: the
 *                    COL2IM mode of the solver, whose problem here is the 1x1 forward GEMM over dy (see mma.py)
 *   WGMMA            1 (Hopper; forward / backward-data with CHANNEL_BLOCKS, TRANSFORM_W, TRANSFORM_X, VECTOR_A,
 *                    CP_ASYNC; backward-weights with CP_ASYNC, fp16 with TRANSFORM_X and VECTOR_A, TF32 without
 *                    TRANSFORM_X, its operands then truncated to TF32, see tf32_bits): the multiply is
 *                    Hopper's wgmma.mma_async, m64nN_BLK per warpgroup of four warps over its 64 rows of the tile,
 *                    reading both operands from local memory through descriptors (no ldmatrix, no fragments in
 *                    registers), written as PTX comments that miopy.ptx_patch makes live (the OpenCL compiler's
 *                    target, sm_90, refuses them). WARPS_M = M_BLK / 16 (warp w owns rows 16w.. as an mma.sync warp
 *                    of WARP_M 16 would: the epilogue is unchanged), WARPS_N = 1. A's tiles (and B's forward /
 *                    backward-data) are K-major rows of K_BLK elements, unpadded, swizzled as wgmma's 32-, 64- or
 *                    128-byte modes read them (SW_AT); backward-weights' B from the channel-fastest copy, whose
 *                    vectors run along the columns, is MN-major in blocks of 64 columns (B_AT) and read by wgmma's
 *                    transposed B (16-bit types only).
 *                    A step's wgmmas are waited for before its barrier. With MMA_EMULATE the same layout runs
 *                    through the emulated mma.sync (tests).
 *   MIOPY_HALF       0 fp32 data with TF32 mma, 1 fp16 data with f16 mma
 *   MMA_EMULATE      1: no PTX; each mma is computed by the warp through local memory with the same
 *                    fragment layout and TF32 rounding (tests of the index mapping on any OpenCL device)
 */
#include "types.h"
#include "epilogue.h"
#include "wgmma.h"

#if !defined(DIRECTION) || !defined(M_BLK) || !defined(N_BLK) || !defined(K_BLK) || !defined(WARPS_M) \
    || !defined(WARPS_N) || !defined(STAGES) || !defined(CHANNEL_BLOCKS) || !defined(SPLIT)
#error "conv_mma.cl needs DIRECTION, M_BLK, N_BLK, K_BLK, WARPS_M, WARPS_N, STAGES, CHANNEL_BLOCKS, SPLIT"
#endif
#ifndef MMA_EMULATE
#define MMA_EMULATE 0
#endif
#ifndef TRANSFORM_W
#define TRANSFORM_W 0
#endif
#ifndef LDMATRIX
#define LDMATRIX 0
#endif
#ifndef VECTOR_A
#define VECTOR_A 0
#endif
#ifndef CP_ASYNC
#define CP_ASYNC 0
#endif
#ifndef VECTOR_B
#define VECTOR_B 0
#endif
#ifndef TRANSFORM_X
#define TRANSFORM_X 0
#endif
#ifndef STAGED_STORE
#define STAGED_STORE 0
#endif
#ifndef COL_OUT
#define COL_OUT 0
#endif
#ifndef PAD_DY
#define PAD_DY 0
#endif
#ifndef WGMMA
#define WGMMA 0
#endif
#ifndef WGMMA_PROBE    /* benchmarks/wgmma_ab.py: 1 no proxy fence, 2 no copies in the loop, 3 no wgmma, 4 see there,
                        * 6 no copies of B, 7 no copies of A */
#define WGMMA_PROBE 0
#endif
#if WGMMA && DIRECTION != 4 && (!CHANNEL_BLOCKS || !TRANSFORM_W || !TRANSFORM_X || !VECTOR_A || !CP_ASYNC || LDMATRIX)
#error "WGMMA: forward / backward-data with CHANNEL_BLOCKS, TRANSFORM_W, TRANSFORM_X, VECTOR_A, CP_ASYNC, no LDMATRIX"
#endif
#if WGMMA && DIRECTION == 4 && (!CP_ASYNC || LDMATRIX || (MIOPY_HALF ? !TRANSFORM_X || !VECTOR_A : TRANSFORM_X))
#error "WGMMA: backward-weights with CP_ASYNC, no LDMATRIX; fp16 with TRANSFORM_X and VECTOR_A, TF32 without TRANSFORM_X"
#endif
#if WGMMA && (WARPS_N != 1 || M_BLK != 16 * WARPS_M || M_BLK % 64)
#error "WGMMA: warpgroups of four warps own 64 rows each (WARPS_M = M_BLK / 16, WARPS_N = 1)"
#endif
#if PAD_DY && (DIRECTION != 4 || !MIOPY_HALF)
#error "PAD_DY: fp16 backward-weights"
#endif
#define PQ_A (PAD_DY ? (P * Q + 7) / 8 * 8 : P * Q)    /* terms of one dy plane as A reads it */
#if COL_OUT && (DIRECTION != 1 || SPLIT > 1 || G != 1)
#error "COL_OUT: forward, one group, no split"
#endif
#if TRANSFORM_X && ((DIRECTION != 4 && !CHANNEL_BLOCKS) || VECTOR_B)
#error "TRANSFORM_X needs CHANNEL_BLOCKS (forward, backward-data) and no VECTOR_B"
#endif
#if VECTOR_B && (DIRECTION == 4 || !CHANNEL_BLOCKS || STRIDE_W != 1 || W % VECTOR_B || Q % VECTOR_B)
#error "VECTOR_B needs forward / backward-data with CHANNEL_BLOCKS, stride 1 along w, W and Q multiples of it"
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if MMA_EMULATE
#undef LDMATRIX
#define LDMATRIX 0
#endif
#if TRANSFORM_W && (DIRECTION == 4 || !CHANNEL_BLOCKS)
#error "TRANSFORM_W needs CHANNEL_BLOCKS (forward or backward-data)"
#endif
#if CP_ASYNC && (STAGES < 2 || STAGES > 4)
#error "CP_ASYNC needs STAGES 2, 3 or 4"
#endif
#if !CP_ASYNC && STAGES > 2
#error "STAGES > 2 needs CP_ASYNC"
#endif
/* fp16 A by cp.async without VECTOR_A: 4-byte pairs of consecutive k (cp.async copies 4 bytes at least) */
#define A_PAIRS (CP_ASYNC && MIOPY_HALF && !VECTOR_A)
/* backward-weights pairs with P*Q odd: a pair may be misaligned, straddle two dy planes or end the tensor; such
 * pairs are read and stored element by element (synchronously) */
#define A_PAIR_TAIL (A_PAIRS && DIRECTION == 4 && PQ_A % 2)
/* Which operands cp.async copies (the others go through registers): A always, B when its elements are 4 bytes or
 * it comes from the channel-fastest copy (16-byte vectors) */
#define A_ASYNC CP_ASYNC
#define B_ASYNC (CP_ASYNC && (!MIOPY_HALF || TRANSFORM_X))
/* fp16 B with VECTOR_B: vectors that are one aligned copy (or all zero) go by cp.async, the rest by registers */
#define B_MIXED (CP_ASYNC && MIOPY_HALF && VECTOR_B)

#define CG (C / G)
#define KG (K / G)
#define RS (R * S)
#define X_AT(n, c, h, w) ((n) * XS_N + (c) * XS_C + (h) * XS_H + (w) * XS_W)
#define W_AT(k, c, r, s) ((k) * WS_K + (c) * WS_C + (r) * WS_R + (s) * WS_S)
#define Y_AT(n, k, p, q) ((n) * YS_N + (k) * YS_K + (p) * YS_P + (q) * YS_Q)
/* Where B reads the gathered tensor: in place, or (TRANSFORM_X) in its channel-fastest copy */
#if TRANSFORM_X && DIRECTION != 2
#define XB_AT(n, c, h, w) ((((n) * H + (h)) * W + (w)) * C + (c))
#else
#define XB_AT(n, c, h, w) X_AT(n, c, h, w)
#endif
#if TRANSFORM_X && DIRECTION == 2
#define YB_AT(n, k, p, q) ((((n) * P + (p)) * Q + (q)) * K + (k))
#else
#define YB_AT(n, k, p, q) Y_AT(n, k, p, q)
#endif

#define THREADS (32 * WARPS_M * WARPS_N)
#define WARP_M (M_BLK / WARPS_M)
#define WARP_N (N_BLK / WARPS_N)
#define TILES_M (WARP_M / 16)
#define TILES_N (WARP_N / 8)
#define OFF_IMAGE (-(1 << 28))

#if MIOPY_HALF
#define MMA_K 16
typedef ushort src_t;        /* what is read from global memory: fp16 bits */
#define SRC_BASE ushort      /* the scalar type names, for vector types (VECTOR_B) */
#define RAW_BASE ushort
typedef ushort raw_t;        /* what local memory holds */
#define PAD_K 8              /* halves: 4 words */
#else
#define MMA_K 8
typedef float src_t;
#define SRC_BASE float
#define RAW_BASE uint
typedef uint raw_t;          /* TF32 bits */
#define PAD_K 4
#endif
#define PAD_N 8

#ifndef PHASED
#define PHASED 0
#endif
#if PHASED && (DIRECTION != 2 || DIL_H != 1 || DIL_W != 1)
#error "PHASED is backward-data with dilation 1"
#endif
#if PHASED    /* backward-data in STRIDE_H x STRIDE_W phases (see PHASED below) */
#define PHASES (STRIDE_H * STRIDE_W)
#define HP ((H + STRIDE_H - 1) / STRIDE_H)
#define WP ((W + STRIDE_W - 1) / STRIDE_W)
#else
#define PHASES 1
#endif

#if DIRECTION == 1
#define GEMM_M KG
#define GEMM_N (N * P * Q)
#define GEMM_K (CG * RS)
#define B_KK_FAST TRANSFORM_X
#elif DIRECTION == 2
#define GEMM_M CG
#if PHASED
#define GEMM_N (N * HP * WP)    /* the columns of one phase */
#else
#define GEMM_N (N * H * W)
#endif
#define GEMM_K (KG * RS)
#define B_KK_FAST TRANSFORM_X
#else
#define GEMM_M KG
#define GEMM_N (CG * RS)
#define GEMM_K (N * PQ_A)
#define B_KK_FAST (!TRANSFORM_X)
#endif

/* Local tiles: element (kk, idx) of a slice. */
#if WGMMA
/* K-major rows of K_BLK elements (SW_ROW bytes: 32, 64 or 128), the 16-byte chunks of row r XOR-swizzled by address
 * bits 7.. as wgmma's 32-, 64- and 128-byte swizzle modes read them (tiles 1024-byte aligned): a row's chunks, one
 * global run, land in distinct banks (the no-swizzle core matrices put them 128 bytes apart, in one bank group:
 * 1.7x slower copies on an H100, benchmarks/results/h100-wgmma-ab.json) */
#define CORE_K (16 / (MIOPY_HALF ? 2 : 4))
#define SW_ROW (K_BLK * (MIOPY_HALF ? 2 : 4))
#if SW_ROW != 32 && SW_ROW != 64 && SW_ROW != 128
#error "WGMMA: K_BLK rows of 32, 64 or 128 bytes (a swizzle mode)"
#endif
#define SW_MODE(row_bytes) ((row_bytes) == 128 ? 1 : (row_bytes) == 64 ? 2 : 3)   /* the descriptor's layout type */
/* element c of row r of a swizzled matrix of `len`-element rows of row_bytes bytes */
#define SWIZZLED(c, r, len, row_bytes) ((r) * (len) + ((((c) / CORE_K) ^ (((r) * (row_bytes) >> 7) \
                                         & ((row_bytes) / 16 - 1))) * CORE_K) + (c) % CORE_K)
#define SW_AT(kk, r) SWIZZLED(kk, r, K_BLK, SW_ROW)
#define A_AT(kk, m) SW_AT(kk, m)
#define A_TILE (M_BLK * K_BLK)
#if DIRECTION == 4 && TRANSFORM_X
/* backward-weights (fp16): B's vectors run along the columns, so B is MN-major for wgmma's transposed B: blocks
 * of B_MN columns (rows of BN_ROW = 2 x B_MN bytes, 128 at most: a swizzle mode), each K_BLK rows deep; a
 * descriptor's leading byte offset steps from block to block, its stride byte offset by 8 rows (see b_desc) */
#define BN_ROW (N_BLK * 2 < 128 ? N_BLK * 2 : 128)
#define B_MN (BN_ROW / 2)
#define B_AT(kk, n) ((n) / B_MN * (K_BLK * B_MN) + SWIZZLED((n) % B_MN, kk, B_MN, BN_ROW))
#else
#define B_AT(kk, n) SW_AT(kk, n)
#endif
#define B_TILE (N_BLK * K_BLK)
#else
#define A_LD (K_BLK + PAD_K)
#define A_AT(kk, m) ((m) * A_LD + (kk))
#define A_TILE (M_BLK * A_LD)
#if B_KK_FAST
#define B_LD (K_BLK + PAD_K)
#define B_AT(kk, n) ((n) * B_LD + (kk))
#define B_TILE (N_BLK * B_LD)
#else
#define B_LD (N_BLK + PAD_N)
#define B_AT(kk, n) ((kk) * B_LD + (n))
#define B_TILE (K_BLK * B_LD)
#endif
#endif

/* How a work-item fetches a K_BLK x BLK slice (as in conv_direct_local.cl): the fast index varies across
 * neighbouring work-items. Per work-item NKK rows kk = T_KK + i * KK_STEP, NIDX columns T_IDX + j * IDX_STEP. */
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
#if TRANSFORM_X
#define B_VEC (MIOPY_HALF ? 8 : 4)  /* 16-byte vectors of consecutive channels */
typedef uint4 b_reg_t;             /* raw bits: TF32 (rounded by transform_x) or 8 halves */
#else
#define B_REGS (K_BLK * N_BLK / THREADS)
typedef src_t b_reg_t;
#endif
#if TRANSFORM_X && DIRECTION == 4
/* vectors of B_VEC columns (channels of one tap) at one kk; per work-item B_NVK rows kk = t / B_VSTEP + i * B_VROWS,
 * B_NVJ vectors */
#define B_VGROUPS (N_BLK / B_VEC)
#define B_VSTEP (THREADS < B_VGROUPS ? THREADS : B_VGROUPS)
#define B_VROWS (THREADS / B_VSTEP)
#define B_NVK (K_BLK / B_VROWS)
#define B_NVJ (B_VGROUPS / B_VSTEP)
#define B_REGS (B_NVK * B_NVJ)
#define B_COL_OF(t, j) (((t) % B_VSTEP + (j) * B_VSTEP) * B_VEC)
#define B_NCOLS B_NVJ
#elif TRANSFORM_X
/* per work-item the vector at kk = B_KK_OF(t) of columns B_COL_OF(t, j) */
#define B_GROUPS (K_BLK / B_VEC)
#define B_VROWS (THREADS / B_GROUPS)
#define B_REGS (N_BLK / B_VROWS)
#define B_KK_OF(t) ((t) % B_GROUPS * B_VEC)
#define B_COL_OF(t, j) ((t) / B_GROUPS + (j) * B_VROWS)
#define B_NCOLS B_REGS
#elif VECTOR_B
/* VECTOR_B: vectors of VECTOR_B columns; per work-item B_NVK rows kk = B_T_VK + i * B_VROWS, B_NVJ vectors */
#define B_VGROUPS (N_BLK / VECTOR_B)
#define B_VSTEP (THREADS < B_VGROUPS ? THREADS : B_VGROUPS)
#define B_VROWS (THREADS / B_VSTEP)
#define B_NVK (K_BLK / B_VROWS)
#define B_NVJ (B_VGROUPS / B_VSTEP)
#define B_T_VK (t / B_VSTEP)
#define B_COL_OF(t, j) (((t) % B_VSTEP + (j) * B_VSTEP) * VECTOR_B)
#define B_NCOLS B_NVJ
#else
#define B_COL_OF(t, j) (B_T_IDX + (j) * B_IDX_STEP)
#define B_NCOLS B_NIDX
#endif

/* -- the inner dimension (as conv_direct_local.cl) ----------------------------------------------------- */
/* PHASED (backward-data with stride > 1, dilation 1): dx splits into STRIDE_H x STRIDE_W phases (h % STRIDE_H,
 * w % STRIDE_W). Only every STRIDE_H-th filter row reaches a phase's pixels, from r0 = (ph + PAD_H) % STRIDE_H
 * (dy row p = h' + (ph + PAD_H) / STRIDE_H - tr for the pixel's phase row h' and the phase tap r0 + tr *
 * STRIDE_H; likewise along w), so each phase is a stride-1 GEMM over its own taps, without the taps that land
 * between outputs. Grid dimension 2 counts phases fastest (then splits, then groups); a phase's columns are
 * (n, h', w') over HP x WP (the pixels past H or W read nothing and store nothing); a phase that no tap
 * reaches (a 1x1 filter's odd rows) stores zeros. */

typedef struct {
    int chan, tap, valid;
#if PHASED
    int tr, ts;      /* the phase's tap (tap = (r0 + tr * STRIDE_H) * S + s0 + ts * STRIDE_W) */
#endif
} inner_t;

/* The slices one work-group sums: steps begin..end (elements of N*P*Q in backward-weights), and its phase. */
typedef struct {
    int begin, end;
#if PHASED
    int ph, pw, r0, s0, taps_w, taps;
#endif
} range_t;

#define TAP_R(tap) ((int)((uint)(tap) / S))
#define TAP_S(tap) ((int)((uint)(tap) % S))

inline inner_t make_inner(int chan, int tap, int valid)
{
    inner_t in;
    in.chan = chan, in.tap = tap, in.valid = valid;
    return in;
}

#if DIRECTION == 4
#define STEPS(kr) (((kr).end - (kr).begin + K_BLK - 1) / K_BLK)
inline inner_t inner_at(int step, int row, range_t kr)
{
    const int kk = kr.begin + step * K_BLK + row;
    return make_inner(kk, 0, kk < kr.end);
}
#elif PHASED
inline inner_t phase_inner(range_t kr, int chan, int t, int valid)
{
    inner_t in = make_inner(chan, 0, valid);
    in.tr = (int)((uint)t / kr.taps_w), in.ts = t - in.tr * kr.taps_w;
    in.tap = (kr.r0 + in.tr * STRIDE_H) * S + kr.s0 + in.ts * STRIDE_W;
    return in;
}
#if CHANNEL_BLOCKS
#define CHANS KG
#define PHASE_STEPS(taps) (((KG + K_BLK - 1) / K_BLK) * (taps))
inline inner_t inner_at(int step, int row, range_t kr)
{
    step += kr.begin;
    const int block = (int)((uint)step / kr.taps), chan = block * K_BLK + row;
    return phase_inner(kr, chan, step - block * kr.taps, KG % K_BLK == 0 || chan < KG);
}
#else
#define PHASE_STEPS(taps) ((KG * (taps) + K_BLK - 1) / K_BLK)
inline inner_t inner_at(int step, int row, range_t kr)
{
    const int kk = (step + kr.begin) * K_BLK + row, chan = (int)((uint)kk / kr.taps);
    return phase_inner(kr, chan, kk - chan * kr.taps, kk < KG * kr.taps);
}
#endif
#elif CHANNEL_BLOCKS
#define CHANS (DIRECTION == 1 ? CG : KG)
#define TOTAL_STEPS (((CHANS + K_BLK - 1) / K_BLK) * RS)
inline inner_t inner_at(int step, int row, range_t kr)
{
    step += kr.begin;
    const int block = (int)((uint)step / RS), chan = block * K_BLK + row;
    return make_inner(chan, step - block * RS, CHANS % K_BLK == 0 || chan < CHANS);
}
#else
#define TOTAL_STEPS ((GEMM_K + K_BLK - 1) / K_BLK)
inline inner_t inner_at(int step, int row, range_t kr)
{
    const int kk = (step + kr.begin) * K_BLK + row, chan = (int)((uint)kk / RS);
    return make_inner(chan, kk - chan * RS, GEMM_K % K_BLK == 0 || kk < GEMM_K);
}
#endif
#if DIRECTION != 4
/* forward / backward-data: begin, end count steps (a split's slices: inner_at adds begin to the step) */
#define STEPS(kr) ((kr).end - (kr).begin)
#endif

/* The slices of split `split` (0 without SPLIT) of phase `phase` (0 unless PHASED). */
inline range_t make_range(int split, int phase)
{
    range_t kr;
#if PHASED
    kr.ph = phase / STRIDE_W, kr.pw = phase % STRIDE_W;
    kr.r0 = (kr.ph + PAD_H) % STRIDE_H, kr.s0 = (kr.pw + PAD_W) % STRIDE_W;
    kr.taps_w = kr.s0 < S ? (S - kr.s0 + STRIDE_W - 1) / STRIDE_W : 0;
    kr.taps = (kr.r0 < R ? (R - kr.r0 + STRIDE_H - 1) / STRIDE_H : 0) * kr.taps_w;
    const int total = PHASE_STEPS(kr.taps);
#elif DIRECTION == 4
    const int total = GEMM_K;
#else
    const int total = TOTAL_STEPS;
#endif
#if SPLIT > 1 && DIRECTION == 4
    kr.begin = split * SPLIT_CHUNK, kr.end = min(total, kr.begin + SPLIT_CHUNK);
#elif SPLIT > 1    /* slices shared out evenly (a phase with fewer slices than splits leaves some empty) */
    kr.begin = split * total / SPLIT, kr.end = (split + 1) * total / SPLIT;
#else
    kr.begin = 0, kr.end = total;
#endif
    return kr;
}

typedef struct { int off, h, w; } tap_t;

inline tap_t make_tap(int off, int h, int w)
{
    tap_t tap;
    tap.off = off, tap.h = h, tap.w = w;
    return tap;
}

/* -- operand addressing, per direction (as conv_direct_local.cl) --------------------------------------- */
#if DIRECTION == 1
#if TRANSFORM_W
inline int a_col(int g, int m) { return (g * KG + m) * RS * CG; }
inline int a_row(inner_t in) { return in.tap * CG + in.chan; }
#else
inline int a_col(int g, int m) { return (g * KG + m) * WS_K; }
inline int a_row(inner_t in) { return W_AT(0, in.chan, TAP_R(in.tap), TAP_S(in.tap)); }
#endif
inline tap_t b_col(int g, int col, range_t kr)
{
    const int n = col / (P * Q), pq = col % (P * Q);
    const int h = (pq / Q) * STRIDE_H - PAD_H, w = (pq % Q) * STRIDE_W - PAD_W;
    return make_tap(XB_AT(n, g * CG, h, w), col < GEMM_N ? h : OFF_IMAGE, w);
}
inline tap_t b_row(inner_t in)
{
    const int dh = TAP_R(in.tap) * DIL_H, dw = TAP_S(in.tap) * DIL_W;
    return make_tap(XB_AT(0, in.chan, dh, dw), dh, dw);
}
/* Offset of B's element at (row, col), or -1 where it reads zero (padding) */
inline int b_offset(tap_t row, tap_t col)
{
    const int h = col.h + row.h, w = col.w + row.w;
    return ((uint)h < H && (uint)w < W) ? col.off + row.off : -1;
}
/* The column e to the right of col in the same output row (stride 1: one element to the right in x) */
inline tap_t col_plus(tap_t col, int e) { return make_tap(col.off + e, col.h, col.w + e); }
#elif DIRECTION == 2
#if TRANSFORM_W
inline int a_col(int g, int m) { return (g * CG + m) * RS * KG; }
inline int a_row(inner_t in) { return in.tap * KG + in.chan; }
#else
inline int a_col(int g, int m) { return W_AT(g * KG, m, 0, 0); }
inline int a_row(inner_t in) { return W_AT(in.chan, 0, TAP_R(in.tap), TAP_S(in.tap)); }
#endif
#if PHASED
/* Column (n, h', w') of the phase: dx pixel (ph + h' * STRIDE_H, pw + w' * STRIDE_W); h and w hold dy's row and
 * column for the phase's first tap (tr = ts = 0) */
inline tap_t b_col(int g, int col, range_t kr)
{
    const int n = col / (HP * WP), hw = col % (HP * WP), hp = hw / WP, wp = hw % WP;
    const bool inside = col < GEMM_N && kr.ph + hp * STRIDE_H < H && kr.pw + wp * STRIDE_W < W;
    return make_tap(YB_AT(n, g * KG, 0, 0), inside ? hp + (kr.ph + PAD_H) / STRIDE_H : OFF_IMAGE,
                    wp + (kr.pw + PAD_W) / STRIDE_W);
}
inline tap_t b_row(inner_t in) { return make_tap(YB_AT(0, in.chan, 0, 0), -in.tr, -in.ts); }
/* Offset of B's element at (row, col), or -1 where the tap falls outside dy (zero) */
inline int b_offset(tap_t row, tap_t col)
{
    const uint p = col.h + row.h, q = col.w + row.w;
    return p < P && q < Q ? col.off + row.off + YB_AT(0, 0, (int)p, (int)q) : -1;
}
#else
inline tap_t b_col(int g, int col, range_t kr)
{
    const int n = col / (H * W), hw = col % (H * W);
    return make_tap(YB_AT(n, g * KG, 0, 0), col < GEMM_N ? hw / W + PAD_H : OFF_IMAGE, hw % W + PAD_W);
}
inline tap_t b_row(inner_t in)
{
    return make_tap(YB_AT(0, in.chan, 0, 0), -TAP_R(in.tap) * DIL_H, -TAP_S(in.tap) * DIL_W);
}
/* Offset of B's element at (row, col), or -1 where the tap misses every output (zero) */
inline int b_offset(tap_t row, tap_t col)
{
    const uint ph = col.h + row.h, qw = col.w + row.w;
    const bool inside = ph < P * STRIDE_H && qw < Q * STRIDE_W && ph % STRIDE_H == 0 && qw % STRIDE_W == 0;
    return inside ? col.off + row.off + YB_AT(0, 0, (int)(ph / STRIDE_H), (int)(qw / STRIDE_W)) : -1;
}
#endif
/* The column e to the right of col in the same row of dx (its dy element moves with qw) */
inline tap_t col_plus(tap_t col, int e) { return make_tap(col.off, col.h, col.w + e); }
#else
#if PAD_DY    /* dy's copy [n][k][PQ_A]: term (n, pq) of row k at n * K * PQ_A + k * PQ_A + pq */
inline int a_col(int g, int m) { return (g * KG + m) * PQ_A; }
inline int a_row(inner_t in) { return (int)((uint)in.chan / PQ_A) * ((K - 1) * PQ_A) + in.chan; }
#else
inline int a_col(int g, int m) { return (g * KG + m) * YS_K; }
inline int a_row(inner_t in)
{
    const int n = (int)((uint)in.chan / (P * Q)), pq = in.chan - n * (P * Q);
    return Y_AT(n, 0, pq / Q, pq % Q);
}
#endif
inline tap_t b_col(int g, int col, range_t kr)
{
#if TRANSFORM_X    /* columns (tap, c), c fastest */
    const int c = col % CG, rs = col / CG;
#else
    const int c = col / RS, rs = col % RS;
#endif
    const int h = (rs / S) * DIL_H - PAD_H, w = (rs % S) * DIL_W - PAD_W;
    return make_tap(XB_AT(0, g * CG + c, h, w), col < GEMM_N ? h : OFF_IMAGE, w);
}
inline tap_t b_row(inner_t in)
{
    const int n = (int)((uint)in.chan / PQ_A), pq = in.chan - n * PQ_A;
    const int h = (int)((uint)pq / Q) * STRIDE_H, w = (int)((uint)pq % Q) * STRIDE_W;
    return make_tap(XB_AT(n, 0, h, w), PQ_A == P * Q || pq < P * Q ? h : OFF_IMAGE, w);   /* padding: zeros */
}
/* Offset of B's element at (row, col), or -1 where it reads zero (padding) */
inline int b_offset(tap_t row, tap_t col)
{
    const int h = col.h + row.h, w = col.w + row.w;
    return ((uint)h < H && (uint)w < W) ? col.off + row.off : -1;
}
#endif

/* -- cp.async (global -> local without registers) ---------------------------------------------------------
 * The local address is taken as the LDMATRIX path takes it; the source is the global address (NVIDIA's generic
 * address of global memory is the global one). src-size 0 copies nothing and zero-fills the destination: the
 * source is then the tensor's base, never read. MMA_EMULATE: synchronous stand-ins with the same effect. */
#if !MMA_EMULATE
inline uint local_address(__local const raw_t* p) { return (uint)(size_t)p; }
#endif

#if CP_ASYNC && MMA_EMULATE
inline void cp_async4(__local raw_t* dst, __global const src_t* src, bool valid)
{
    *(__local uint*)dst = valid ? *(__global const uint*)src : 0u;
}
inline void cp_async8(__local raw_t* dst, __global const src_t* src, bool valid)
{
    *(__local uint2*)dst = valid ? *(__global const uint2*)src : (uint2)(0u);
}
inline void cp_async16(__local raw_t* dst, __global const src_t* src, bool valid)
{
    *(__local uint4*)dst = valid ? *(__global const uint4*)src : (uint4)(0u);
}
inline void cp_commit(void) {}
inline void cp_wait(void) {}
#elif CP_ASYNC
inline void cp_async4(__local raw_t* dst, __global const src_t* src, bool valid)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;"
                 :: "r"(local_address(dst)), "l"((ulong)src), "r"(valid ? 4u : 0u) : "memory");
}
inline void cp_async8(__local raw_t* dst, __global const src_t* src, bool valid)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;"
                 :: "r"(local_address(dst)), "l"((ulong)src), "r"(valid ? 8u : 0u) : "memory");
}
inline void cp_async16(__local raw_t* dst, __global const src_t* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :: "r"(local_address(dst)), "l"((ulong)src), "r"(valid ? 16u : 0u) : "memory");
}
inline void cp_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
/* this work-item's copies of every group but the newest STAGES - 2 have landed */
#if STAGES == 2
inline void cp_wait(void) { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
#elif STAGES == 3
inline void cp_wait(void) { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
#else
inline void cp_wait(void) { asm volatile("cp.async.wait_group 2;" ::: "memory"); }
#endif
#endif

/* -- slice fetch (global -> registers, or global -> local with cp.async), conversion, stage -------------
 * fetch_a / fetch_b deliver each element of a slice either into reg (register path: converted and stored by
 * stage later) or, when the operand is A_ASYNC / B_ASYNC, straight into its place in the local tile. */
#if VECTOR_A || A_PAIRS
#if A_PAIRS
#define A_VEC 2
typedef uint a_reg_t;            /* 2 halves (cp.async only: never fetched into registers) */
#elif MIOPY_HALF
#define A_VEC 8
typedef uint4 a_reg_t;           /* 8 halves */
#else
#define A_VEC 4
typedef float4 a_reg_t;
#endif
#define A_GROUPS (K_BLK / A_VEC)           /* vectors across a slice's k */
#define A_VROWS (THREADS / A_GROUPS)       /* rows m one pass fetches */
#define A_REGS (M_BLK / A_VROWS)
#define A_KK_OF(t) ((t) % A_GROUPS * A_VEC)
#define A_COL_OF(t, j) ((t) / A_GROUPS + (j) * A_VROWS)
/* Work-item t fetches k = A_KK_OF(t) ... + A_VEC - 1 of rows A_COL_OF(t, j): all valid or none
 * (the solver checks that channel, plane and split sizes are multiples of A_VEC). */
inline void fetch_a(__global const src_t* restrict a, const int* a_cols, a_reg_t* reg, __local raw_t* tile, int t,
                    int step, range_t kr)
{
    const inner_t in = inner_at(step, A_KK_OF(t), kr);
    const int row = a_row(in);
#if A_PAIR_TAIL
    const inner_t in1 = inner_at(step, A_KK_OF(t) + 1, kr);
    const int row1 = a_row(in1);
#endif
    #pragma unroll
    for (int j = 0; j < A_REGS; ++j) {
        const bool ok = a_cols[j] >= 0 && in.valid;
#if A_PAIR_TAIL
        __local raw_t* dst = tile + A_AT(A_KK_OF(t), A_COL_OF(t, j));
        const bool ok1 = a_cols[j] >= 0 && in1.valid;
        if (!ok || (ok1 && row1 == row + 1 && ((a_cols[j] + row) & 1) == 0)) {
            cp_async4(dst, a + (ok ? a_cols[j] + row : 0), ok);
        } else {   /* the tail: element by element */
            dst[0] = a[a_cols[j] + row];
            dst[1] = ok1 ? a[a_cols[j] + row1] : (src_t)0;
        }
#elif A_PAIRS
        cp_async4(tile + A_AT(A_KK_OF(t), A_COL_OF(t, j)), a + (ok ? a_cols[j] + row : 0), ok);
#elif A_ASYNC
        cp_async16(tile + A_AT(A_KK_OF(t), A_COL_OF(t, j)), a + (ok ? a_cols[j] + row : 0), ok);
#else
        reg[j] = ok ? *(__global const a_reg_t*)(a + a_cols[j] + row) : (a_reg_t)(0);
#endif
    }
}
#else
typedef src_t a_reg_t;
#define A_REGS (A_NKK * A_NIDX)
#define A_COL_OF(t, j) (A_T_IDX + (j) * A_IDX_STEP)
inline void fetch_a(__global const src_t* restrict a, const int* a_cols, a_reg_t* reg, __local raw_t* tile, int t,
                    int step, range_t kr)
{
    #pragma unroll
    for (int i = 0; i < A_NKK; ++i) {
        const inner_t in = inner_at(step, A_T_KK + i * A_KK_STEP, kr);
        const int row = a_row(in);
        #pragma unroll
        for (int j = 0; j < A_NIDX; ++j) {
            const bool ok = a_cols[j] >= 0 && in.valid;
#if A_ASYNC       /* fp32 only (fp16 copies pairs) */
            cp_async4(tile + A_AT(A_T_KK + i * A_KK_STEP, A_T_IDX + j * A_IDX_STEP), a + (ok ? a_cols[j] + row : 0), ok);
#else
            reg[i * A_NIDX + j] = ok ? a[a_cols[j] + row] : (src_t)0;
#endif
        }
    }
}
#endif
#define A_NCOLS (VECTOR_A || A_PAIRS ? A_REGS : A_NIDX)

#if B_ASYNC
#define B_PUT(i, j, ok, off) cp_async4(tile + B_AT(B_T_KK + (i) * B_KK_STEP, B_T_IDX + (j) * B_IDX_STEP), \
                                       b + ((ok) ? (off) : 0), (ok))
#else
#define B_PUT(i, j, ok, off) (reg[(i) * B_NIDX + (j)] = (ok) ? b[off] : (src_t)0)
#endif

#if CHANNEL_BLOCKS && DIRECTION != 4
#define CHAN_STRIDE (TRANSFORM_X ? 1 : DIRECTION == 1 ? XS_C : YS_K)
#endif

#if TRANSFORM_X && DIRECTION == 4
/* B_VEC channels of one tap at one (n, p, q): consecutive in the copy, all inside the image or all outside (zeros) */
inline void fetch_b(__global const src_t* restrict b, const tap_t* b_cols, b_reg_t* reg, __local raw_t* tile,
                    int t, int step, range_t kr, uint* mask)
{
    *mask = 0;
    #pragma unroll
    for (int i = 0; i < B_NVK; ++i) {
        const int kk = t / B_VSTEP + i * B_VROWS;
        const inner_t in = inner_at(step, kk, kr);
        tap_t row = b_row(in);
        row.h = in.valid ? row.h : OFF_IMAGE;
        #pragma unroll
        for (int j = 0; j < B_NVJ; ++j) {
            const int off = b_offset(row, b_cols[j]);
#if B_ASYNC
            cp_async16(tile + B_AT(kk, B_COL_OF(t, j)), b + (off >= 0 ? off : 0), off >= 0);
#else
            reg[i * B_NVJ + j] = off >= 0 ? *(__global const uint4*)(b + off) : (uint4)(0u);
#endif
        }
    }
}
#elif TRANSFORM_X
/* A step is one tap: the vector's B_VEC channels of a column are consecutive in the copy, all inside the image
 * or all outside (zeros), all below the channel count or all past it (it is a multiple of B_VEC). */
inline void fetch_b(__global const src_t* restrict b, const tap_t* b_cols, b_reg_t* reg, __local raw_t* tile,
                    int t, int step, range_t kr, uint* mask)
{
    *mask = 0;
    const int kk = B_KK_OF(t);
    const inner_t in = inner_at(step, kk, kr);
    const tap_t row = b_row(in);
    #pragma unroll
    for (int j = 0; j < B_REGS; ++j) {
        const int off = b_offset(row, b_cols[j]);
        const bool ok = in.valid && off >= 0;
#if B_ASYNC
        cp_async16(tile + B_AT(kk, B_COL_OF(t, j)), b + (ok ? off : 0), ok);
#else
        reg[j] = ok ? *(__global const uint4*)(b + off) : (uint4)(0u);
#endif
    }
}
#elif VECTOR_B
typedef CAT(SRC_BASE, VECTOR_B) b_vec_t;
#define B_VAT(i, j) B_AT(B_T_VK + (i) * B_VROWS, B_COL_OF(t, j))
#if B_ASYNC || B_MIXED   /* VECTOR_B elements in one copy */
#define VB_BYTES (VECTOR_B * (MIOPY_HALF ? 2 : 4))
#if VB_BYTES == 4
#define cp_async_vb(dst, src, ok) cp_async4((dst), (src), (ok))
#elif VB_BYTES == 8
#define cp_async_vb(dst, src, ok) cp_async8((dst), (src), (ok))
#else
#define cp_async_vb(dst, src, ok) cp_async16((dst), (src), (ok))
#endif
#endif
#if B_MIXED && B_NVK * B_NVJ > 32
#error "B_MIXED keeps one bit per vector in a uint"
#endif
/* A step is one tap. Per vector: the offsets of its VECTOR_B columns (consecutive in memory when they are
 * all inside); `whole` (all inside, aligned: one vector) and `none` (all outside: zeros) hold for every row,
 * the rows being whole channel planes apart (W, Q multiples of VECTOR_B keep planes aligned). B_MIXED: the
 * vectors copied by cp.async are marked in *mask (bit i * B_NVJ + j) for stage_b to skip. */
inline void fetch_b(__global const src_t* restrict b, const tap_t* b_cols, b_reg_t* reg, __local raw_t* tile,
                    int t, int step, range_t kr, uint* mask)
{
    const inner_t in0 = inner_at(step, B_T_VK, kr);
    const tap_t row0 = b_row(in0);
    uint copied = 0;
    #pragma unroll
    for (int j = 0; j < B_NVJ; ++j) {
        int offs[VECTOR_B];
        bool none = true;
        #pragma unroll
        for (int e = 0; e < VECTOR_B; ++e) {
            offs[e] = b_offset(row0, col_plus(b_cols[j], e));
            none = none && offs[e] < 0;
        }
        const bool whole = offs[0] >= 0 && offs[VECTOR_B - 1] == offs[0] + VECTOR_B - 1 && offs[0] % VECTOR_B == 0;
        #pragma unroll
        for (int i = 0; i < B_NVK; ++i) {
            const bool chan_ok = CHANS % K_BLK == 0 || in0.chan + i * B_VROWS < CHANS;
            const int shift = i * B_VROWS * CHAN_STRIDE;
#if B_ASYNC
            if (whole || none || !chan_ok) {
                const bool ok = whole && chan_ok;
                cp_async_vb(tile + B_VAT(i, j), b + (ok ? offs[0] + shift : 0), ok);
            } else {
                #pragma unroll
                for (int e = 0; e < VECTOR_B; ++e) {
                    const bool ok = offs[e] >= 0;
                    cp_async4(tile + B_VAT(i, j) + e, b + (ok ? offs[e] + shift : 0), ok);
                }
            }
#else
            src_t* at = reg + (i * B_NVJ + j) * VECTOR_B;
            if (whole || none || !chan_ok) {
#if B_MIXED
                const bool ok = whole && chan_ok;
                cp_async_vb(tile + B_VAT(i, j), b + (ok ? offs[0] + shift : 0), ok);
                copied |= 1u << (i * B_NVJ + j);
#else
                CAT(vstore, VECTOR_B)((whole && chan_ok) ? *(__global const b_vec_t*)(b + offs[0] + shift)
                                                         : (b_vec_t)((src_t)0), 0, at);
#endif
            } else {
                #pragma unroll
                for (int e = 0; e < VECTOR_B; ++e)
                    at[e] = offs[e] >= 0 ? b[offs[e] + shift] : (src_t)0;
            }
#endif
        }
    }
    *mask = copied;
}
#elif CHANNEL_BLOCKS && DIRECTION != 4
/* A step is one tap: every row's element sits a whole number of channels from row B_T_KK's, inside or
 * outside the image alike, so offsets and bounds are worked out once per column. */
inline void fetch_b(__global const src_t* restrict b, const tap_t* b_cols, b_reg_t* reg, __local raw_t* tile,
                    int t, int step, range_t kr, uint* mask)
{
    *mask = 0;
    const inner_t in0 = inner_at(step, B_T_KK, kr);
    const tap_t row0 = b_row(in0);
    int offs[B_NIDX];
    #pragma unroll
    for (int j = 0; j < B_NIDX; ++j)
        offs[j] = b_offset(row0, b_cols[j]);
    #pragma unroll
    for (int i = 0; i < B_NKK; ++i) {
        const bool chan_ok = CHANS % K_BLK == 0 || in0.chan + i * B_KK_STEP < CHANS;
        #pragma unroll
        for (int j = 0; j < B_NIDX; ++j)
            B_PUT(i, j, chan_ok && offs[j] >= 0, offs[j] + i * B_KK_STEP * CHAN_STRIDE);
    }
}
#else
inline void fetch_b(__global const src_t* restrict b, const tap_t* b_cols, b_reg_t* reg, __local raw_t* tile,
                    int t, int step, range_t kr, uint* mask)
{
    *mask = 0;
    #pragma unroll
    for (int i = 0; i < B_NKK; ++i) {
        const inner_t in = inner_at(step, B_T_KK + i * B_KK_STEP, kr);
        tap_t row = b_row(in);
        row.h = in.valid ? row.h : OFF_IMAGE;
        #pragma unroll
        for (int j = 0; j < B_NIDX; ++j) {
            const int off = b_offset(row, b_cols[j]);
            B_PUT(i, j, off >= 0, off);
        }
    }
}
#endif

#if MIOPY_HALF
inline raw_t to_raw(src_t v) { return v; }
#elif MMA_EMULATE
/* cvt.rna.tf32.f32: round the magnitude to 10 mantissa bits, ties away from zero */
inline raw_t to_raw(src_t v) { return (as_uint(v) + 0x1000u) & 0xffffe000u; }
#else
inline raw_t to_raw(src_t v)
{
    uint r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}
#endif

#if TRANSFORM_X && DIRECTION == 4
inline void stage_b(__local raw_t* b_tile, const b_reg_t* b_reg, int t, uint mask)
{
    #pragma unroll
    for (int i = 0; i < B_NVK; ++i)
        #pragma unroll
        for (int j = 0; j < B_NVJ; ++j)
            *(__local uint4*)(b_tile + B_AT(t / B_VSTEP + i * B_VROWS, B_COL_OF(t, j))) = b_reg[i * B_NVJ + j];
}
#elif TRANSFORM_X
inline void stage_b(__local raw_t* b_tile, const b_reg_t* b_reg, int t, uint mask)
{
    #pragma unroll
    for (int j = 0; j < B_REGS; ++j)
        *(__local uint4*)(b_tile + B_AT(B_KK_OF(t), B_COL_OF(t, j))) = b_reg[j];
}
#elif VECTOR_B
inline void stage_b(__local raw_t* b_tile, const b_reg_t* b_reg, int t, uint mask)
{
    #pragma unroll
    for (int i = 0; i < B_NVK; ++i)
        #pragma unroll
        for (int j = 0; j < B_NVJ; ++j) {
            if ((mask >> (i * B_NVJ + j)) & 1u)
                continue;
            const src_t* at = b_reg + (i * B_NVJ + j) * VECTOR_B;
            raw_t raw[VECTOR_B];
            #pragma unroll
            for (int e = 0; e < VECTOR_B; ++e)
                raw[e] = to_raw(at[e]);
            *(__local CAT(RAW_BASE, VECTOR_B)*)(b_tile + B_VAT(i, j)) = CAT(vload, VECTOR_B)(0, raw);
        }
}
#else
inline void stage_b(__local raw_t* b_tile, const b_reg_t* b_reg, int t, uint mask)
{
    #pragma unroll
    for (int i = 0; i < B_NKK; ++i)
        #pragma unroll
        for (int j = 0; j < B_NIDX; ++j)
            b_tile[B_AT(B_T_KK + i * B_KK_STEP, B_T_IDX + j * B_IDX_STEP)] = to_raw(b_reg[i * B_NIDX + j]);
}
#endif

inline void stage(__local raw_t* a_tile, __local raw_t* b_tile, const a_reg_t* a_reg, const b_reg_t* b_reg, int t)
{
#if VECTOR_A
    #pragma unroll
    for (int j = 0; j < A_REGS; ++j) {
        __local uint4* at = (__local uint4*)(a_tile + A_AT(A_KK_OF(t), A_COL_OF(t, j)));
#if MIOPY_HALF
        *at = a_reg[j];
#else
        *at = (uint4)(to_raw(a_reg[j].x), to_raw(a_reg[j].y), to_raw(a_reg[j].z), to_raw(a_reg[j].w));
#endif
    }
#else
    #pragma unroll
    for (int i = 0; i < A_NKK; ++i)
        #pragma unroll
        for (int j = 0; j < A_NIDX; ++j)
            a_tile[A_AT(A_T_KK + i * A_KK_STEP, A_T_IDX + j * A_IDX_STEP)] = to_raw(a_reg[i * A_NIDX + j]);
#endif
    stage_b(b_tile, b_reg, t, 0u);
}

/* Fragments of operands copied by cp.async hold fp32 bits: rounded to TF32 as they are read (as to_raw does
 * on the register path), except A from the weight copy, which transform_weights rounded already. WGMMA (TF32
 * backward-weights) reads such fp32 bits from local memory as the hardware does, dropping the low 13
 * (truncation; rounding the landed slices in place cost 1.22x geomean, docs/tensor_cores.md, Accuracy): so does
 * its emulation. */
#define A_CONVERT (A_ASYNC && !MIOPY_HALF && !TRANSFORM_W)
#define B_CONVERT (B_ASYNC && !MIOPY_HALF && !TRANSFORM_X)
#if (A_CONVERT || B_CONVERT) && WGMMA
inline uint tf32_bits(uint v) { return v & 0xffffe000u; }
#elif A_CONVERT || B_CONVERT
inline uint tf32_bits(uint v) { return to_raw(as_float(v)); }
#endif

/* -- the mma and its fragments -------------------------------------------------------------------------
 * Lane = 4 * gid + tig. TF32 m16n8k8: a0 (row gid, k tig), a1 (gid+8, tig), a2 (gid, tig+4), a3 (gid+8,
 * tig+4); b0 (k tig, col gid), b1 (tig+4, gid). F16 m16n8k16: each register holds the pair k, k+1 (low half
 * first) at k = 2*tig (a0, a1, b0) or 2*tig+8 (a2, a3, b1). Sums: c0 (gid, 2*tig), c1 (gid, 2*tig+1),
 * c2 (gid+8, 2*tig), c3 (gid+8, 2*tig+1). */
#if MIOPY_HALF
#define PAIR(tile, at0, at1) ((uint)(tile)[at0] | ((uint)(tile)[at1] << 16))
#define A_FRAG(tile, kk, m) (*(__local const uint*)((tile) + A_AT(kk, m)))
#define A_K0 (2 * tig)
#define A_K1 (2 * tig + 8)
#if B_KK_FAST
#define B_FRAG(tile, kk, n) (*(__local const uint*)((tile) + B_AT(kk, n)))
#else
#define B_FRAG(tile, kk, n) PAIR(tile, B_AT(kk, n), B_AT((kk) + 1, n))
#endif
#else
#define A_FRAG(tile, kk, m) ((tile)[A_AT(kk, m)])
#define B_FRAG(tile, kk, n) ((tile)[B_AT(kk, n)])
#define A_K0 tig
#define A_K1 (tig + 4)
#endif

#if MMA_EMULATE
#define EMU_A (16 * MMA_K)
#define EMU_WARP (EMU_A + MMA_K * 8)
#define EMU_PARAM , __local float* emu
#define EMU_ARG , emu

#if MIOPY_HALF
inline float emu_half(uint bits)
{
    const ushort h = (ushort)bits;
    return vload_half(0, (const __private half*)&h);
}
inline void emu_put(__local float* at, uint reg, int stride)
{
    at[0] = emu_half(reg & 0xffffu);
    at[stride] = emu_half(reg >> 16);
}
#define EMU_PUT(at, reg, stride) emu_put((at), (reg), (stride))
#else
#define EMU_PUT(at, reg, stride) (*(at) = as_float(reg))
#endif

/* The warp's A (16 x MMA_K, row-major) and B (MMA_K x 8, row-major) written from the fragments, then each
 * lane sums its four outputs. Every work-item of the work-group calls it alike (barriers). */
inline void mma(float* c, uint a0, uint a1, uint a2, uint a3, uint b0, uint b1, __local float* emu)
{
    const int lane = get_local_id(0) % 32, gid = lane / 4, tig = lane % 4;
    __local float* a = emu + (get_local_id(0) / 32) * EMU_WARP;
    __local float* b = a + EMU_A;
#if MIOPY_HALF
    EMU_PUT(a + gid * MMA_K + 2 * tig, a0, 1);
    EMU_PUT(a + (gid + 8) * MMA_K + 2 * tig, a1, 1);
    EMU_PUT(a + gid * MMA_K + 2 * tig + 8, a2, 1);
    EMU_PUT(a + (gid + 8) * MMA_K + 2 * tig + 8, a3, 1);
    EMU_PUT(b + (2 * tig) * 8 + gid, b0, 8);
    EMU_PUT(b + (2 * tig + 8) * 8 + gid, b1, 8);
#else
    EMU_PUT(a + gid * MMA_K + tig, a0, 1);
    EMU_PUT(a + (gid + 8) * MMA_K + tig, a1, 1);
    EMU_PUT(a + gid * MMA_K + tig + 4, a2, 1);
    EMU_PUT(a + (gid + 8) * MMA_K + tig + 4, a3, 1);
    EMU_PUT(b + tig * 8 + gid, b0, 8);
    EMU_PUT(b + (tig + 4) * 8 + gid, b1, 8);
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < MMA_K; ++k) {
        c[0] = fma(a[gid * MMA_K + k], b[k * 8 + 2 * tig], c[0]);
        c[1] = fma(a[gid * MMA_K + k], b[k * 8 + 2 * tig + 1], c[1]);
        c[2] = fma(a[(gid + 8) * MMA_K + k], b[k * 8 + 2 * tig], c[2]);
        c[3] = fma(a[(gid + 8) * MMA_K + k], b[k * 8 + 2 * tig + 1], c[3]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#else
#define EMU_PARAM
#define EMU_ARG
inline void mma(float* c, uint a0, uint a1, uint a2, uint a3, uint b0, uint b1)
{
#if MIOPY_HALF
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
        : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
        : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#endif
}
#endif

#if LDMATRIX
/* Four 8x8 matrices of 16-bit elements (8 rows of 16 bytes each; lane l gives the address of row l % 8 of
 * matrix l / 8): lane 4*gid + tig receives elements (gid, 2*tig) and (gid, 2*tig + 1) of each, or with .trans
 * elements (2*tig, gid) and (2*tig + 1, gid). A 32-bit element counts as two 16-bit ones (TF32 rows). */
inline void ldmatrix_x4(uint* r, __local const raw_t* row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(local_address(row)) : "memory");
}

inline void ldmatrix_x4_trans(uint* r, __local const raw_t* row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(local_address(row)) : "memory");
}
#define HALF_K (MMA_K / 2)          /* the second half of an mma's k: 4 TF32 words or 8 halves, 16 bytes */
#define B_LDMATRIX (MIOPY_HALF || B_KK_FAST)
#if B_LDMATRIX && TILES_N % 2
#error "LDMATRIX reads B fragments two n-tiles at a time: WARP_N must be a multiple of 16"
#endif
#endif

#if WGMMA && !MMA_EMULATE
/* A swizzled K-major matrix descriptor: start address, leading byte offset 1 (unused within a swizzle row), stride
 * byte offset (the next 8 rows: 8 x SW_ROW bytes), in 16-byte units; the swizzle mode */
inline ulong sw_desc(__local const raw_t* p)
{
    return (ulong)((local_address(p) & 0x3FFFFu) >> 4) | (1ul << 16) | ((ulong)(8 * SW_ROW >> 4) << 32)
           | ((ulong)SW_MODE(SW_ROW) << 62);
}
#if DIRECTION == 4 && TRANSFORM_X
/* B MN-major (see B_AT): leading byte offset from one block of B_MN columns to the next, stride byte offset from 8
 * rows to the next 8; a slice's k rows kb.. start kb rows into the first block */
inline ulong b_desc(__local const raw_t* b_tile, int kb)
{
    return (ulong)((local_address(b_tile + kb * B_MN) & 0x3FFFFu) >> 4) | ((ulong)(K_BLK * BN_ROW >> 4) << 16)
           | ((ulong)(8 * BN_ROW >> 4) << 32) | ((ulong)SW_MODE(BN_ROW) << 62);
}
#define WGMMA_OP CAT(WGMMA_F16T_N, N_BLK)
#else
#define b_desc(b_tile, kb) sw_desc((b_tile) + (kb))
#if MIOPY_HALF
#define WGMMA_OP CAT(WGMMA_F16_N, N_BLK)
#else
#define WGMMA_OP CAT(WGMMA_TF32_N, N_BLK)
#endif
#endif
#define WGMMA_HOLD CAT(WGMMA_HOLD_, N_BLK)
/* The warpgroup's 64 rows (from wm, its first warp's) times the whole B tile: K_BLK / MMA_K wgmmas, waited for
 * (the next step's copies may then overwrite the tiles once everyone has passed the barrier). */
inline void multiply_slice(__local const raw_t* a_tile, __local const raw_t* b_tile, float* acc, int wm, int wn,
                           int gid, int tig)
{
    __local const raw_t* a = a_tile + (wm & ~63) * K_BLK;
    asm volatile("//@wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kb = 0; kb < K_BLK; kb += MMA_K)
        WGMMA_OP(acc, sw_desc(a + kb), b_desc(b_tile, kb));
    asm volatile("//@wgmma.commit_group.sync.aligned;" ::: "memory");
#if WGMMA_PROBE == 4   /* benchmarks/wgmma_ab.py only: one group left in flight (a race: wrong sums) */
    asm volatile("//@wgmma.wait_group.sync.aligned 1;" ::: "memory");
#else
    asm volatile("//@wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
    WGMMA_HOLD(acc);
}
/* cp.async's writes (the generic proxy) made visible to wgmma's reads (the async proxy) */
#if WGMMA_PROBE == 1
#define PROXY_FENCE() ((void)0)
#else
#define PROXY_FENCE() asm volatile("//@fence.proxy.async.shared::cta;" ::: "memory")
#endif
#else
#define PROXY_FENCE() ((void)0)
/* One staged slice: K_BLK / MMA_K sub-steps of TILES_M x TILES_N mmas per warp. */
inline void multiply_slice(__local const raw_t* a_tile, __local const raw_t* b_tile, float* acc, int wm, int wn,
                           int gid, int tig EMU_PARAM)
{
#if LDMATRIX
    const int lane = 4 * gid + tig, row8 = lane % 8, quad = lane / 8;
#endif
    #pragma unroll
    for (int kb = 0; kb < K_BLK; kb += MMA_K) {
        uint a[TILES_M][4], b[TILES_N][2];
        #pragma unroll
        for (int i = 0; i < TILES_M; ++i) {
#if LDMATRIX   /* matrices: rows 0-7 / 8-15 (quad & 1) x k low / high half (quad >> 1) = a0, a1, a2, a3 */
            ldmatrix_x4(a[i], a_tile + A_AT(kb + (quad >> 1) * HALF_K, wm + i * 16 + (quad & 1) * 8 + row8));
#else
            const int m = wm + i * 16 + gid;
            a[i][0] = A_FRAG(a_tile, kb + A_K0, m);
            a[i][1] = A_FRAG(a_tile, kb + A_K0, m + 8);
            a[i][2] = A_FRAG(a_tile, kb + A_K1, m);
            a[i][3] = A_FRAG(a_tile, kb + A_K1, m + 8);
#endif
#if A_CONVERT
            #pragma unroll
            for (int r = 0; r < 4; ++r)
                a[i][r] = tf32_bits(a[i][r]);
#endif
        }
#if LDMATRIX && B_LDMATRIX
        /* two n-tiles per ldmatrix: matrices (tile j, k low), (j, k high), (j+1, k low), (j+1, k high) */
        #pragma unroll
        for (int j = 0; j < TILES_N; j += 2) {
            uint r[4];
            const int n = wn + (j + (quad >> 1)) * 8;
#if B_KK_FAST   /* [col][kk]: rows are columns, as A */
            ldmatrix_x4(r, b_tile + B_AT(kb + (quad & 1) * HALF_K, n + row8));
#else           /* [kk][col] fp16: rows are k, transposed on the way */
            ldmatrix_x4_trans(r, b_tile + B_AT(kb + (quad & 1) * 8 + row8, n));
#endif
            b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
        }
#else
        #pragma unroll
        for (int j = 0; j < TILES_N; ++j) {
            const int n = wn + j * 8 + gid;
            b[j][0] = B_FRAG(b_tile, kb + A_K0, n);
            b[j][1] = B_FRAG(b_tile, kb + A_K1, n);
        }
#endif
#if B_CONVERT
        #pragma unroll
        for (int j = 0; j < TILES_N; ++j)
            b[j][0] = tf32_bits(b[j][0]), b[j][1] = tf32_bits(b[j][1]);
#endif
        #pragma unroll
        for (int i = 0; i < TILES_M; ++i)
            #pragma unroll
            for (int j = 0; j < TILES_N; ++j)
                mma(acc + (i * TILES_N + j) * 4, a[i][0], a[i][1], a[i][2], a[i][3], b[j][0], b[j][1] EMU_ARG);
    }
}
#endif

/* The workspace: the weight copy (TRANSFORM_W) first, then the split partials (fp32), 256-byte aligned */
#if SPLIT > 1 || TRANSFORM_W || TRANSFORM_X || COL_OUT || PAD_DY
#define PARTIAL_PARAM , __global uchar* restrict workspace
#else
#define PARTIAL_PARAM
#endif
#define ALIGN_256(bytes) (((bytes) + 255) / 256 * 256)
#if TRANSFORM_W
#define X_OFFSET ALIGN_256((long)K * CG * RS * (long)sizeof(src_t))
#else
#define X_OFFSET 0L
#endif
#if TRANSFORM_X    /* the channel-fastest copy of x (forward, backward-weights) or dy (backward-data) */
#if DIRECTION != 2
#define TX_C C
#define TX_H H
#define TX_W W
#else
#define TX_C K
#define TX_H P
#define TX_W Q
#endif
#define DY_OFFSET (X_OFFSET + ALIGN_256((long)N * TX_C * TX_H * TX_W * (long)sizeof(src_t)))
#else
#define DY_OFFSET X_OFFSET
#endif
#if PAD_DY    /* dy's padded copy, then the partials */
#define PARTIAL_OFFSET (DY_OFFSET + ALIGN_256((long)N * K * PQ_A * (long)sizeof(src_t)))
#else
#define PARTIAL_OFFSET DY_OFFSET
#endif
#define OUT_COLS (PHASES * GEMM_N)           /* output columns (PHASED: every phase's, phase by phase) */
#define OUT_COUNT (G * GEMM_M * OUT_COLS)    /* one split's partials: [g][m][col] */

/* Store one sum at (m, col) of group g: the epilogue forward, a scatter otherwise. */
#if DIRECTION == 1
#define STORE_OUT(g, m, col, v) do { const int n_ = (col) / (P * Q), pq_ = (col) % (P * Q), k_ = (g) * KG + (m); \
    const int yi_ = Y_AT(n_, k_, pq_ / Q, pq_ % Q); STORE(y, yi_, MIOPY_EPILOGUE((v), k_, pq_, yi_)); } while (0)
#elif DIRECTION == 2 && PHASED    /* col = phase * GEMM_N + (n, h', w') */
#define STORE_OUT(g, m, col, v) do { const int phase_ = (col) / GEMM_N, c_ = (col) % GEMM_N; \
    const int n_ = c_ / (HP * WP), hw_ = c_ % (HP * WP); \
    const int h_ = phase_ / STRIDE_W + (hw_ / WP) * STRIDE_H, w_ = phase_ % STRIDE_W + (hw_ % WP) * STRIDE_W; \
    if (h_ < H && w_ < W) STORE(x, X_AT(n_, (g) * CG + (m), h_, w_), (v)); } while (0)
#elif DIRECTION == 2
#define STORE_OUT(g, m, col, v) do { const int n_ = (col) / (H * W), hw_ = (col) % (H * W); \
    STORE(x, X_AT(n_, (g) * CG + (m), hw_ / W, hw_ % W), (v)); } while (0)
#elif TRANSFORM_X    /* columns (tap, c), c fastest */
#define STORE_OUT(g, m, col, v) do { const int rs_ = (col) / CG; \
    STORE(w, W_AT((g) * KG + (m), (col) % CG, rs_ / S, rs_ % S), (v)); } while (0)
#else
#define STORE_OUT(g, m, col, v) do { const int rs_ = (col) % RS; \
    STORE(w, W_AT((g) * KG + (m), (col) / RS, rs_ / S, rs_ % S), (v)); } while (0)
#endif
#if SPLIT > 1 || COL_OUT
#define STORE_SUM(m, col, v) (partial[((split * G + g) * GEMM_M + (m)) * OUT_COLS + (col)] = (v))
#else
#define STORE_SUM(m, col, v) STORE_OUT(g, m, col, v)
#endif

/* STAGED_STORE: a warp's 16 x WARP_N band of sums in local memory (rows OUT_LD floats apart: float2 writes of the
 * fragments hit 32 distinct banks per half-warp, rows 32-byte aligned), in the tiles once every warp is done
 * with them; then STORE_RUN stores OUT_VEC consecutive outputs per lane as one 16-, 8- or 4-byte store. */
#define OUT_LD (WARP_N + 8)
#define OUT_VEC STAGED_STORE
#if STAGED_STORE && (WARPS_M * WARPS_N * 16 * OUT_LD * 4 > STAGES * (A_TILE + B_TILE) * (MIOPY_HALF ? 2 : 4))
#error "STAGED_STORE: the warps' bands do not fit the tiles"
#endif
#if OUT_VEC > 1
#if MIOPY_HALF
#define OUT_SCALAR ushort
#define OUT_BITS(bits, e, v) vstore_half_rte((v), (e), (__private half*)(bits))
#else
#define OUT_SCALAR float
#define OUT_BITS(bits, e, v) ((bits)[e] = (v))
#endif
#define STORE_RUN(buf, i, v) do { OUT_SCALAR bits_[OUT_VEC]; \
    for (int e_ = 0; e_ < OUT_VEC; ++e_) OUT_BITS(bits_, e_, (v)[e_]); \
    *(__global CAT(OUT_SCALAR, OUT_VEC)*)((buf) + (i)) = CAT(vload, OUT_VEC)(0, bits_); } while (0)
#elif OUT_VEC
#define STORE_RUN(buf, i, v) STORE(buf, i, (v)[0])
#endif
#if COL_OUT && OUT_VEC > 1   /* fp32 runs of the column matrix, along N*P*Q */
#define STORE_OUT_RUN(g, m, col, src) \
    (*(__global CAT(float, OUT_VEC)*)(partial + (long)(m) * OUT_COLS + (col)) = CAT(vload, OUT_VEC)(0, (src)))
#elif COL_OUT
#define STORE_OUT_RUN(g, m, col, src) (partial[(long)(m) * OUT_COLS + (col)] = (src)[0])
#elif DIRECTION == 1
#define STORE_OUT_RUN(g, m, col, src) do { const int n_ = (col) / (P * Q), pq_ = (col) % (P * Q), k_ = (g) * KG + (m); \
    const int yi_ = Y_AT(n_, k_, pq_ / Q, pq_ % Q); float v_[OUT_VEC]; \
    for (int e_ = 0; e_ < OUT_VEC; ++e_) v_[e_] = MIOPY_EPILOGUE((src)[e_], k_, pq_ + e_, yi_ + e_); \
    STORE_RUN(y, yi_, v_); } while (0)
#elif DIRECTION == 2
#define STORE_OUT_RUN(g, m, col, src) do { const int n_ = (col) / (H * W), hw_ = (col) % (H * W); \
    STORE_RUN(x, X_AT(n_, (g) * CG + (m), hw_ / W, hw_ % W), src); } while (0)
#else
#define STORE_OUT_RUN(g, m, col, src) do { const int rs_ = (col) % RS; \
    STORE_RUN(w, W_AT((g) * KG + (m), (col) / RS, rs_ / S, rs_ % S), src); } while (0)
#endif

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
        if (next < steps && WGMMA_PROBE != 2) {
            if (WGMMA_PROBE != 7)
                fetch_a(a_src, a_cols, 0, a_tiles + write * A_TILE, t, next, kr);
            if (WGMMA_PROBE != 6)
                fetch_b(b_src, b_cols, b_reg, b_tiles + write * B_TILE, t, next, kr, &b_mask);
        }
        cp_commit();
        if (WGMMA_PROBE != 3)
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
/* The weights, channel-fastest for the A operand (see TRANSFORM_W): wt[k][tap][c]. One work-item per element of
 * w; a k's block is C/G * R * S elements in both, so the scattered stores stay within it. */
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
/* Backward-data: wt[g][c][tap][k within g], per group the transpose of w's KG x (CG * RS) matrix (a store per element
 * scattered KG elements apart cost 0.37 ms on a 4096 x 4096 fully-connected layer's weights on an H100; cuDNN's whole
 * backward-data 0.03). Grid: (CG * RS columns, KG rows / 32 * TX_ROWS, G). */
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
