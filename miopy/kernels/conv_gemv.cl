/* Fully connected layers with few images, forward: a 1x1 convolution of 1x1 images (N x C x 1 x 1 ->
 * N x K x 1 x 1), y[n][k] = epilogue(sum_c w[k][c] * x[n][c]). One work-group per ROWS output channels,
 * for all N images. Its WG work-items form IMAGE_GROUPS groups of LANES = WG / IMAGE_GROUPS lanes, the group
 * index fastest (work-item = lane * IMAGE_GROUPS + group): group g takes images g*NPG .. g*NPG+NPG-1
 * (NPG = ceil(N / IMAGE_GROUPS)); lanes stride over C by VEC consecutive channels, so the groups of one
 * SIMD unit read each weight together (one fetch, shared) and each weight leaves global memory once, and
 * consecutive lanes read consecutive weights and inputs (coalesced). Each work-item keeps ROWS x NPG partial
 * sums in registers; they are added over the lanes in local memory by a tree reduction (a fixed order:
 * deterministic) and the work-group stores its ROWS x N outputs with the epilogue, consecutive work-items
 * on consecutive output channels. IMAGE_GROUPS = 1 is the matrix-vector form for a handful of images.
 *
 * Rows past K and images past N (the last work-group's, the last image groups') re-read row K-1 / image
 * N-1 instead of branching in the inner loop; their sums are never stored.
 *
 * Defines (all ints):
 *   N C K         images, input channels, output channels (tensors packed)
 *   ROWS          output channels per work-group
 *   IMAGE_GROUPS  groups of work-items, each summing NPG images (a power of two dividing WG)
 *   WG            work-items per work-group (a power of two)
 *   VEC           channels per load: 1, or 4 (C a multiple of 4: float4 / vload_half4)
 *   MIOPY_FUSED, FUSE_*   the epilogue (epilogue.h)
 *   MIOPY_HALF    x, w, y hold half values (kernels/types.h); sums are float
 */
#include "types.h"
#include "epilogue.h"

#if !defined(N) || !defined(C) || !defined(K) || !defined(ROWS) || !defined(IMAGE_GROUPS) || !defined(WG) \
    || !defined(VEC)
#error "N, C, K, ROWS, IMAGE_GROUPS, WG and VEC must be defined"
#endif
#if WG % IMAGE_GROUPS != 0 || C % VEC != 0
#error "IMAGE_GROUPS must divide WG and VEC must divide C"
#endif

#define NPG ((N + IMAGE_GROUPS - 1) / IMAGE_GROUPS)
#define LANES (WG / IMAGE_GROUPS)
#define OUTS (ROWS * NPG)

#if VEC == 4
typedef float4 vec_t;
#if MIOPY_HALF
#define LOAD_VEC(p, i) vload_half4((i) / 4, (p))
#else
#define LOAD_VEC(p, i) (*(__global const float4*)((p) + (i)))
#endif
#define MAC(acc, a, b) fma((a).w, (b).w, fma((a).z, (b).z, fma((a).y, (b).y, fma((a).x, (b).x, (acc)))))
#elif VEC == 1
typedef float vec_t;
#define LOAD_VEC(p, i) LOAD(p, i)
#define MAC(acc, a, b) fma((a), (b), (acc))
#else
#error "VEC must be 1 or 4"
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_gemv(__global const DATA_T* restrict x, __global const DATA_T* restrict w, __global DATA_T* restrict y
               MIOPY_EPILOGUE_PARAMS)
{
    __local float partial[OUTS * WG];
    const int lid = get_local_id(0);
    const int lane = lid / IMAGE_GROUPS, n0 = (lid % IMAGE_GROUPS) * NPG;
    const int k0 = get_group_id(0) * ROWS;
    float acc[OUTS];
    #pragma unroll
    for (int o = 0; o < OUTS; ++o) acc[o] = 0.0f;
    for (int c = lane * VEC; c < C; c += LANES * VEC) {
        vec_t xv[NPG];
        #pragma unroll
        for (int j = 0; j < NPG; ++j) xv[j] = LOAD_VEC(x, min(n0 + j, N - 1) * C + c);
        #pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const vec_t wv = LOAD_VEC(w, min(k0 + r, K - 1) * C + c);
            #pragma unroll
            for (int j = 0; j < NPG; ++j) acc[r * NPG + j] = MAC(acc[r * NPG + j], wv, xv[j]);
        }
    }
    #pragma unroll
    for (int o = 0; o < OUTS; ++o) partial[o * WG + lid] = acc[o];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = LANES / 2; s > 0; s >>= 1) {
        if (lane < s) {
            #pragma unroll
            for (int o = 0; o < OUTS; ++o) partial[o * WG + lid] += partial[o * WG + lid + s * IMAGE_GROUPS];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int t = lid; t < ROWS * N; t += WG) {   /* lane 0 of group g (work-item g) holds the group's sums */
        const int n = t / ROWS, r = t % ROWS, k = k0 + r;
        const float sum = partial[(r * NPG + n % NPG) * WG + n / NPG];
        if (k < K) STORE(y, n * K + k, MIOPY_EPILOGUE(sum, k, 0, n * K + k));
    }
}
