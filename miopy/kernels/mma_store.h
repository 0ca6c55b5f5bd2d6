/* Where conv_mma.cl's sums go: the workspace's layout, each direction's store of a sum (with the fusion epilogue
 * forward), split partials, the column matrix of COL_OUT, and the staged stores of runs.
 *
 * Defines read here (all ints):
 *   SPLIT            > 1: partials are fp32 [split][g][m][col] in the workspace at PARTIAL_OFFSET, summed in a
 *                    fixed order by reduce_splits (deterministic; forward applies the epilogue there)
 *   TRANSFORM_W TRANSFORM_X PAD_DY   the copies before the partials, each 256-byte aligned: the weights'
 *                    (X_OFFSET after it), x / dy's channel-fastest one (DY_OFFSET after it), dy's padded one
 *   COL_OUT          1 (forward, one group, no split): the sums are backward-data's column matrix, fp32
 *                    [m][col] at PARTIAL_OFFSET in the workspace (y is not written) for col2im to gather: the
 *                    COL2IM mode of the solver, whose problem here is the 1x1 forward GEMM over dy (see
 *                    miopy/conv/solvers/mma/launches.py)
 *   STAGED_STORE     0: each lane stores its sums where the mma fragments leave them (8 rows x 4 lanes of 2
 *                    columns per warp store); 1, 2, 4 or 8: each warp passes its sums through local memory one
 *                    16-row band at a time and stores rows of that many consecutive output elements per lane (16
 *                    bytes at most), where the output's columns are runs of consecutive elements of that length
 *                    (P*Q forward, H*W backward-data, C/G*R*S backward-weights; no split, no phases, no
 *                    TRANSFORM_X in backward-weights), the bands within the local tiles
 *   MIOPY_FUSED ...  the epilogue (epilogue.h), applied to forward outputs
 */
#ifndef MIOPY_MMA_STORE_H
#define MIOPY_MMA_STORE_H
/* The workspace: the weight copy (TRANSFORM_W), the channel-fastest copy (TRANSFORM_X), dy's padded copy
 * (PAD_DY), then the split partials or the column matrix (fp32), each 256-byte aligned */
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

#endif
