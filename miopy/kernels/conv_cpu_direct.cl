/* Direct convolution for CPU OpenCL devices (ConvCpuDirect): each work-item computes a register tile of
 * KT channels x VW output columns in VW-wide float vectors (one vector FMA per channel and tap), reads its
 * inputs straight from global memory (the CPU's caches do the staging: no local memory, no barriers) and
 * leaves the work-group size to the runtime. Packed NCHW tensors; any pad, stride, dilation, groups.
 *
 *   cpu_fwd:         y[n, k0..k0+KT-1, p, q0..q0+VW-1] = sum_{c,r,s} w[k, c, r, s] * x[n, c, h(p,r), w(q,s)]
 *   cpu_bwd_data:    dx[n, c0..c0+KT-1, h, phase + STRIDE_W * (j0..j0+VW-1)] = sum_{k,r,s} w[k, c, r, s] * dy[...]
 *                    (a work-item's columns share w mod STRIDE_W, so every lane takes the same taps and
 *                    reads consecutive dy columns: no lane idles, whatever the stride)
 *   cpu_bwd_weights: dw[k0..k0+KT-1, c, r, s0..s0+ST-1] = sum_{n,p,q} dy[n, k, p, q] * x[n, c, h(p,r), w(q,s)]
 *                    (VW-wide partial sums along q, added after each row of dy into a running total, which
 *                    joins a grand total every 32 rows: a fixed order, deterministic, short sums only)
 *
 * Accumulators are named variables (acc0, acc1, ...) rather than an array, and vector loads dereference an
 * unaligned vector type rather than calling vloadN: PoCL 3 compiles vloadN as a call, around which every
 * accumulator is spilled to the stack (a 6x slower inner loop).
 *
 * Defines (all ints): N C H W K R S P Q G PAD_H PAD_W STRIDE_H STRIDE_W DIL_H DIL_W (problem sizes)
 *   VW   vector width: 4, 8 or 16 (columns per work-item)
 *   KT   channels per work-item, 1..12 (cpu_fwd: of y; cpu_bwd_data: of dx; cpu_bwd_weights: of dw's K):
 *        divides K/G (forward, backward-weights) or C/G (backward-data)
 *   ST   cpu_bwd_weights only: filter columns per work-item, 1..7, divides S
 *   PADDED  1: the row-read input (x forward and backward-weights, dy backward-data) is a copy in the workspace
 *           whose rows hold XP_W columns, the first LEFT of them zero padding, and zeros past the data
 *           (cpu_pad), so vector loads need no bounds checks; 0: the tensor itself (1x1, stride 1, no
 *           padding: one row per plane, only the tail vector is checked)
 *   XP_W LEFT  row length and left padding of the row-read input (unpadded: its own row length, 0)
 *   PHASES  the padded rows are stored phase by phase: PHASES runs of XP_W / PHASES columns, run f holding
 *           the columns congruent to f mod PHASES (PHASES = STRIDE_W for x, 1 for dy), so that the strided
 *           columns one vector reads are consecutive in memory
 *   QP   cpu_bwd_weights with PADDED: row length of dy's padded copy (Q rounded up to whole vectors, zero tail)
 *   MIOPY_HALF (types.h): tensors hold half values (read and written element by element); arithmetic is float
 */
#include "types.h"
#include "epilogue.h"

#if !defined(VW) || !defined(KT)
#error "conv_cpu_direct.cl needs VW and KT"
#endif
#if VW != 4 && VW != 8 && VW != 16
#error "VW must be 4, 8 or 16"
#endif
#if KT < 1 || KT > 12
#error "KT must be 1..12"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VEC CAT(float, VW)

#ifdef __clang__
typedef float vec_unaligned __attribute__((ext_vector_type(VW), aligned(4)));
#define VLOAD_AT(p) ((VEC)(*(const vec_unaligned*)(p)))
#define VLOAD_GLOBAL(p) ((VEC)(*(__global const vec_unaligned*)(p)))
#define VSTORE_AT(v, p) (*(vec_unaligned*)(p) = (v))
#else
#define VLOAD_AT(p) CAT(vload, VW)(0, p)
#define VLOAD_GLOBAL(p) CAT(vload, VW)(0, p)
#define VSTORE_AT(v, p) CAT(vstore, VW)(v, 0, p)
#endif

/* EACH_T(X) expands X(0) X(1) ... X(KT-1); EACH_J(X, t) expands X(t, 0) ... X(t, ST-1). */
#define T_1(X) X(0)
#define T_2(X) T_1(X) X(1)
#define T_3(X) T_2(X) X(2)
#define T_4(X) T_3(X) X(3)
#define T_5(X) T_4(X) X(4)
#define T_6(X) T_5(X) X(5)
#define T_7(X) T_6(X) X(6)
#define T_8(X) T_7(X) X(7)
#define T_9(X) T_8(X) X(8)
#define T_10(X) T_9(X) X(9)
#define T_11(X) T_10(X) X(10)
#define T_12(X) T_11(X) X(11)
#define EACH_T(X) CAT(T_, KT)(X)
#define J_1(X, t) X(t, 0)
#define J_2(X, t) J_1(X, t) X(t, 1)
#define J_3(X, t) J_2(X, t) X(t, 2)
#define J_4(X, t) J_3(X, t) X(t, 3)
#define J_5(X, t) J_4(X, t) X(t, 4)
#define J_6(X, t) J_5(X, t) X(t, 5)
#define J_7(X, t) J_6(X, t) X(t, 6)

#define CG (C / G)
#define KG (K / G)
#define RS (R * S)

#if !defined(PADDED) || !defined(XP_W) || !defined(LEFT) || !defined(PHASES)
#error "conv_cpu_direct.cl needs PADDED, XP_W, LEFT and PHASES"
#endif
#define PHASE_W (XP_W / PHASES)

/* VW values of a padded row's columns first + i * PHASES, i = 0..VW-1, with no bounds check: the row is
 * stored phase by phase (column c at (c % PHASES) * PHASE_W + c / PHASES), so they are consecutive. */
inline void load_padded(VEC* out, __global const DATA_T* row, const int first)
{
    __global const DATA_T* at = row + (first % PHASES) * PHASE_W + first / PHASES;
#if !MIOPY_HALF
    *out = VLOAD_GLOBAL(at);
#else
    float lanes[VW];
    for (int i = 0; i < VW; ++i) lanes[i] = LOAD(at, i);
    *out = VLOAD_AT(lanes);
#endif
}

/* VW values row[first + i], zero from column limit on (the tail of an unpadded row; first >= 0). */
inline void load_tail(VEC* out, __global const DATA_T* row, const int first, const int limit)
{
#if !MIOPY_HALF
    if (first + VW <= limit) {
        *out = VLOAD_GLOBAL(row + first);
        return;
    }
#endif
    float lanes[VW];
    for (int i = 0; i < VW; ++i) lanes[i] = first + i < limit ? LOAD(row, first + i) : 0.0f;
    *out = VLOAD_AT(lanes);
}

#if PADDED
#define LOAD_ROW(out, row, first, limit) load_padded(out, row, (first) + LEFT)
#else
#define LOAD_ROW(out, row, first, limit) load_tail(out, row, first, limit)
#endif

#define ZERO(t) VEC acc##t = (VEC)(0.0f);

/* ---- forward. Global size: (ceil(Q / VW), P, N * K / KT). ---- */
#define FWD_FMA(t) acc##t += LOAD(wc, (t) * CG * RS + r * S + s) * xv;
#define FWD_STORE(t) { \
        float lanes[VW]; \
        VSTORE_AT(acc##t, lanes); \
        const int k = k0 + (t), row = ((n * K + k) * P + p) * Q; \
        for (int i = 0; i < VW && q0 + i < Q; ++i) \
            STORE(y, row + q0 + i, MIOPY_EPILOGUE(lanes[i], k, p * Q + q0 + i, row + q0 + i)); \
    }

__kernel void cpu_fwd(__global const DATA_T* restrict x, __global const DATA_T* restrict w,
                      __global DATA_T* restrict y MIOPY_EPILOGUE_PARAMS)
{
    const int q0 = get_global_id(0) * VW, p = get_global_id(1);
    const int n = get_global_id(2) / (K / KT), k0 = (get_global_id(2) % (K / KT)) * KT;
    const int c_first = (k0 / KG) * CG;
    EACH_T(ZERO)
    for (int c = 0; c < CG; ++c) {
        __global const DATA_T* plane = x + (n * C + c_first + c) * (H * XP_W);
        __global const DATA_T* wc = w + (k0 * CG + c) * RS;
        for (int r = 0; r < R; ++r) {
            const int h = p * STRIDE_H - PAD_H + r * DIL_H;
            if (h < 0 || h >= H) continue;
            for (int s = 0; s < S; ++s) {
                VEC xv;
                LOAD_ROW(&xv, plane + h * XP_W, q0 * STRIDE_W - PAD_W + s * DIL_W, W);
                EACH_T(FWD_FMA)
            }
        }
    }
    EACH_T(FWD_STORE)
}

/* ---- backward-data. Global size: (STRIDE_W * ceil(ceil(W / STRIDE_W) / VW), H, N * C / KT). ---- */
#define WJ ((W + STRIDE_W - 1) / STRIDE_W)
#define JBLOCKS ((WJ + VW - 1) / VW)
#define BWD_FMA(t) acc##t += LOAD(wk, (t) * RS + r * S + s) * dyv;
#define BWD_STORE(t) bwd_store(dx, &acc##t, n, c0 + (t), h, phase, j0);

inline void bwd_store(__global DATA_T* restrict dx, const VEC* v, const int n, const int c, const int h,
                      const int phase, const int j0)
{
    float lanes[VW];
    VSTORE_AT(*v, lanes);
    const int row = ((n * C + c) * H + h) * W;
    for (int i = 0; i < VW; ++i) {
        const int col = phase + STRIDE_W * (j0 + i);
        if (col < W) STORE(dx, row + col, lanes[i]);
    }
}

__kernel void cpu_bwd_data(__global DATA_T* restrict dx, __global const DATA_T* restrict w,
                           __global const DATA_T* restrict dy)
{
    const int phase = get_global_id(0) / JBLOCKS, j0 = (get_global_id(0) % JBLOCKS) * VW;
    const int h = get_global_id(1);
    const int n = get_global_id(2) / (C / KT), c0 = (get_global_id(2) % (C / KT)) * KT;
    const int g = c0 / CG;
    EACH_T(ZERO)
    for (int k = 0; k < KG; ++k) {
        __global const DATA_T* plane = dy + (n * K + g * KG + k) * (P * XP_W);
        __global const DATA_T* wk = w + ((g * KG + k) * CG + c0 % CG) * RS;
        for (int r = 0; r < R; ++r) {
            const int ph = h + PAD_H - r * DIL_H;
            if (ph < 0 || ph % STRIDE_H != 0 || ph / STRIDE_H >= P) continue;
            for (int s = 0; s < S; ++s) {
                const int t0 = phase + PAD_W - s * DIL_W;   /* + STRIDE_W * j: the lanes' dy column times STRIDE_W */
                if (t0 % STRIDE_W != 0) continue;
                VEC dyv;
                LOAD_ROW(&dyv, plane + (ph / STRIDE_H) * XP_W, j0 + t0 / STRIDE_W, Q);
                EACH_T(BWD_FMA)
            }
        }
    }
    EACH_T(BWD_STORE)
}

/* ---- backward-weights. Global size: (CG * R * S / ST, K / KT). ---- */
#ifdef ST
#define EACH_J(X, t) CAT(J_, ST)(X, t)
#define ZERO_J(t, j) VEC acc##t##_##j = (VEC)(0.0f), tot##t##_##j = (VEC)(0.0f);
#define ZERO_TJ(t) EACH_J(ZERO_J, t)
#define LOAD_X(t, j) VEC xv##j; LOAD_ROW(&xv##j, xrow, q0 * STRIDE_W - PAD_W + (s0 + (j)) * DIL_W, W);
#define FMA_J(t, j) acc##t##_##j += dyv * xv##j;
#define FMA_TJ(t) { VEC dyv; LOAD_DY(&dyv, dyrow + (t) * (P * QP), q0); EACH_J(FMA_J, t) }
#define LOAD_DY(out, row, q0) load_tail(out, row, q0, QP)   /* padded: QP a whole number of vectors */
/* Every FLUSH_STEPS vectors of a row (and at a row's end) the partial sums join a running total with a
 * compensated add (types.h), so each lane rounds like a sum of FLUSH_STEPS terms, however long N*P*Q */
#define FLUSH_STEPS 16
#define FLUSH_J(t, j) COMPENSATED_ADD(VEC, tot##t##_##j, acc##t##_##j)
#define FLUSH_TJ(t) EACH_J(FLUSH_J, t)
#define STORE_J(t, j) STORE(dw, ((k0 + (t)) * CG + c) * RS + r * S + s0 + (j), \
                            lane_sum(&tot##t##_##j) + lane_sum(&acc##t##_##j));
#define STORE_TJ(t) EACH_J(STORE_J, t)

inline float lane_sum(const VEC* v)
{
    float lanes[VW];
    VSTORE_AT(*v, lanes);
    float sum = 0.0f;
    for (int i = 0; i < VW; ++i) sum += lanes[i];
    return sum;
}

__kernel void cpu_bwd_weights(__global const DATA_T* restrict x, __global DATA_T* restrict dw,
                              __global const DATA_T* restrict dy, const int dy_off)
{
    const int s0 = (get_global_id(0) % (S / ST)) * ST, r = (get_global_id(0) / (S / ST)) % R;
    const int c = get_global_id(0) / (S / ST * R), k0 = get_global_id(1) * KT;
    const int c_abs = (k0 / KG) * CG + c;
    EACH_T(ZERO_TJ)
    for (int n = 0; n < N; ++n)
        for (int p = 0; p < P; ++p) {
            const int h = p * STRIDE_H - PAD_H + r * DIL_H;
            if (h < 0 || h >= H) continue;
            __global const DATA_T* xrow = x + ((n * C + c_abs) * H + h) * XP_W;
            __global const DATA_T* dyrow = dy + dy_off + ((n * K + k0) * P + p) * QP;
            for (int b0 = 0; b0 < Q; b0 += FLUSH_STEPS * VW) {
                for (int q0 = b0; q0 < min(Q, b0 + FLUSH_STEPS * VW); q0 += VW) {
                    EACH_J(LOAD_X, 0)
                    EACH_T(FMA_TJ)
                }
                EACH_T(FLUSH_TJ)
            }
        }
    EACH_T(STORE_TJ)
}
#endif
