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
 *   STAGE         0: every work-item reads its weights from global memory (the groups of a SIMD unit share
 *                 each fetch, but each work-item holds a copy: few distinct bytes in flight per work-item);
 *                 S > 0 (VEC 4): the work-group copies ROWS x (S * LANES * 4) weights at a time into
 *                 local memory, each weight fetched by one work-item, the next tile's loads in flight
 *                 (ROWS * S / IMAGE_GROUPS float4s per work-item) while the current one is summed
 *   MIOPY_FUSED, FUSE_*   the epilogue (epilogue.h)
 *   MIOPY_HALF    x, w, y hold half values (kernels/types.h); sums are float
 */
#include "types.h"
#include "epilogue.h"

#if !defined(N) || !defined(C) || !defined(K) || !defined(ROWS) || !defined(IMAGE_GROUPS) || !defined(WG) \
    || !defined(VEC) || !defined(STAGE)
#error "N, C, K, ROWS, IMAGE_GROUPS, WG, VEC and STAGE must be defined"
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

#if STAGE
#define STEP_CH (LANES * 4)              /* channels one step of every lane covers */
#define TILE_CH (STAGE * STEP_CH)        /* channels of one staged weight tile */
#define TILE_VECS (ROWS * TILE_CH / 4)   /* its float4s, row-major */
#define W_REGS (TILE_VECS / WG)          /* float4s each work-item fetches per tile */
#if VEC != 4 || TILE_VECS % WG != 0
#error "STAGE needs VEC 4 and ROWS * STAGE a multiple of IMAGE_GROUPS"
#endif
#define LOCAL_FLOATS (OUTS * WG > 4 * TILE_VECS ? OUTS * WG : 4 * TILE_VECS)

/* The weight tile of channels c0 .. c0 + TILE_CH - 1 (zeros past C): float4 f = lid + i * WG of it is
 * row f / (TILE_CH / 4), channels c0 + (f % (TILE_CH / 4)) * 4 ...: consecutive work-items, consecutive
 * channels of a row. */
inline void fetch_tile(__global const DATA_T* restrict w, float4* reg, int k0, int c0, int lid)
{
    #pragma unroll
    for (int i = 0; i < W_REGS; ++i) {
        const int f = lid + i * WG, c = c0 + (f % (TILE_CH / 4)) * 4;
        reg[i] = c < C ? LOAD_VEC(w, min(k0 + f / (TILE_CH / 4), K - 1) * C + c) : (float4)(0.0f);
    }
}
#else
#define LOCAL_FLOATS (OUTS * WG)
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_gemv(__global const DATA_T* restrict x, __global const DATA_T* restrict w, __global DATA_T* restrict y
               MIOPY_EPILOGUE_PARAMS)
{
    __local float4 shared4[LOCAL_FLOATS / 4];   /* the weight tile (STAGE), then the partial sums */
    __local float* partial = (__local float*)shared4;
    const int lid = get_local_id(0);
    const int lane = lid / IMAGE_GROUPS, n0 = (lid % IMAGE_GROUPS) * NPG;
    const int k0 = get_group_id(0) * ROWS;
    float acc[OUTS];
    #pragma unroll
    for (int o = 0; o < OUTS; ++o) acc[o] = 0.0f;
#if STAGE
    float4 wreg[W_REGS];
    fetch_tile(w, wreg, k0, 0, lid);
    for (int c0 = 0; c0 < C; c0 += TILE_CH) {
        barrier(CLK_LOCAL_MEM_FENCE);            /* the previous tile is summed */
        #pragma unroll
        for (int i = 0; i < W_REGS; ++i) shared4[lid + i * WG] = wreg[i];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (c0 + TILE_CH < C) fetch_tile(w, wreg, k0, c0 + TILE_CH, lid);   /* in flight while summing */
        #pragma unroll
        for (int step = 0; step < STAGE; ++step) {
            const int cc = step * STEP_CH + lane * 4;
            if (c0 + cc < C) {
                float4 xv[NPG];
                #pragma unroll
                for (int j = 0; j < NPG; ++j) xv[j] = LOAD_VEC(x, min(n0 + j, N - 1) * C + c0 + cc);
                #pragma unroll
                for (int r = 0; r < ROWS; ++r) {
                    const float4 wv = shared4[(r * TILE_CH + cc) / 4];
                    #pragma unroll
                    for (int j = 0; j < NPG; ++j) acc[r * NPG + j] = MAC(acc[r * NPG + j], wv, xv[j]);
                }
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);                /* the last tile is summed: the partials may overwrite it */
#else
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
#endif
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
