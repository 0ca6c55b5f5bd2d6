/* Device microbenchmarks: fp32 FMA peak and copy bandwidth. ITERS is a define. */
__kernel void fma_peak(__global float* out, const float a, const float b)
{
    const int gid = get_global_id(0);
    float4 x0 = (float4)(gid * 1e-7f) + (float4)(0.0f, 0.1f, 0.2f, 0.3f);
    float4 x1 = x0 + 0.4f, x2 = x0 + 0.5f, x3 = x0 + 0.6f;
    const float4 va = (float4)(a), vb = (float4)(b);
    #pragma unroll 16
    for (int i = 0; i < ITERS; ++i) {
        x0 = fma(x0, va, vb); x1 = fma(x1, va, vb); x2 = fma(x2, va, vb); x3 = fma(x3, va, vb);
    }
    const float4 s = x0 + x1 + x2 + x3;
    out[gid] = s.x + s.y + s.z + s.w;
}

__kernel void copy4(__global const float4* restrict src, __global float4* restrict dst)
{
    const size_t i = get_global_id(0);
    dst[i] = src[i];
}
