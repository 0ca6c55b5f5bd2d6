/* Dropout forward and backward (MIOpen's miopenDropout*), inverted: kept elements are scaled by
 * 1 / (1 - p). The mask lives in the reserve space, one byte per element in the tensor's logical row-major
 * order; the forward draws it from the RNG state (or reads it, USE_MASK), the backward reads it.
 *
 * RNG state (4 uints): key (seed low, seed high), offset (low, high). Element i is kept when word i % 4 of
 * philox4x32_10((i / 4, 0, offset), key) >= threshold (= round(p * 2^32); 2^32 keeps nothing). The packed
 * and the strided kernels draw identical masks. dropout_advance adds 1 to the offset (state evolution).
 *
 * Defines (all ints):
 *   MIOPY_HALF             storage type (types.h)
 *   COUNT                  elements
 *   PACKED                 1: x, y (dy, dx) packed, 4 elements per work-item; 0: strided, 1 per work-item
 *   N C H W, XS_* YS_*     dims and element strides (strided kernels; x/y are dy/dx in the backward)
 *   USE_MASK               1: the forward reads the mask from the reserve space instead of drawing it
 */
#include "types.h"
#include "philox.h"

#ifndef COUNT
#error "COUNT must be defined"
#endif

#define AT(T, n, c, h, w) ((n) * T##S_N + (c) * T##S_C + (h) * T##S_H + (w) * T##S_W)

/* the four words of the block of elements 4 * block .. 4 * block + 3 */
uint4 draw(const int block, __global const uint* states)
{
    return philox4x32_10((uint4)((uint)block, 0u, states[2], states[3]), (uint2)(states[0], states[1]));
}

#if PACKED
#if MIOPY_HALF
#define LOAD4(p, i) vload_half4((i), (p))
#define STORE4(p, i, v) vstore_half4_rte((v), (i), (p))
#else
#define LOAD4(p, i) vload4((i), (p))
#define STORE4(p, i, v) vstore4((v), (i), (p))
#endif

__kernel void dropout_fwd(__global const DATA_T* x, __global DATA_T* y, __global uchar* reserve,
                          __global const uint* states, const ulong threshold, const float scale)
{
    const int block = get_global_id(0);
    if (4 * block >= COUNT) return;
#if !USE_MASK
    const uint4 r = draw(block, states);
#endif
    if (4 * block + 4 <= COUNT) {
#if USE_MASK
        const uchar4 keep = vload4(block, reserve);
#else
        const uchar4 keep = (uchar4)((uchar)(r.x >= threshold), (uchar)(r.y >= threshold), (uchar)(r.z >= threshold),
                                     (uchar)(r.w >= threshold));
        vstore4(keep, block, reserve);
#endif
        STORE4(y, block, LOAD4(x, block) * convert_float4(keep) * scale);
        return;
    }
    for (int k = 0; 4 * block + k < COUNT; ++k) {   /* the tail block */
        const int i = 4 * block + k;
#if USE_MASK
        const uchar keep = reserve[i];
#else
        const uint word = k == 0 ? r.x : k == 1 ? r.y : r.z;
        const uchar keep = word >= threshold;
        reserve[i] = keep;
#endif
        STORE(y, i, LOAD(x, i) * (float)keep * scale);
    }
}

__kernel void dropout_bwd(__global const DATA_T* dy, __global DATA_T* dx, __global const uchar* reserve,
                          const float scale)
{
    const int block = get_global_id(0);
    if (4 * block >= COUNT) return;
    if (4 * block + 4 <= COUNT) {
        STORE4(dx, block, LOAD4(dy, block) * convert_float4(vload4(block, reserve)) * scale);
        return;
    }
    for (int i = 4 * block; i < COUNT; ++i) STORE(dx, i, LOAD(dy, i) * (float)reserve[i] * scale);
}

#else
#define DECOMPOSE(gid) const int w = (gid) % W, h = ((gid) / W) % H, c = ((gid) / (H * W)) % C, n = (gid) / (C * H * W)

__kernel void dropout_fwd(__global const DATA_T* x, __global DATA_T* y, __global uchar* reserve,
                          __global const uint* states, const ulong threshold, const float scale)
{
    const int i = get_global_id(0);
    if (i >= COUNT) return;
    DECOMPOSE(i);
#if USE_MASK
    const uchar keep = reserve[i];
#else
    const uint4 r = draw(i / 4, states);
    const int k = i % 4;
    const uchar keep = (k == 0 ? r.x : k == 1 ? r.y : k == 2 ? r.z : r.w) >= threshold;
    reserve[i] = keep;
#endif
    STORE(y, AT(Y, n, c, h, w), LOAD(x, AT(X, n, c, h, w)) * (float)keep * scale);
}

__kernel void dropout_bwd(__global const DATA_T* dy, __global DATA_T* dx, __global const uchar* reserve,
                          const float scale)
{
    const int i = get_global_id(0);
    if (i >= COUNT) return;
    DECOMPOSE(i);
    STORE(dx, AT(Y, n, c, h, w), LOAD(dy, AT(X, n, c, h, w)) * (float)reserve[i] * scale);
}
#endif

/* state evolution: the next draw uses the next offset */
__kernel void dropout_advance(__global uint* states)
{
    const uint low = states[2] + 1u;
    states[2] = low;
    states[3] += low == 0u;
}
