/* Winograd F(m x m, 3 x 3), m = WINO_M (2 or 4; WINO_R = 3): the one-dimensional transforms G, B^T, A^T
 * (forward and backward-data) and A, G^T (backward-weights), written out by hand; the kernels that apply
 * them, the roles of the tensors and the defines are in conv_winograd.h. Between the transforms a batched
 * GEMM (conv_winograd_gemm.cl) works in the ALPHA*ALPHA transformed positions (ALPHA = m + 2).
 */
#define ALPHA (WINO_M + 2)
#define AA (ALPHA * ALPHA)

/* One-dimensional transforms; each reads its operand at stride si and writes at stride so. F(2,3) is
 * Lavin & Gray's, "Fast Algorithms for Convolutional Neural Networks" (2016). */
#if WINO_M == 2
/* G (4x3) times a column of 3 filter taps */
void filter_1d(const float* g, int si, float* o, int so)
{
    o[0] = g[0];
    o[so] = 0.5f * (g[0] + g[si] + g[2 * si]);
    o[2 * so] = 0.5f * (g[0] - g[si] + g[2 * si]);
    o[3 * so] = g[2 * si];
}

/* B^T (4x4) times a column of 4 inputs */
void input_1d(const float* d, int si, float* o, int so)
{
    o[0] = d[0] - d[2 * si];
    o[so] = d[si] + d[2 * si];
    o[2 * so] = d[2 * si] - d[si];
    o[3 * so] = d[si] - d[3 * si];
}

/* A^T (2x4) times a column of 4 products */
void output_1d(const float* m, int si, float* o, int so)
{
    o[0] = m[0] + m[si] + m[2 * si];
    o[so] = m[si] - m[2 * si] - m[3 * si];
}

/* A (4x2) times a column of 2 output gradients */
void grad_output_1d(const float* y, int si, float* o, int so)
{
    o[0] = y[0];
    o[so] = y[0] + y[si];
    o[2 * so] = y[0] - y[si];
    o[3 * so] = -y[si];
}

/* G^T (3x4) times a column of 4 transformed weight gradients */
void grad_filter_1d(const float* u, int si, float* o, int so)
{
    const float half_sum = 0.5f * (u[si] + u[2 * si]);
    o[0] = u[0] + half_sum;
    o[so] = 0.5f * (u[si] - u[2 * si]);
    o[2 * so] = half_sum + u[3 * si];
}
#elif WINO_M == 4
/* F(4,3) from the points 0, 1, -1, 1/2, -2 and infinity rather than Lavin's 0, +-1, +-2: B^T is exact in
 * binary and the fp32 error is about half (Barabasz et al., "Error analysis and improving the accuracy of
 * Winograd convolution for deep neural networks", 2020). */

/* G (6x3) times a column of 3 filter taps */
void filter_1d(const float* g, int si, float* o, int so)
{
    const float g0 = g[0], g1 = g[si], g2 = g[2 * si];
    o[0] = g0;
    o[so] = (1.0f / 3.0f) * (g0 + g1 + g2);
    o[2 * so] = (1.0f / 3.0f) * (g1 - g0 - g2);
    o[3 * so] = (-4.0f / 15.0f) * (4.0f * g0 + 2.0f * g1 + g2);
    o[4 * so] = (1.0f / 15.0f) * (g0 - 2.0f * g1 + 4.0f * g2);
    o[5 * so] = g2;
}

/* B^T (6x6) times a column of 6 inputs */
void input_1d(const float* d, int si, float* o, int so)
{
    const float d0 = d[0], d1 = d[si], d2 = d[2 * si], d3 = d[3 * si], d4 = d[4 * si], d5 = d[5 * si];
    o[0] = d0 - 1.5f * d1 - 2.0f * d2 + 1.5f * d3 + d4;
    o[so] = -d1 + 0.5f * d2 + 2.5f * d3 + d4;
    o[2 * so] = d1 - 2.5f * d2 + 0.5f * d3 + d4;
    o[3 * so] = 2.0f * (d3 - d1) - d2 + d4;
    o[4 * so] = 0.5f * (d1 - d3) - d2 + d4;
    o[5 * so] = d1 - 1.5f * d2 - 2.0f * d3 + 1.5f * d4 + d5;
}

/* A^T (4x6) times a column of 6 products */
void output_1d(const float* m, int si, float* o, int so)
{
    const float m0 = m[0], m1 = m[si], m2 = m[2 * si], m3 = m[3 * si], m4 = m[4 * si], m5 = m[5 * si];
    const float sum12 = m1 + m2, dif12 = m1 - m2;
    o[0] = m0 + sum12 + m3 + m4;
    o[so] = dif12 + 0.5f * m3 - 2.0f * m4;
    o[2 * so] = sum12 + 0.25f * m3 + 4.0f * m4;
    o[3 * so] = dif12 + 0.125f * m3 - 8.0f * m4 + m5;
}

/* A (6x4) times a column of 4 output gradients */
void grad_output_1d(const float* y, int si, float* o, int so)
{
    const float y0 = y[0], y1 = y[si], y2 = y[2 * si], y3 = y[3 * si];
    o[0] = y0;
    o[so] = y0 + y1 + y2 + y3;
    o[2 * so] = y0 - y1 + y2 - y3;
    o[3 * so] = y0 + 0.5f * y1 + 0.25f * y2 + 0.125f * y3;
    o[4 * so] = y0 - 2.0f * y1 + 4.0f * y2 - 8.0f * y3;
    o[5 * so] = y3;
}

/* G^T (3x6) times a column of 6 transformed weight gradients */
void grad_filter_1d(const float* u, int si, float* o, int so)
{
    const float u0 = u[0], u1 = u[si], u2 = u[2 * si], u3 = u[3 * si], u4 = u[4 * si], u5 = u[5 * si];
    o[0] = u0 + (1.0f / 3.0f) * (u1 - u2) + (1.0f / 15.0f) * (u4 - 16.0f * u3);
    o[so] = (1.0f / 3.0f) * (u1 + u2) - (2.0f / 15.0f) * (4.0f * u3 + u4);
    o[2 * so] = (1.0f / 3.0f) * (u1 - u2) + (4.0f / 15.0f) * (u4 - u3) + u5;
}
#else
#error "WINO_M must be 2 or 4"
#endif

#include "conv_winograd.h"
