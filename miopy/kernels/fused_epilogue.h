/* The fused epilogue: bias add, batch-norm inference, the residual add of a second tensor z (MIOpen's "z"
 * term, the tail of a ResNet block), then activation, applied to a value before it is stored (the
 * MIOPY_FUSED branch of epilogue.h). The structure is chosen by defines; every number
 * (activation alpha / beta / gamma, batch-norm epsilon) is a kernel argument, so new values never
 * recompile. miopy.fusion.epilogue.Epilogue writes the defines and lists the arguments in the order declared
 * here.
 *
 * Defines (all ints):
 *   FUSE_BIAS     1: v += epi_bias[k]
 *   FUSE_BN       0: none; 1: spatial (per-channel operands, index k);
 *                 2: per-activation (per-element operands, index k * FUSE_PLANE + pq)
 *   FUSE_PLANE    elements per channel plane (P*Q); only with FUSE_BN == 2
 *   FUSE_ADD      1: v += epi_z_alpha * epi_z[yi], z a tensor of y's layout (yi: the element's offset in y)
 *   FUSE_ACTIV    1: v = f(v) with f chosen by ACTIV_MODE (see activation.h)
 *
 * Extra kernel parameters, in this order, each present only when its op is:
 *   epi_bias; epi_bn_scale, epi_bn_shift, epi_bn_mean, epi_bn_var, epi_bn_epsilon; epi_z, epi_z_alpha;
 *   epi_activ_alpha, epi_activ_beta, epi_activ_gamma
 *
 * MIOPY_EPILOGUE(v, k, pq, yi): k the output channel, pq the in-plane index, yi the offset y[yi] stores at.
 *
 * Types (MIOPY_HALF, kernels/types.h): bias and z have the data's type (DATA_T); the batch-norm operands
 * are float whatever the data (MIOpen's rule, as miopy.batchnorm's); v and every sum are float.
 */
#include "types.h"

#if FUSE_BIAS
#define MIOPY_EPI_BIAS_PARAMS , __global const DATA_T* restrict epi_bias
#define MIOPY_EPI_BIAS(v, k) ((v) + LOAD(epi_bias, (k)))
#else
#define MIOPY_EPI_BIAS_PARAMS
#define MIOPY_EPI_BIAS(v, k) (v)
#endif

#if FUSE_BN
#define MIOPY_EPI_BN_PARAMS , __global const float* restrict epi_bn_scale, \
    __global const float* restrict epi_bn_shift, __global const float* restrict epi_bn_mean, \
    __global const float* restrict epi_bn_var, const float epi_bn_epsilon
#if FUSE_BN == 1
#define MIOPY_EPI_BN_INDEX(k, pq) (k)
#elif FUSE_BN == 2
#define MIOPY_EPI_BN_INDEX(k, pq) ((k) * FUSE_PLANE + (pq))
#else
#error "FUSE_BN must be 0, 1 (spatial) or 2 (per-activation)"
#endif
/* y = scale * (v - mean) / sqrt(var + epsilon) + shift */
#define MIOPY_EPI_BN(v, k, pq) miopy_bn_apply((v), MIOPY_EPI_BN_INDEX(k, pq), epi_bn_scale, epi_bn_shift, \
                                              epi_bn_mean, epi_bn_var, epi_bn_epsilon)
float miopy_bn_apply(const float v, const int i, __global const float* restrict scale,
                     __global const float* restrict shift, __global const float* restrict mean,
                     __global const float* restrict var, const float epsilon)
{
    return fma(scale[i] * rsqrt(var[i] + epsilon), v - mean[i], shift[i]);
}
#else
#define MIOPY_EPI_BN_PARAMS
#define MIOPY_EPI_BN(v, k, pq) (v)
#endif

#if FUSE_ADD
#define MIOPY_EPI_ADD_PARAMS , __global const DATA_T* restrict epi_z, const float epi_z_alpha
#define MIOPY_EPI_ADD(v, yi) fma(epi_z_alpha, LOAD(epi_z, (yi)), (v))
#else
#define MIOPY_EPI_ADD_PARAMS
#define MIOPY_EPI_ADD(v, yi) (v)
#endif

#if FUSE_ACTIV
#include "activation.h"
#define MIOPY_EPI_ACTIV_PARAMS , const float epi_activ_alpha, const float epi_activ_beta, const float epi_activ_gamma
#define MIOPY_EPI_ACTIV(v) miopy_activ_fwd((v), epi_activ_alpha, epi_activ_beta, epi_activ_gamma)
#else
#define MIOPY_EPI_ACTIV_PARAMS
#define MIOPY_EPI_ACTIV(v) (v)
#endif

#define MIOPY_EPILOGUE_PARAMS MIOPY_EPI_BIAS_PARAMS MIOPY_EPI_BN_PARAMS MIOPY_EPI_ADD_PARAMS MIOPY_EPI_ACTIV_PARAMS
#define MIOPY_EPILOGUE(v, k, pq, yi) \
    MIOPY_EPI_ACTIV(MIOPY_EPI_ADD(MIOPY_EPI_BN(MIOPY_EPI_BIAS((v), (k)), (k), (pq)), (yi)))
