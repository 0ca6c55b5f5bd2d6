/* MIOpen's tensor operations: OpTensor (c = op(alpha1 * a, alpha2 * b) + beta * c, b broadcast over a),
 * SetTensor, ScaleTensor and TransformTensor. In place is allowed (no restrict on data pointers); c (y) is
 * read only when beta is not 0. Arithmetic is float; storage DATA_T (types.h).
 *
 * Defines (all ints):
 *   MIOPY_HALF             storage type (types.h)
 *   OPTENSOR               1: the OpTensor kernels, whose run-time argument op is 0 add, 1 mul, 2 min, 3 max
 *                          (miopenTensorOp_t; min / max are IEEE fmin / fmax). One program serves every op: the
 *                          branch is uniform over the launch.
 *   VEC COUNT              op_tensor_packed: elements per work-item (1 or 4) and in all (a multiple of VEC)
 *   N C H W                dims of the strided kernels
 *   AS_* BS_* CS_*         element strides of a, b, c (op_tensor_generic; b's broadcast dims have stride 0)
 *   XS_* YS_*              element strides of x, y (set, scale, transform)
 *   FLAT VEC COUNT STRIDE UNROLL   set_flat, scale_flat, transform_flat: dense tensors (the elements addressed
 *                          are exactly offsets 0 .. COUNT-1, in any layout; x and y alike for transform), VEC
 *                          (4 or 8) elements per vector access, a grid-stride loop of UNROLL steps of STRIDE
 *                          (the launch's global size, a multiple of the work-group size) vectors
 *   TILED TILE ROWS TA TB TILES_A TILES_B DP DQ XA XB XP XQ YA YB YP YQ   transform_tiled: a batched transpose
 *                          through TILE x (TILE + 1) local memory by TILE x ROWS work-items. Axis A (TA long) is
 *                          x's contiguous one (XA == 1), axis B (TB) is y's (YB == 1); P and Q (DP, DQ) are
 *                          batch axes; X* and Y* are the element strides of x and y along them
 */
#include "types.h"

#define AT(T, n, c, h, w) ((n) * T##S_N + (c) * T##S_C + (h) * T##S_H + (w) * T##S_W)
#define BLEND(r, old) (beta == 0.0f ? (r) : (r) + beta * (old))

#define APPLY(x, y) (op == 0 ? (x) + (y) : op == 1 ? (x) * (y) : op == 2 ? fmin((x), (y)) : fmax((x), (y)))

#if defined(VEC) && !defined(FLAT)
#if !defined(OPTENSOR) || !defined(COUNT)
#error "op_tensor_packed needs OPTENSOR and COUNT"
#endif
#if MIOPY_HALF
#define LOAD4(p, i) vload_half4((i), (p))
#define STORE4(p, i, v) vstore_half4_rte((v), (i), (p))
#else
#define LOAD4(p, i) vload4((i), (p))
#define STORE4(p, i, v) vstore4((v), (i), (p))
#endif

/* a, b, c packed with equal dims: VEC consecutive elements per work-item, flat indices. */
__kernel void op_tensor_packed(__global const DATA_T* a, __global const DATA_T* b, __global DATA_T* c,
                               const int op, const float alpha1, const float alpha2, const float beta)
{
    const int i = get_global_id(0);
    if (i >= COUNT / VEC) return;
#if VEC == 4
    const float4 r = APPLY(alpha1 * LOAD4(a, i), alpha2 * LOAD4(b, i));
    STORE4(c, i, beta == 0.0f ? r : r + beta * LOAD4(c, i));
#elif VEC == 1
    const float r = APPLY(alpha1 * LOAD(a, i), alpha2 * LOAD(b, i));
    STORE(c, i, BLEND(r, LOAD(c, i)));
#else
#error "VEC must be 1 or 4"
#endif
}
#endif

#if defined(N) && defined(C) && defined(H) && defined(W)
#define DECOMPOSE(gid) const int w = (gid) % W, h = ((gid) / W) % H, ch = ((gid) / (H * W)) % C, \
    n = (gid) / (C * H * W)

#if defined(OPTENSOR) && defined(AS_N)
/* any strides; b's broadcast dims have stride 0 */
__kernel void op_tensor_generic(__global const DATA_T* a, __global const DATA_T* b, __global DATA_T* c,
                                const int op, const float alpha1, const float alpha2, const float beta)
{
    const int gid = get_global_id(0);
    if (gid >= N * C * H * W) return;
    DECOMPOSE(gid);
    const float r = APPLY(alpha1 * LOAD(a, AT(A, n, ch, h, w)), alpha2 * LOAD(b, AT(B, n, ch, h, w)));
    const int i = AT(C, n, ch, h, w);
    STORE(c, i, BLEND(r, LOAD(c, i)));
}
#endif

#ifdef YS_N
/* y = value at every element y_desc addresses */
__kernel void set_tensor(__global DATA_T* y, const float value)
{
    const int gid = get_global_id(0);
    if (gid >= N * C * H * W) return;
    DECOMPOSE(gid);
    STORE(y, AT(Y, n, ch, h, w), value);
}

/* y = alpha * y */
__kernel void scale_tensor(__global DATA_T* y, const float alpha)
{
    const int gid = get_global_id(0);
    if (gid >= N * C * H * W) return;
    DECOMPOSE(gid);
    const int i = AT(Y, n, ch, h, w);
    STORE(y, i, alpha * LOAD(y, i));
}
#endif

#if defined(XS_N) && defined(YS_N)
/* y = alpha * x + beta * y between any two layouts of the same dims */
__kernel void transform_tensor(__global const DATA_T* x, __global DATA_T* y, const float alpha, const float beta)
{
    const int gid = get_global_id(0);
    if (gid >= N * C * H * W) return;
    DECOMPOSE(gid);
    const int i = AT(Y, n, ch, h, w);
    STORE(y, i, BLEND(alpha * LOAD(x, AT(X, n, ch, h, w)), LOAD(y, i)));
}
#endif
#endif

#ifdef FLAT
#if !defined(VEC) || !defined(COUNT) || !defined(STRIDE) || !defined(UNROLL)
#error "the flat kernels need VEC, COUNT, STRIDE and UNROLL"
#endif
#if VEC == 4 && MIOPY_HALF
#define FLOATV float4
#define LOADV(p, i) vload_half4((i), (p))
#define STOREV(p, i, v) vstore_half4_rte((v), (i), (p))
#elif VEC == 4
#define FLOATV float4
#define LOADV(p, i) vload4((i), (p))
#define STOREV(p, i, v) vstore4((v), (i), (p))
#elif VEC == 8 && MIOPY_HALF
#define FLOATV float8
#define LOADV(p, i) vload_half8((i), (p))
#define STOREV(p, i, v) vstore_half8_rte((v), (i), (p))
#elif VEC == 8
#define FLOATV float8
#define LOADV(p, i) vload8((i), (p))
#define STOREV(p, i, v) vstore8((v), (i), (p))
#else
#error "VEC must be 4 or 8"
#endif
#define VECTORS (COUNT / VEC)
/* Each work-item takes vectors gid, gid + STRIDE, ... (UNROLL steps, independent so their accesses overlap),
 * then the first COUNT % VEC work-items take one tail element each. */
#define VECTOR_INDEX(step) ((int)get_global_id(0) + (step) * STRIDE)
#define TAIL_INDEX (VECTORS * VEC + (int)get_global_id(0))

/* y = value at offsets 0 .. COUNT-1 */
__kernel void set_flat(__global DATA_T* restrict y, const float value)
{
    const FLOATV v = (FLOATV)(value);
    for (int step = 0; step < UNROLL; ++step) {
        const int i = VECTOR_INDEX(step);
        if (i < VECTORS) STOREV(y, i, v);
    }
    const int t = TAIL_INDEX;
    if (t < COUNT) STORE(y, t, value);
}

/* y = alpha * y at offsets 0 .. COUNT-1 */
__kernel void scale_flat(__global DATA_T* restrict y, const float alpha)
{
    for (int step = 0; step < UNROLL; ++step) {
        const int i = VECTOR_INDEX(step);
        if (i < VECTORS) STOREV(y, i, alpha * LOADV(y, i));
    }
    const int t = TAIL_INDEX;
    if (t < COUNT) STORE(y, t, alpha * LOAD(y, t));
}

/* y = alpha * x + beta * y at offsets 0 .. COUNT-1 of both (x and y share one dense layout; y may be x) */
__kernel void transform_flat(__global const DATA_T* x, __global DATA_T* y, const float alpha, const float beta)
{
    for (int step = 0; step < UNROLL; ++step) {
        const int i = VECTOR_INDEX(step);
        if (i < VECTORS) {
            const FLOATV r = alpha * LOADV(x, i);
            STOREV(y, i, beta == 0.0f ? r : r + beta * LOADV(y, i));
        }
    }
    const int t = TAIL_INDEX;
    if (t < COUNT) STORE(y, t, BLEND(alpha * LOAD(x, t), LOAD(y, t)));
}
#endif

#ifdef TILED
#if !defined(TILE) || !defined(ROWS) || !defined(TA) || !defined(TB) || !defined(TILES_A) || !defined(TILES_B) \
    || !defined(DQ) || !defined(XA) || !defined(XB) || !defined(XP) || !defined(XQ) || !defined(YA) \
    || !defined(YB) || !defined(YP) || !defined(YQ)
#error "transform_tiled needs TILE ROWS TA TB TILES_A TILES_B DQ and the strides XA XB XP XQ YA YB YP YQ"
#endif
/* y = alpha * x + beta * y where x is contiguous along A and y along B: each work-group moves one TILE x TILE
 * tile of one (p, q) batch, reading rows of x along A and writing rows of y along B (both coalesced); the
 * tile's +1 column keeps the transposed reads from local memory free of bank conflicts. x and y never alias. */
__kernel __attribute__((reqd_work_group_size(TILE * ROWS, 1, 1)))
void transform_tiled(__global const DATA_T* restrict x, __global DATA_T* restrict y, const float alpha,
                     const float beta)
{
    __local float tile[TILE][TILE + 1];
    int group = get_group_id(0);
    const int a0 = (group % TILES_A) * TILE;
    group /= TILES_A;
    const int b0 = (group % TILES_B) * TILE;
    group /= TILES_B;
    const int q = group % DQ, p = group / DQ;
    const int lane = get_local_id(0) % TILE, row = get_local_id(0) / TILE;
    const __global DATA_T* xs = x + p * XP + q * XQ;
    __global DATA_T* ys = y + p * YP + q * YQ;
    if (a0 + lane < TA) {
        for (int r = row; r < TILE; r += ROWS)
            if (b0 + r < TB) tile[r][lane] = LOAD(xs, (a0 + lane) * XA + (b0 + r) * XB);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (b0 + lane < TB) {
        for (int r = row; r < TILE; r += ROWS) {
            if (a0 + r >= TA) break;
            const int i = (a0 + r) * YA + (b0 + lane) * YB;
            STORE(ys, i, BLEND(alpha * tile[lane][r], LOAD(ys, i)));
        }
    }
}
#endif
