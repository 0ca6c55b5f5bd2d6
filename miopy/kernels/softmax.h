/* Softmax rows and the online (max, sum) reduction shared by the softmax kernels.
 *
 * Defines (all ints):
 *   ALGO                  0 fast (no max subtracted), 1 accurate (max subtracted), 2 log
 *   MODE                  0 instance (a row is one image's C x H x W), 1 channel (a row is one (n, h, w)'s C)
 *   N C H W               dims (the solver folds dims whose strides allow, e.g. a packed row into W)
 *   T##S_N .. T##S_W      element strides of each tensor T (X, Y forward; Y, DY, DX backward)
 *   MIOPY_HALF            storage type (types.h)
 */
#ifndef MIOPY_SOFTMAX_H
#define MIOPY_SOFTMAX_H
#include "types.h"

#if !defined(ALGO) || !defined(MODE) || !defined(N) || !defined(C) || !defined(H) || !defined(W)
#error "softmax kernels need ALGO, MODE and N C H W"
#endif

#if MODE == 0
#define ROWS N
#define LEN (C * H * W)
#define AT(T, r, i) ((r) * T##S_N + ((i) / (H * W)) * T##S_C + (((i) / W) % H) * T##S_H + ((i) % W) * T##S_W)
#else
#define ROWS (N * H * W)
#define LEN C
#define AT(T, r, i) (((r) / (H * W)) * T##S_N + (i) * T##S_C + (((r) / W) % H) * T##S_H + ((r) % W) * T##S_W)
#endif

/* The running max m and sum s of exp(x - m) over a row (fast: m stays 0, s sums exp(x)). A -inf term adds
 * nothing, so a row of -inf and finite values is exact; a row of only -inf gives 0 / 0 = NaN, as PyTorch. */
#if ALGO == 0
#define MAX_START 0.0f
inline void online_add(float* m, float* s, const float x) { *s += exp(x); }
inline void online_merge(float* m, float* s, const float m2, const float s2) { *s += s2; }
#else
#define MAX_START (-INFINITY)
inline void online_add(float* m, float* s, const float x)
{
    if (x > *m) {
        *s = *s * exp(*m - x) + 1.0f;
        *m = x;
    } else if (x != -INFINITY) {
        *s += exp(x - *m);
    }
}
inline void online_merge(float* m, float* s, const float m2, const float s2)
{
    const float top = fmax(*m, m2);
    if (top == -INFINITY) return;
    *s = (*m == -INFINITY ? 0.0f : *s * exp(*m - top)) + (m2 == -INFINITY ? 0.0f : s2 * exp(m2 - top));
    *m = top;
}
#endif

/* y from x and its row's (m, s) */
inline float softmax_out(const float x, const float m, const float s)
{
#if ALGO == 2
    return x - m - log(s);
#else
    return exp(x - m) / s;
#endif
}

/* The backward's per-row sum: sum(dy * y) (softmax) or sum(dy) (log) */
inline float softmax_dot_term(const float dy, const float y)
{
#if ALGO == 2
    return dy;
#else
    return dy * y;
#endif
}

/* dx from dy, y and the row's sum */
inline float softmax_grad(const float dy, const float y, const float sum)
{
#if ALGO == 2
    return dy - exp(y) * sum;
#else
    return y * (dy - sum);
#endif
}
#endif
