/* Fully connected layers with few images, forward: a 1x1 convolution of 1x1 images (N x C x 1 x 1 ->
 * N x K x 1 x 1), y[n][k] = epilogue(sum_c w[k][c] * x[n][c]). One work-group per ROWS output channels:
 * its WG work-items stride over C (consecutive items read consecutive weights: each weight is read once,
 * coalesced), each keeping ROWS x N partial sums; the partials are added in local memory by a tree
 * reduction (a fixed order: deterministic) and one work-item per (row, image) stores with the epilogue.
 *
 * Defines (all ints):
 *   N C K        images, input channels, output channels (tensors packed)
 *   ROWS         output channels per work-group
 *   WG           work-items per work-group (a power of two)
 *   MIOPY_FUSED, FUSE_*   the epilogue (epilogue.h)
 *   MIOPY_HALF   x, w, y hold half values (kernels/types.h); sums are float
 */
#include "types.h"
#include "epilogue.h"

#if !defined(N) || !defined(C) || !defined(K) || !defined(ROWS) || !defined(WG)
#error "N, C, K, ROWS and WG must be defined"
#endif

#define OUTS (ROWS * N)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_gemv(__global const DATA_T* restrict x, __global const DATA_T* restrict w, __global DATA_T* restrict y
               MIOPY_EPILOGUE_PARAMS)
{
    __local float partial[OUTS * WG];
    const int lid = get_local_id(0);
    const int k0 = get_group_id(0) * ROWS;
    float acc[OUTS];
    #pragma unroll
    for (int o = 0; o < OUTS; ++o) acc[o] = 0.0f;
    for (int c = lid; c < C; c += WG) {
        float xv[N];
        #pragma unroll
        for (int n = 0; n < N; ++n) xv[n] = LOAD(x, n * C + c);
        #pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const float wv = k0 + r < K ? LOAD(w, (k0 + r) * C + c) : 0.0f;
            #pragma unroll
            for (int n = 0; n < N; ++n) acc[r * N + n] = fma(wv, xv[n], acc[r * N + n]);
        }
    }
    #pragma unroll
    for (int o = 0; o < OUTS; ++o) partial[o * WG + lid] = acc[o];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) {
            #pragma unroll
            for (int o = 0; o < OUTS; ++o) partial[o * WG + lid] += partial[o * WG + lid + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid < OUTS) {
        const int k = k0 + lid / N, n = lid % N;
        if (k < K) STORE(y, n * K + k, MIOPY_EPILOGUE(partial[lid * WG], k, 0, n * K + k));
    }
}
