/* Division for the tensor-op family (MIOpen's OpTensor has add, mul, min and max only): c = (alpha1 * a) /
 * (alpha2 * b) + beta * c with b broadcast over a, any strides. IEEE division (a zero divisor gives +-inf or
 * NaN, as NumPy and ONNX do). In place is allowed (no restrict on data pointers); c is read only when beta is
 * not 0. Arithmetic is float; storage DATA_T (types.h).
 *
 * Defines (all ints):
 *   MIOPY_HALF        storage type (types.h)
 *   N C H W           dims of a and c (b's broadcast dims are 1 and have stride 0)
 *   AS_* BS_* CS_*    element strides of a, b, c
 */
#include "types.h"

#if !defined(N) || !defined(C) || !defined(H) || !defined(W) || !defined(AS_N) || !defined(BS_N) || !defined(CS_N)
#error "op_tensor_div needs N C H W and the strides AS_* BS_* CS_*"
#endif

#define AT(T, n, c, h, w) ((n) * T##S_N + (c) * T##S_C + (h) * T##S_H + (w) * T##S_W)

__kernel void op_tensor_div(__global const DATA_T* a, __global const DATA_T* b, __global DATA_T* c,
                            const float alpha1, const float alpha2, const float beta)
{
    const int gid = get_global_id(0);
    if (gid >= N * C * H * W) return;
    const int w = gid % W, h = (gid / W) % H, ch = (gid / (H * W)) % C, n = gid / (C * H * W);
    const float r = (alpha1 * LOAD(a, AT(A, n, ch, h, w))) / (alpha2 * LOAD(b, AT(B, n, ch, h, w)));
    const int i = AT(C, n, ch, h, w);
    STORE(c, i, beta == 0.0f ? r : r + beta * LOAD(c, i));
}
