/* Batch-norm inference with estimated statistics, both modes: y = scale * (x - mean) / sqrt(var + epsilon)
 * + bias, one work-item per element (in place allowed: no restrict on x and y).
 *
 * Defines: batchnorm.h's, and SPATIAL (1: parameters per channel, index c; 0: per element, c * H * W + hw).
 */
#include "batchnorm.h"

#ifndef SPATIAL
#error "SPATIAL must be defined"
#endif

__kernel void bn_inference(__global const DATA_T* x, __global DATA_T* y, __global const float* restrict scale,
                           __global const float* restrict bias, __global const float* restrict estimated_mean,
                           __global const float* restrict estimated_variance, const float alpha, const float beta,
                           const float epsilon)
{
    const int gid = get_global_id(0);
    if (gid >= N * C * HW) return;
    const int hw = gid % HW, c = (gid / HW) % C, n = gid / (C * HW);
    const int i = SPATIAL ? c : c * HW + hw;
    const float a = scale[i] * rsqrt(estimated_variance[i] + epsilon);
    STORE_BLEND(y, OFF(Y, n, c, hw), fma(a, LOAD(x, OFF(X, n, c, hw)) - estimated_mean[i], bias[i]), alpha, beta);
}
