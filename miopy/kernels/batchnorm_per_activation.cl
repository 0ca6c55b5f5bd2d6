/* Per-activation batch norm (statistics per (c, h, w) element over the batch), training forward and
 * backward: one work-item per element position p = c * H * W + hw, looping over the N batch entries in a
 * fixed order. Statistics are two-pass on data shifted by the position's first value (the pivot), and
 * x - mean is computed as (x - pivot) - (mean - pivot), so a large mean costs no precision.
 *
 * Defines: batchnorm.h's and batchnorm_stats.h's (COUNT = N); BACKWARD for the backward kernel.
 */
#include "batchnorm.h"
#include "batchnorm_stats.h"

/* (mean - pivot, biased variance) of position (c, hw) over the batch, pivot its first value */
float2 position_stats(__global const DATA_T* x, const int c, const int hw, const float pivot)
{
    float s = 0.0f;
    for (int n = 0; n < N; ++n) s += LOAD(x, OFF(X, n, c, hw)) - pivot;
    const float mean = s / (float)N;
    float q = 0.0f;
    for (int n = 0; n < N; ++n) {
        const float d = LOAD(x, OFF(X, n, c, hw)) - pivot - mean;
        q = fma(d, d, q);
    }
    return (float2)(mean, q / (float)N);
}

#ifndef BACKWARD
__kernel void bn_per_activation_fwd(__global const DATA_T* x, __global DATA_T* y, __global const float* restrict scale,
                                    __global const float* restrict bias RUNNING_PARAMS SAVED_PARAMS,
                                    const float alpha, const float beta, const float epsilon, const float factor)
{
    const int p = get_global_id(0);
    if (p >= C * HW) return;
    const int c = p / HW, hw = p % HW;
    const float pivot = LOAD(x, OFF(X, 0, c, hw));
    const float2 stats = position_stats(x, c, hw, pivot);
    const float inv = rsqrt(stats.y + epsilon);
    SAVE_STATS(p, pivot + stats.x, inv);
    RUNNING_UPDATE(p, pivot + stats.x, stats.y);
    const float a = scale[p] * inv, b = bias[p];
    for (int n = 0; n < N; ++n)
        STORE_BLEND(y, OFF(Y, n, c, hw), fma(a, (LOAD(x, OFF(X, n, c, hw)) - pivot) - stats.x, b), alpha, beta);
}
#else
__kernel void bn_per_activation_bwd(__global const DATA_T* x, __global const DATA_T* dy, __global DATA_T* dx,
                                    __global const float* restrict scale, __global float* restrict dscale,
                                    __global float* restrict dbias SAVED_PARAMS, const float alpha_data,
                                    const float beta_data, const float alpha_param, const float beta_param,
                                    const float epsilon)
{
    const int p = get_global_id(0);
    if (p >= C * HW) return;
    const int c = p / HW, hw = p % HW;
#if SAVED
    const float pivot = saved_mean[p], mean = 0.0f, inv = saved_inv_variance[p];
#else
    const float pivot = LOAD(x, OFF(X, 0, c, hw));
    const float2 stats = position_stats(x, c, hw, pivot);
    const float mean = stats.x, inv = rsqrt(stats.y + epsilon);
#endif
    float sum_dy = 0.0f, sum_dyx = 0.0f;
    for (int n = 0; n < N; ++n) {
        const float g = LOAD(dy, OFF(DY, n, c, hw));
        sum_dy += g;
        sum_dyx = fma(g, (LOAD(x, OFF(X, n, c, hw)) - pivot) - mean, sum_dyx);
    }
    const float ds = sum_dyx * inv;
    STORE_BLEND_F(dscale, p, ds, alpha_param, beta_param);
    STORE_BLEND_F(dbias, p, sum_dy, alpha_param, beta_param);
    const float a = scale[p] * inv, mean_dy = sum_dy / (float)N, ds_n = ds * inv / (float)N;
    for (int n = 0; n < N; ++n) {
        const float xc = (LOAD(x, OFF(X, n, c, hw)) - pivot) - mean;
        STORE_BLEND(dx, OFF(DX, n, c, hw), a * (LOAD(dy, OFF(DY, n, c, hw)) - mean_dy - xc * ds_n),
                    alpha_data, beta_data);
    }
}
#endif
