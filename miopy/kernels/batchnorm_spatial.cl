/* Spatial batch norm (statistics per channel over N, H, W), training forward and backward, in two shapes:
 *
 * Single: one work-group per channel does everything in one launch (bn_spatial_fwd_single,
 * bn_spatial_bwd_single): a pass for the mean, one for the variance (two-pass, on data shifted by the
 * channel's first value), then one writing the output. Best when N*H*W is small and C large.
 *
 * Split: a two-stage reduction spread over CHUNKS work-groups per channel: each chunk's (mean, m2) by the
 * same two-pass scheme (the second pass re-reads the chunk from cache), merged per channel in a fixed order
 * with Chan's formula, then an element-wise pass. Best when N*H*W is large (few channels would leave a
 * device idle). Both are deterministic: every sum has a fixed order.
 *
 * Defines (all ints), beside batchnorm.h's and batchnorm_stats.h's:
 *   WG         work-group size (a power of two)
 *   CHUNK      elements of a channel per chunk (split); CHUNKS = ceil(N*H*W / CHUNK)
 *   GROUP      channels per launch (split): each launch covers channels c0 .. c0 + GROUP - 1 (c0 a kernel
 *              argument), so a group's stages can run back to back while its data is still in the cache
 *   PIVOT_OFF MEAN_OFF INV_OFF DB_OFF DS_OFF   float offsets in the workspace of the per-channel pivot
 *              (first value), mean - pivot, inverse standard deviation, sum of dy and dscale (split); chunk
 *              partials start at 0
 *   BACKWARD   the backward kernels (with SAVED, they read saved_mean / saved_inv_variance)
 *
 * x - mean is computed as (x - pivot) - (mean - pivot): the first subtraction is exact for data near
 * the pivot, so a large mean costs no precision.
 */
#include "batchnorm.h"
#include "batchnorm_stats.h"

#ifndef WG
#error "WG must be defined"
#endif

#define M (N * HW)
/* offset of element j (0 <= j < N*H*W) of channel c in tensor T */
#define AT_J(T, c, j) OFF(T, (j) / HW, c, (j) % HW)

/* The channel's mean and m2 over elements [begin, end), two-pass on x - pivot; returns mean - pivot. */
float2 shifted_stats(__global const DATA_T* x, const int c, const int begin, const int end, const float pivot,
                     __local float* scratch)
{
    const int lid = get_local_id(0);
    float s = 0.0f;
    for (int j = begin + lid; j < end; j += WG) s += LOAD(x, AT_J(X, c, j)) - pivot;
    const float mean = wg_sum(s, scratch) / (float)(end - begin);
    float q = 0.0f;
    for (int j = begin + lid; j < end; j += WG) {
        const float d = LOAD(x, AT_J(X, c, j)) - pivot - mean;
        q = fma(d, d, q);
    }
    return (float2)(mean, wg_sum(q, scratch));
}

#ifdef SINGLE
/* ---------------------------------------------------------------------------------------------------- */
#ifndef BACKWARD
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_spatial_fwd_single(__global const DATA_T* x, __global DATA_T* y, __global const float* restrict scale,
                           __global const float* restrict bias RUNNING_PARAMS SAVED_PARAMS, const float alpha,
                           const float beta, const float epsilon, const float factor)
{
    __local float scratch[WG];
    const int c = get_group_id(0), lid = get_local_id(0);
    const float pivot = LOAD(x, OFF(X, 0, c, 0));
    const float2 stats = shifted_stats(x, c, 0, M, pivot, scratch);
    const float var = stats.y / (float)M, inv = rsqrt(var + epsilon);
    if (lid == 0) {
        SAVE_STATS(c, pivot + stats.x, inv);
        RUNNING_UPDATE(c, pivot + stats.x, var);
    }
    const float a = scale[c] * inv, b = bias[c];
    for (int j = lid; j < M; j += WG)
        STORE_BLEND(y, AT_J(Y, c, j), fma(a, (LOAD(x, AT_J(X, c, j)) - pivot) - stats.x, b), alpha, beta);
}
#else
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_spatial_bwd_single(__global const DATA_T* x, __global const DATA_T* dy, __global DATA_T* dx,
                           __global const float* restrict scale, __global float* restrict dscale,
                           __global float* restrict dbias SAVED_PARAMS, const float alpha_data,
                           const float beta_data, const float alpha_param, const float beta_param,
                           const float epsilon)
{
    __local float scratch[2 * WG];
    const int c = get_group_id(0), lid = get_local_id(0);
#if SAVED
    const float pivot = saved_mean[c], mean = 0.0f, inv = saved_inv_variance[c];
#else
    const float pivot = LOAD(x, OFF(X, 0, c, 0));
    const float2 stats = shifted_stats(x, c, 0, M, pivot, scratch);
    const float mean = stats.x, inv = rsqrt(stats.y / (float)M + epsilon);
#endif
    /* x - batch mean, as (x - pivot) - (mean - pivot): exact subtraction first, no rounding of a large mean */
#define XC(j) ((LOAD(x, AT_J(X, c, j)) - pivot) - mean)
    float2 acc = (float2)(0.0f, 0.0f);
    for (int j = lid; j < M; j += WG) {
        const float g = LOAD(dy, AT_J(DY, c, j));
        acc.x += g;
        acc.y = fma(g, XC(j), acc.y);
    }
    acc = wg_sum2(acc, scratch);
    const float sum_dy = acc.x, ds = acc.y * inv;
    if (lid == 0) {
        STORE_BLEND_F(dscale, c, ds, alpha_param, beta_param);
        STORE_BLEND_F(dbias, c, sum_dy, alpha_param, beta_param);
    }
    const float a = scale[c] * inv, mean_dy = sum_dy / (float)M, ds_m = ds * inv / (float)M;
    for (int j = lid; j < M; j += WG) {
        const float v = a * (LOAD(dy, AT_J(DY, c, j)) - mean_dy - XC(j) * ds_m);
        STORE_BLEND(dx, AT_J(DX, c, j), v, alpha_data, beta_data);
    }
}
#endif

#else
/* ---------------------------------------------------------------------------------------------------- */
#if !defined(CHUNK) || !defined(MEAN_OFF) || !defined(INV_OFF) || !defined(PIVOT_OFF)
#error "CHUNK, MEAN_OFF, INV_OFF and PIVOT_OFF must be defined"
#endif
#ifndef GROUP
#error "GROUP must be defined"
#endif
#define CHUNKS ((M + CHUNK - 1) / CHUNK)
#define CHUNK_END(g) min(M, ((g) + 1) * CHUNK)

/* Stage 1: each chunk's (mean of x - pivot, m2) into workspace[2 * (c * CHUNKS + g)]. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_spatial_chunk_stats(__global const DATA_T* restrict x, __global float* restrict ws, const int c0)
{
    __local float scratch[WG];
    const int group = get_group_id(0), c = c0 + group / CHUNKS, g = group % CHUNKS;
    const float pivot = LOAD(x, OFF(X, 0, c, 0));
    const float2 stats = shifted_stats(x, c, g * CHUNK, CHUNK_END(g), pivot, scratch);
    if (get_local_id(0) == 0) vstore2(stats, c * CHUNKS + g, ws);
}

/* Stage 2: one work-group per channel merges its chunks (Chan, fixed order) into the workspace's pivot,
 * mean - pivot and inverse standard deviation; saved and running statistics when asked. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_spatial_merge_stats(__global const DATA_T* restrict x, __global float* restrict ws RUNNING_PARAMS
                            SAVED_PARAMS, const float epsilon, const float factor, const int c0)
{
    __local int s_n[WG];
    __local float s_mean[WG], s_m2[WG];
    const int c = c0 + get_group_id(0), lid = get_local_id(0);
    int n = 0;
    float mean = 0.0f, m2 = 0.0f;
    for (int g = lid; g < CHUNKS; g += WG) {
        const float2 part = vload2(c * CHUNKS + g, ws);
        chan_merge(&n, &mean, &m2, CHUNK_END(g) - g * CHUNK, part.x, part.y);
    }
    s_n[lid] = n; s_mean[lid] = mean; s_m2[lid] = m2;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) {
            chan_merge(&n, &mean, &m2, s_n[lid + s], s_mean[lid + s], s_m2[lid + s]);
            s_n[lid] = n; s_mean[lid] = mean; s_m2[lid] = m2;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        const float pivot = LOAD(x, OFF(X, 0, c, 0)), var = m2 / (float)M, inv = rsqrt(var + epsilon);
        ws[PIVOT_OFF + c] = pivot;
        ws[MEAN_OFF + c] = mean;
        ws[INV_OFF + c] = inv;
        SAVE_STATS(c, pivot + mean, inv);
        RUNNING_UPDATE(c, pivot + mean, var);
    }
}

#ifndef BACKWARD
/* Stage 3: y = scale * (x - mean) * inv + bias element-wise (in place allowed: the pivot is in ws). */
__kernel void bn_spatial_normalize(__global const DATA_T* x, __global DATA_T* y, __global const float* restrict scale,
                                   __global const float* restrict bias, __global const float* restrict ws,
                                   const float alpha, const float beta, const int c0)
{
    const int gid = get_global_id(0);
    if (gid >= N * GROUP * HW) return;
    const int hw = gid % HW, c = c0 + (gid / HW) % GROUP, n = gid / (GROUP * HW);
    const float xc = (LOAD(x, OFF(X, n, c, hw)) - ws[PIVOT_OFF + c]) - ws[MEAN_OFF + c];
    STORE_BLEND(y, OFF(Y, n, c, hw), fma(scale[c] * ws[INV_OFF + c], xc, bias[c]), alpha, beta);
}

#else
#if !defined(DB_OFF) || !defined(DS_OFF)
#error "DB_OFF and DS_OFF must be defined"
#endif
/* x - batch mean and the inverse standard deviation of channel c: the saved ones, or the workspace's */
#if SAVED
#define XC(v, c) ((v) - saved_mean[c])
#define INV(c) saved_inv_variance[c]
#else
#define XC(v, c) (((v) - ws[PIVOT_OFF + (c)]) - ws[MEAN_OFF + (c)])
#define INV(c) ws[INV_OFF + (c)]
#endif

/* Stage 3: each chunk's (sum dy, sum dy * (x - mean)) into workspace[2 * (c * CHUNKS + g)]. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_spatial_chunk_grad(__global const DATA_T* restrict x, __global const DATA_T* restrict dy,
                           __global float* restrict ws SAVED_PARAMS, const int c0)
{
    __local float scratch[2 * WG];
    const int group = get_group_id(0), c = c0 + group / CHUNKS, g = group % CHUNKS;
    float2 acc = (float2)(0.0f, 0.0f);
    for (int j = g * CHUNK + get_local_id(0); j < CHUNK_END(g); j += WG) {
        const float d = LOAD(dy, AT_J(DY, c, j));
        acc.x += d;
        acc.y = fma(d, XC(LOAD(x, AT_J(X, c, j)), c), acc.y);
    }
    acc = wg_sum2(acc, scratch);
    if (get_local_id(0) == 0) vstore2(acc, c * CHUNKS + g, ws);
}

/* Stage 4: per channel, the chunks' sums in a fixed order: dbias = sum dy, dscale = inv * sum dy * (x - mean),
 * kept unblended in the workspace for stage 5 and blended into dscale / dbias. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_spatial_merge_grad(__global float* restrict ws, __global float* restrict dscale,
                           __global float* restrict dbias SAVED_PARAMS, const float alpha_param, const float beta_param,
                           const int c0)
{
    __local float scratch[2 * WG];
    const int c = c0 + get_group_id(0), lid = get_local_id(0);
    float2 acc = (float2)(0.0f, 0.0f);
    for (int g = lid; g < CHUNKS; g += WG) acc += vload2(c * CHUNKS + g, ws);
    acc = wg_sum2(acc, scratch);
    if (lid == 0) {
        const float ds = acc.y * INV(c);
        ws[DB_OFF + c] = acc.x;
        ws[DS_OFF + c] = ds;
        STORE_BLEND_F(dscale, c, ds, alpha_param, beta_param);
        STORE_BLEND_F(dbias, c, acc.x, alpha_param, beta_param);
    }
}

/* Stage 5: dx = scale * inv * (dy - dbias / M - (x - mean) * inv * dscale / M) element-wise. */
__kernel void bn_spatial_dx(__global const DATA_T* x, __global const DATA_T* dy, __global DATA_T* dx,
                            __global const float* restrict scale, __global const float* restrict ws SAVED_PARAMS,
                            const float alpha_data, const float beta_data, const int c0)
{
    const int gid = get_global_id(0);
    if (gid >= N * GROUP * HW) return;
    const int hw = gid % HW, c = c0 + (gid / HW) % GROUP, n = gid / (GROUP * HW);
    const float inv = INV(c);
    const float v = scale[c] * inv * (LOAD(dy, OFF(DY, n, c, hw)) - ws[DB_OFF + c] / (float)M
                                      - XC(LOAD(x, OFF(X, n, c, hw)), c) * (inv * ws[DS_OFF + c] / (float)M));
    STORE_BLEND(dx, OFF(DX, n, c, hw), v, alpha_data, beta_data);
}
#endif
#endif
