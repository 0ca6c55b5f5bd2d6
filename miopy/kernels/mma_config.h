/* conv_mma.cl's configuration: the switches' defaults and the checks of their combinations, the switches derived
 * from them, the work-group's shape, the data types, and the GEMM of each direction (as implicit_gemm.h maps it;
 * PHASED and PAD_DY change its columns and inner dimension).
 *
 * Defines read here (all ints; see conv_mma.cl for the list, the headers named there for each switch):
 *   DIRECTION M_BLK N_BLK K_BLK WARPS_M WARPS_N STAGES CHANNEL_BLOCKS SPLIT   required
 *   MMA_EMULATE TRANSFORM_W LDMATRIX VECTOR_A CP_ASYNC VECTOR_B TRANSFORM_X STAGED_STORE COL_OUT PAD_DY WGMMA
 *   PHASED   switches, 0 when not defined (MMA_EMULATE forces LDMATRIX 0)
 *   MIOPY_HALF   0 fp32 data (TF32 mma), 1 fp16 data (f16 mma): types.h
 *
 * What it defines for the other headers:
 *   A_PAIRS A_PAIR_TAIL A_ASYNC B_ASYNC B_MIXED   which operands cp.async copies, and how (see mma_copy.h)
 *   PQ_A             terms of one dy plane as backward-weights' A reads it (P*Q, rounded up to 8 with PAD_DY)
 *   THREADS WARP_M WARP_N TILES_M TILES_N   work-items; a warp's rows, columns and 16x8 mma tiles
 *   MMA_K PAD_K PAD_N src_t raw_t SRC_BASE RAW_BASE   the mma's k, local rows' padding, element types read from
 *                    global memory (fp16 bits or float) and held in local memory (fp16 or TF32 bits)
 *   PHASES HP WP     PHASED: phases of dx, a phase's rows and columns (see mma_addressing.h)
 *   GEMM_M GEMM_N GEMM_K B_KK_FAST   the per-group GEMM (GEMM_N: one phase's columns) and whether B's local tile
 *                    is [col][kk] (else [kk][col])
 *   CAT(a, b)        token pasting after expansion
 */
#ifndef MIOPY_MMA_CONFIG_H
#define MIOPY_MMA_CONFIG_H
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

#define THREADS (32 * WARPS_M * WARPS_N)
#define WARP_M (M_BLK / WARPS_M)
#define WARP_N (N_BLK / WARPS_N)
#define TILES_M (WARP_M / 16)
#define TILES_N (WARP_N / 8)

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
#if PHASED    /* backward-data in STRIDE_H x STRIDE_W phases (see mma_addressing.h) */
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
#endif
