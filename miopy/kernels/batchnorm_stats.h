/* Optional operands of the batch-norm training kernels and the code that writes statistics.
 *
 * Defines (all ints):
 *   RUNNING   1: the forward updates running_mean / running_var with the exponential average factor
 *   SAVED     1: the forward writes saved_mean / saved_inv_variance, or the backward reads them
 *   COUNT     values each statistic is taken over (N*H*W spatial, N per-activation)
 *
 * The running variance takes the unbiased estimate var * COUNT / (COUNT - 1), as MIOpen and PyTorch do;
 * normalisation uses the biased one.
 */
#ifndef MIOPY_BATCHNORM_STATS_H
#define MIOPY_BATCHNORM_STATS_H

#if !defined(RUNNING) || !defined(SAVED) || !defined(COUNT)
#error "RUNNING, SAVED and COUNT must be defined"
#endif

#if RUNNING
#define RUNNING_PARAMS , __global float* restrict running_mean, __global float* restrict running_var
#define RUNNING_UPDATE(i, mean, var) do { \
        running_mean[i] = (1.0f - factor) * running_mean[i] + factor * (mean); \
        running_var[i] = (1.0f - factor) * running_var[i] + factor * ((var) * ((float)COUNT / (float)(COUNT - 1))); \
    } while (0)
#else
#define RUNNING_PARAMS
#define RUNNING_UPDATE(i, mean, var) do { } while (0)
#endif

#if SAVED
#define SAVED_PARAMS , __global float* restrict saved_mean, __global float* restrict saved_inv_variance
#define SAVE_STATS(i, mean, inv) do { saved_mean[i] = (mean); saved_inv_variance[i] = (inv); } while (0)
#else
#define SAVED_PARAMS
#define SAVE_STATS(i, mean, inv) do { } while (0)
#endif

#endif
