/* Blend a result into an output: out = alpha * result + beta * out (out is not read when beta == 0).
 * 64-bit indices: outputs may hold 2^31 elements or more. */
__kernel void blend(__global float* restrict out, __global const float* restrict result,
                    const float alpha, const float beta, const ulong count)
{
    const size_t i = get_global_id(0);
    if (i >= count) return;
    out[i] = beta == 0.0f ? alpha * result[i] : alpha * result[i] + beta * out[i];
}

/* Fill count floats with value (used to zero outputs that kernels accumulate into). */
__kernel void fill(__global float* restrict out, const float value, const int count)
{
    const int i = get_global_id(0);
    if (i < count) out[i] = value;
}
