/* Fixed-order compensated sum of the partial results of a split GEMM (gemm.cl with SPLIT_K > 1): deterministic.
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
    float sum = 0.0f, low = 0.0f;   /* compensated, in split order: rounds like a sum of ~2 terms */
    for (int s = 0; s < SPLIT_K; ++s) {
        low += partial[part_off + s * COUNT + i];
        COMPENSATED_ADD(float, sum, low)
    }
    sum += low;
    STORE(out, out_off + i, beta == 0.0f ? sum : mad(beta, LOAD(out, out_off + i), sum));
}
