/* Epilogue hook shared by every kernel that writes a forward convolution output.
 *
 * Such a kernel appends MIOPY_EPILOGUE_PARAMS to its parameter list and stores
 * MIOPY_EPILOGUE(v, k, pq, yi) instead of v, where k is the output channel, pq the index of the
 * element within its P*Q output plane and yi its offset in y (where the residual z is read: z has y's
 * layout). Without MIOPY_FUSED both expand to nothing / v, so plain
 * convolutions pay nothing. Fused solvers (miopy/fusion/epilogue.py) define MIOPY_FUSED and the FUSE_* macros.
 */
#ifndef MIOPY_EPILOGUE_H
#define MIOPY_EPILOGUE_H
#if defined(MIOPY_FUSED) && MIOPY_FUSED
#include "fused_epilogue.h"
#else
#define MIOPY_EPILOGUE_PARAMS
#define MIOPY_EPILOGUE(v, k, pq, yi) (v)
#endif
#endif
