/* The toy family's kernels: y = scale * x^2 and dx = 2 * scale * x * dy, one work-item per element.
 *
 * Defines: N C H W (dims); XS_* YS_* DXS_* DYS_* (element strides of x, y, dx, dy); MIOPY_HALF (types.h).
 */
#include "types.h"

#define AT(T, n, c, h, w) ((n) * T##S_N + (c) * T##S_C + (h) * T##S_H + (w) * T##S_W)
#define SPLIT_INDEX const int w = gid % W, h = (gid / W) % H, c = (gid / (H * W)) % C, n = gid / (C * H * W)

#ifdef YS_N
__kernel void square_fwd(__global const DATA_T* x, __global DATA_T* y, const float scale)
{
    const int gid = get_global_id(0);
    if (gid >= N * C * H * W) return;
    SPLIT_INDEX;
    const float v = LOAD(x, AT(X, n, c, h, w));
    STORE(y, AT(Y, n, c, h, w), scale * v * v);
}
#else
__kernel void square_bwd(__global DATA_T* dx, __global const DATA_T* dy, __global const DATA_T* x,
                         const float scale)
{
    const int gid = get_global_id(0);
    if (gid >= N * C * H * W) return;
    SPLIT_INDEX;
    const float v = LOAD(x, AT(X, n, c, h, w));
    STORE(dx, AT(DX, n, c, h, w), 2.0f * scale * v * LOAD(dy, AT(DY, n, c, h, w)));
}
#endif
