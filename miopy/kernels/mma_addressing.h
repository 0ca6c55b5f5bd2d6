/* conv_mma.cl's GEMM addressing: the inner dimension (inner_at), the slices one work-group sums (make_range)
 * and each direction's operand offsets (a_col, a_row, b_col, b_row, b_offset), on implicit_gemm.h's map.
 * Beyond conv_direct_local.cl's GEMM it reads:
 *   CHANNEL_BLOCKS   forward / backward-data: 1 steps over (K_BLK channels, one tap), channels past the last zero;
 *                    0 over the flat (channel, tap) index
 *   SPLIT SPLIT_CHUNK  split-K: backward-weights chunks of SPLIT_CHUNK elements of N*P*Q (a multiple of K_BLK);
 *                    forward / backward-data the slices shared out evenly (split s takes steps s*T/SPLIT up to
 *                    (s+1)*T/SPLIT)
 *   PHASED           backward-data with stride > 1, dilation 1: STRIDE_H x STRIDE_W phases of dx, each over its own
 *                    taps (below)
 *   TRANSFORM_W      forward / backward-data: A from the weight copy transform_weights lays out channel-fastest
 *                    (forward wt[k][tap][c], backward-data wt[g][c][tap][k within g]), so a slice's rows are
 *                    consecutive in memory; 0 reads w in place (rows R*S or C*R*S elements apart)
 *   TRANSFORM_X      B from the channel-fastest (NHWC) copy of x (forward, backward-weights) or dy (backward-data)
 *                    that transform_x writes (XB_AT, YB_AT); backward-weights' columns are then ordered (tap, c)
 *   PAD_DY           backward-weights (fp16): A from dy's copy whose planes are padded with zeros to PQ_A elements;
 *                    B reads zeros at the padding's terms
 */
#ifndef MIOPY_MMA_ADDRESSING_H
#define MIOPY_MMA_ADDRESSING_H
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

/* -- the inner dimension: a slice's rows as (chan, tap), a work-group's range of slices ------------------------ */
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

/* -- operand addressing, per direction (implicit_gemm.h's offsets, with the copies and phases) -------------- */
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

#endif
