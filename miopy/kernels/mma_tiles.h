/* How conv_mma.cl lays a K_BLK slice out in local memory, and which of its elements each work-item fetches.
 *
 * Local tiles, element (kk, idx) of a slice (A_AT, B_AT; A_TILE, B_TILE elements a buffer):
 *   mma.sync: rows padded so every fragment read of a warp hits 32 distinct banks: A as [m][kk], rows K_BLK + PAD_K
 *   long; B as [kk][col], rows N_BLK + PAD_N long (B_KK_FAST 0: forward, backward-data gathered along col), or as
 *   [col][kk] like A (B_KK_FAST 1: backward-weights gathered along kk, forward / backward-data with TRANSFORM_X).
 *   WGMMA: K-major rows of K_BLK elements (SW_ROW bytes: 32, 64 or 128), unpadded, their 16-byte chunks
 *   XOR-swizzled as wgmma's swizzle modes read them (SW_AT); backward-weights' B from the channel-fastest copy
 *   MN-major in blocks of B_MN columns (B_AT; mma_wgmma.h's b_desc).
 * The fetch of a slice by THREADS work-items: implicit_gemm.h's pattern (A_KK_STEP .. B_NIDX), and here B's
 * vector layouts: TRANSFORM_X (B_VEC channels of one column, along k forward / backward-data, along the columns in
 * backward-weights) and VECTOR_B (VECTOR_B consecutive columns); B_REGS registers of b_reg_t, B_NCOLS columns
 * (B_COL_OF) per work-item.
 *
 * Reads mma_config.h's switches and shapes: WGMMA, TRANSFORM_X, VECTOR_B, B_KK_FAST, MIOPY_HALF.
 */
#ifndef MIOPY_MMA_TILES_H
#define MIOPY_MMA_TILES_H
/* Local tiles: element (kk, idx) of a slice. */
#if WGMMA
/* K-major rows of K_BLK elements (SW_ROW bytes: 32, 64 or 128), the 16-byte chunks of row r XOR-swizzled by address
 * bits 7.. as wgmma's 32-, 64- and 128-byte swizzle modes read them (tiles 1024-byte aligned): a row's chunks, one
 * global run, land in distinct banks (the no-swizzle core matrices put them 128 bytes apart, in one bank group,
 * which slows the copies) */
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
 * descriptor's leading byte offset steps from block to block, its stride byte offset by 8 rows (b_desc in
 * mma_wgmma.h) */
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

#endif
