/* Blend a result into an output, and fill a buffer with a value.
 *
 * Defines: MIOPY_HALF (kernels/types.h): the storage type of out and result (arithmetic is float).
 */
#include "types.h"

/* out = alpha * result + beta * out (out is not read when beta == 0); 64-bit indices: an output may hold
 * 2^31 elements or more. */
__kernel void blend(__global DATA_T* restrict out, __global const DATA_T* restrict result,
                    const float alpha, const float beta, const ulong count)
{
    const size_t i = get_global_id(0);
    if (i >= count) return;
    const float r = alpha * LOAD(result, i);
    STORE(out, i, beta == 0.0f ? r : r + beta * LOAD(out, i));
}

/* Fill count elements with value (used to zero outputs that kernels accumulate into). */
__kernel void fill(__global DATA_T* restrict out, const float value, const int count)
{
    const int i = get_global_id(0);
    if (i < count) STORE(out, i, value);
}
