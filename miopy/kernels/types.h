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

#endif
