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
 */
#include "types.h"

#define AT(T, n, c, h, w) ((n) * T##S_N + (c) * T##S_C + (h) * T##S_H + (w) * T##S_W)
#define BLEND(r, old) (beta == 0.0f ? (r) : (r) + beta * (old))

#define APPLY(x, y) (op == 0 ? (x) + (y) : op == 1 ? (x) * (y) : op == 2 ? fmin((x), (y)) : fmax((x), (y)))

#ifdef VEC
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
