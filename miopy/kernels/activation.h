/* Activation functions, shared by the standalone activation kernels (activation.cl) and the fused
 * epilogue (fused_epilogue.h). Modes and formulas are MIOpen's (miopenActivationMode_t); alpha, beta and
 * gamma are run-time arguments, so new values never recompile.
 *
 * Defines:
 *   ACTIV_MODE   one of the MIOPY_ACTIV_* values below (int)
 *
 * miopy_activ_fwd(x, alpha, beta, gamma)        -> y
 * miopy_activ_bwd(dy, x, y, alpha, beta, gamma) -> dx   (MIOpen's backward: uses x or y, whichever is cheaper)
 */
#ifndef MIOPY_ACTIVATION_H
#define MIOPY_ACTIVATION_H

#define MIOPY_ACTIV_PASSTHRU 0      /* x */
#define MIOPY_ACTIV_LOGISTIC 1      /* 1 / (1 + e^-x) */
#define MIOPY_ACTIV_TANH 2          /* beta * tanh(alpha * x) */
#define MIOPY_ACTIV_RELU 3          /* max(0, x) */
#define MIOPY_ACTIV_SOFTRELU 4      /* log(1 + e^x) */
#define MIOPY_ACTIV_ABS 5           /* |x| */
#define MIOPY_ACTIV_POWER 6         /* (alpha + beta * x)^gamma, 0 where alpha + beta * x <= EPSILON */
#define MIOPY_ACTIV_CLIPPED_RELU 7  /* min(alpha, max(0, x)) */
#define MIOPY_ACTIV_LEAKY_RELU 8    /* x > 0 ? x : alpha * x */
#define MIOPY_ACTIV_ELU 9           /* x > 0 ? x : alpha * (e^x - 1) */
#define MIOPY_ACTIV_HARDSWISH 10    /* x * min(1, max(0, alpha * x + beta)) (miopy's, for ONNX's HardSwish) */
#define MIOPY_ACTIV_CLAMP 11        /* min(alpha, max(beta, x)) (miopy's, for ONNX's Clip) */

#define MIOPY_ACTIV_EPSILON 1e-6f
#define MIOPY_SOFTRELU_THRESHOLD 50.0f

#ifndef ACTIV_MODE
#error "ACTIV_MODE must be defined"
#endif

float miopy_activ_fwd(const float x, const float alpha, const float beta, const float gamma)
{
#if ACTIV_MODE == MIOPY_ACTIV_PASSTHRU
    return x;
#elif ACTIV_MODE == MIOPY_ACTIV_LOGISTIC
    return 1.0f / (1.0f + exp(-x));
#elif ACTIV_MODE == MIOPY_ACTIV_TANH
    return beta * tanh(alpha * x);
#elif ACTIV_MODE == MIOPY_ACTIV_RELU
    return x > 0.0f ? x : 0.0f;
#elif ACTIV_MODE == MIOPY_ACTIV_SOFTRELU
    return x > 0.0f ? x + log1p(exp(-x)) : log1p(exp(x));
#elif ACTIV_MODE == MIOPY_ACTIV_ABS
    return fabs(x);
#elif ACTIV_MODE == MIOPY_ACTIV_POWER
    const float arg = alpha + beta * x;
    return arg <= MIOPY_ACTIV_EPSILON ? 0.0f : pow(arg, gamma);
#elif ACTIV_MODE == MIOPY_ACTIV_CLIPPED_RELU
    return fmin(alpha, fmax(x, 0.0f));
#elif ACTIV_MODE == MIOPY_ACTIV_LEAKY_RELU
    return x > 0.0f ? x : alpha * x;
#elif ACTIV_MODE == MIOPY_ACTIV_ELU
    return x > 0.0f ? x : alpha * expm1(x);
#elif ACTIV_MODE == MIOPY_ACTIV_HARDSWISH
    return x * fmin(1.0f, fmax(0.0f, fma(alpha, x, beta)));
#elif ACTIV_MODE == MIOPY_ACTIV_CLAMP
    return fmin(alpha, fmax(x, beta));
#else
#error "unknown ACTIV_MODE"
#endif
}

float miopy_activ_bwd(const float dy, const float x, const float y, const float alpha, const float beta,
                      const float gamma)
{
#if ACTIV_MODE == MIOPY_ACTIV_PASSTHRU
    return dy;
#elif ACTIV_MODE == MIOPY_ACTIV_LOGISTIC
    return dy * y * (1.0f - y);
#elif ACTIV_MODE == MIOPY_ACTIV_TANH
    return fabs(beta) <= MIOPY_ACTIV_EPSILON ? 0.0f : dy * alpha * (beta - y * y / beta);
#elif ACTIV_MODE == MIOPY_ACTIV_RELU
    return x > 0.0f ? dy : 0.0f;
#elif ACTIV_MODE == MIOPY_ACTIV_SOFTRELU
    const float e = exp(fmin(x, MIOPY_SOFTRELU_THRESHOLD));
    return dy * e / (e + 1.0f);
#elif ACTIV_MODE == MIOPY_ACTIV_ABS
    return x > 0.0f ? dy : -dy;
#elif ACTIV_MODE == MIOPY_ACTIV_POWER
    const float arg = alpha + beta * x;
    return arg <= MIOPY_ACTIV_EPSILON ? 0.0f : dy * gamma * beta * y / arg;
#elif ACTIV_MODE == MIOPY_ACTIV_CLIPPED_RELU
    return x > 0.0f && x <= alpha ? dy : 0.0f;
#elif ACTIV_MODE == MIOPY_ACTIV_LEAKY_RELU
    return x > 0.0f ? dy : alpha * dy;
#elif ACTIV_MODE == MIOPY_ACTIV_ELU
    return x > 0.0f ? dy : dy * (y + alpha);
#elif ACTIV_MODE == MIOPY_ACTIV_HARDSWISH
    const float arg = fma(alpha, x, beta);
    return arg <= 0.0f ? 0.0f : arg >= 1.0f ? dy : dy * (arg + alpha * x);
#elif ACTIV_MODE == MIOPY_ACTIV_CLAMP
    return x > beta && x <= alpha ? dy : 0.0f;
#endif
}

#endif
