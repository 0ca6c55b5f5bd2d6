/* Spatial batch norm, training forward and backward, with a channel held in registers: one work-group per
 * channel, each work-item keeping its ITEMS elements of the channel in private memory (registers), so the
 * data is read from memory once and written once. The statistics are an exact two-pass over the held
 * values (on x - pivot, the channel's first value: a large mean costs no precision); every sum has a fixed
 * order, so results are deterministic. Element j of the channel (0 <= j < N*H*W) is held by work-item
 * j % WG as its item j / WG: consecutive work-items read consecutive elements.
 *
 * Defines (all ints), beside batchnorm.h's and batchnorm_stats.h's:
 *   WG         work-group size (a power of two)
 *   ITEMS      elements each work-item holds: ceil(N*H*W / WG)
 *   BACKWARD   the backward kernel (with SAVED, it reads saved_mean / saved_inv_variance)
 */
#include "batchnorm.h"
#include "batchnorm_stats.h"

#if !defined(WG) || !defined(ITEMS)
#error "WG and ITEMS must be defined"
#endif

#define M (N * HW)
#define AT_J(T, c, j) OFF(T, (j) / HW, c, (j) % HW)
#define J(k) (lid + (k) * WG)

#ifndef BACKWARD
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_resident_fwd(__global const DATA_T* x, __global DATA_T* y, __global const float* restrict scale,
                     __global const float* restrict bias RUNNING_PARAMS SAVED_PARAMS, const float alpha,
                     const float beta, const float epsilon, const float factor)
{
    __local float scratch[WG];
    const int c = get_group_id(0), lid = get_local_id(0);
    const float pivot = LOAD(x, OFF(X, 0, c, 0));
    float v[ITEMS];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        v[k] = J(k) < M ? LOAD(x, AT_J(X, c, J(k))) - pivot : 0.0f;
        s += v[k];
    }
    const float mean = wg_sum(s, scratch) / (float)M;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const float d = J(k) < M ? v[k] - mean : 0.0f;
        q = fma(d, d, q);
    }
    const float var = wg_sum(q, scratch) / (float)M, inv = rsqrt(var + epsilon);
    if (lid == 0) {
        SAVE_STATS(c, pivot + mean, inv);
        RUNNING_UPDATE(c, pivot + mean, var);
    }
    const float a = scale[c] * inv, b = bias[c];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        if (J(k) < M) STORE_BLEND(y, AT_J(Y, c, J(k)), fma(a, v[k] - mean, b), alpha, beta);
}

#else
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_resident_bwd(__global const DATA_T* x, __global const DATA_T* dy, __global DATA_T* dx,
                     __global const float* restrict scale, __global float* restrict dscale,
                     __global float* restrict dbias SAVED_PARAMS, const float alpha_data, const float beta_data,
                     const float alpha_param, const float beta_param, const float epsilon)
{
    __local float scratch[2 * WG];
    const int c = get_group_id(0), lid = get_local_id(0);
    float xc[ITEMS], g[ITEMS];   /* x - pivot, then x - batch mean; dy */
#if SAVED
    const float pivot = saved_mean[c], mean = 0.0f, inv = saved_inv_variance[c];
#else
    const float pivot = LOAD(x, OFF(X, 0, c, 0));
#endif
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const bool in = J(k) < M;
        xc[k] = in ? LOAD(x, AT_J(X, c, J(k))) - pivot : 0.0f;
        g[k] = in ? LOAD(dy, AT_J(DY, c, J(k))) : 0.0f;
        s += xc[k];
    }
#if !SAVED
    const float mean = wg_sum(s, scratch) / (float)M;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const float d = J(k) < M ? xc[k] - mean : 0.0f;
        q = fma(d, d, q);
    }
    const float inv = rsqrt(wg_sum(q, scratch) / (float)M + epsilon);
#endif
    float2 acc = (float2)(0.0f, 0.0f);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        xc[k] = J(k) < M ? xc[k] - mean : 0.0f;
        acc.x += g[k];
        acc.y = fma(g[k], xc[k], acc.y);
    }
    acc = wg_sum2(acc, scratch);
    const float sum_dy = acc.x, ds = acc.y * inv;
    if (lid == 0) {
        STORE_BLEND_F(dscale, c, ds, alpha_param, beta_param);
        STORE_BLEND_F(dbias, c, sum_dy, alpha_param, beta_param);
    }
    const float a = scale[c] * inv, mean_dy = sum_dy / (float)M, ds_m = ds * inv / (float)M;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        if (J(k) < M) STORE_BLEND(dx, AT_J(DX, c, J(k)), a * (g[k] - mean_dy - xc[k] * ds_m), alpha_data, beta_data);
}
#endif
