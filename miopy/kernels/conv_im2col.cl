/* im2col and col2im for the GEMM convolution (ConvIm2colGemm), over a chunk of NB images.
 *
 * The column matrix of images n0 .. n0+NB-1 has C*R*S rows and NB*P*Q columns:
 *     col[(c*R + r)*S + s][nl*P*Q + p*Q + q] = x[n0+nl, c, p*STRIDE_H - PAD_H + r*DIL_H, q*STRIDE_W - PAD_W + s*DIL_W]
 * (zero where that lands in the padding). Group g owns rows g*CG*R*S .. (g+1)*CG*R*S - 1, so the
 * per-group GEMMs read it as CG*R*S x NB*P*Q blocks. Tensors are packed NCHW.
 *
 * Defines (all ints): N C H W K R S P Q G PAD_H PAD_W STRIDE_H STRIDE_W DIL_H DIL_W (problem sizes),
 *   NB   images per chunk
 *   MIOPY_HALF  x holds half values (kernels/types.h)
 *   COL_HALF    the column matrix holds half values (default MIOPY_HALF; 0 keeps backward-data's sums float)
 */
#include "types.h"

#ifndef COL_HALF
#define COL_HALF MIOPY_HALF
#endif
#if COL_HALF
#define COL_T half
#define LOAD_COL(p, i) vload_half((i), (p))
#define STORE_COL(p, i, v) vstore_half_rte((v), (i), (p))
#else
#define COL_T float
#define LOAD_COL(p, i) ((p)[i])
#define STORE_COL(p, i, v) ((p)[i] = (v))
#endif

#define PQ (P * Q)

/* One work-item per column element, in col's memory order: consecutive work-items write consecutive
 * addresses. col_off is where the column matrix starts in col, n0 the chunk's first image. */
__kernel void im2col(__global const DATA_T* restrict x, __global COL_T* restrict col, const int col_off,
                     const int n0)
{
    const int gid = get_global_id(0);
    if (gid >= C * R * S * NB * PQ) return;
    const int q = gid % Q, p = (gid / Q) % P, nl = (gid / PQ) % NB;
    const int row = gid / (NB * PQ), s = row % S, r = (row / S) % R, c = row / (R * S);
    const int h = p * STRIDE_H - PAD_H + r * DIL_H, w = q * STRIDE_W - PAD_W + s * DIL_W;
    const bool inside = h >= 0 && h < H && w >= 0 && w < W;
    STORE_COL(col, col_off + gid, inside ? LOAD(x, ((n0 + nl) * C + c) * (H * W) + h * W + w) : 0.0f);
}

/* The adjoint: one work-item per x element of the chunk gathers every column entry that im2col would
 * have read from it, in a fixed (r, s) order: race-free and deterministic. Elements no tap reaches get 0. */
__kernel void col2im(__global const COL_T* restrict col, __global DATA_T* restrict x, const int col_off,
                     const int n0)
{
    const int gid = get_global_id(0);
    if (gid >= NB * C * H * W) return;
    const int w = gid % W, h = (gid / W) % H, c = (gid / (H * W)) % C, nl = gid / (C * H * W);
    float acc = 0.0f;
    for (int r = 0; r < R; ++r) {
        const int ph = h + PAD_H - r * DIL_H;
        if (ph < 0 || ph % STRIDE_H != 0 || ph / STRIDE_H >= P) continue;
        for (int s = 0; s < S; ++s) {
            const int qw = w + PAD_W - s * DIL_W;
            if (qw < 0 || qw % STRIDE_W != 0 || qw / STRIDE_W >= Q) continue;
            const int row = (c * R + r) * S + s;
            acc += LOAD_COL(col, col_off + row * (NB * PQ) + nl * PQ + (ph / STRIDE_H) * Q + qw / STRIDE_W);
        }
    }
    STORE(x, n0 * (C * H * W) + gid, acc);
}
