/* Fixed-order sum of the partial results of a split GEMM (gemm.cl with SPLIT_K > 1): deterministic.
 *
 *     out[out_off + i] = sum_{s < SPLIT_K} partial[part_off + s*COUNT + i]  (+ beta * out[out_off + i])
 *
 * Defines: SPLIT_K (number of partials), COUNT (elements per partial), MIOPY_HALF (out holds half values;
 * partials are always float). out is not read when beta == 0.
 */
#include "types.h"

__kernel void split_reduce(__global const float* restrict partial, __global DATA_T* restrict out,
                           const int part_off, const int out_off, const float beta)
{
    const int i = get_global_id(0);
    if (i >= COUNT) return;
    float sum = 0.0f;
    for (int s = 0; s < SPLIT_K; ++s) sum += partial[part_off + s * COUNT + i];
    STORE(out, out_off + i, beta == 0.0f ? sum : mad(beta, LOAD(out, out_off + i), sum));
}
