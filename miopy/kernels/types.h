/* Storage type of tensor data, shared by every kernel so a dtype costs one define, not a rewrite.
 *
 * MIOPY_HALF=1: tensors hold IEEE half values, read with vload_half and written with vstore_half_rte
 * (core OpenCL: no cl_khr_fp16 needed, since half is only a pointer target); arithmetic stays in float.
 * MIOPY_HALF=0 (default): tensors hold floats.
 *
 *   __global DATA_T* x;   float v = LOAD(x, i);   STORE(y, i, v);
 */
#ifndef MIOPY_TYPES_H
#define MIOPY_TYPES_H

#ifndef MIOPY_HALF
#define MIOPY_HALF 0
#endif

#if MIOPY_HALF
#define DATA_T half
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half_rte((v), (i), (p))
#else
#define DATA_T float
#define LOAD(p, i) ((p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
#endif

/* total += part, the add's rounding error left in part, which goes on summing the next block of terms:
 * Kahan's compensated summation over register blocks (3 adds, no extra register). A long reduction summed
 * as plain blocks of B terms joined this way rounds like a sum of about B terms, whatever its length; the
 * order is fixed, so results are deterministic. Relies on IEEE adds (miopy never builds with
 * -cl-fast-relaxed-math or -cl-unsafe-math-optimizations, which would let the compiler drop the correction). */
#define COMPENSATED_ADD(T, total, part) { const T sum_ = (total) + (part); (part) -= sum_ - (total); (total) = sum_; }

#endif
