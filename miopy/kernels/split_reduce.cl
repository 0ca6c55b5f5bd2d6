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
    float sum = 0.0f;   /* blocks of 16 partials, then the blocks: fixed order, rounding of ~SPLIT_K/16 + 16 adds */
    for (int s0 = 0; s0 < SPLIT_K; s0 += 16) {
        float block = 0.0f;
        for (int s = s0; s < min(s0 + 16, SPLIT_K); ++s) block += partial[part_off + s * COUNT + i];
        sum += block;
    }
    STORE(out, out_off + i, beta == 0.0f ? sum : mad(beta, LOAD(out, out_off + i), sum));
}
