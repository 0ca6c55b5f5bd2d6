/* Zero-padded copies of row-read convolution inputs for ConvCpuDirect (conv_cpu_direct.cl, PADDED=1):
 * dst holds PLANES planes of ROWS rows of DST_W columns, each row stored phase by phase: PHASES runs of
 * DST_W / PHASES columns, column j of run f being padded column j * PHASES + f, which is src column
 * j * PHASES + f - LEFT where that is inside 0..SRC_W-1, else zero. Strided vector loads of the convolution
 * kernels then read consecutive memory, and need no bounds checks.
 *
 * Defines (all ints): PLANES ROWS SRC_W DST_W LEFT PHASES (dividing DST_W); MIOPY_HALF (types.h)
 */
#include "types.h"

/* One work-item per dst row (a loop per phase: no division per element); dst starts dst_off elements into
 * its buffer. */
__kernel void cpu_pad(__global const DATA_T* restrict src, __global DATA_T* restrict dst, const int dst_off)
{
    const int row = get_global_id(0);
    if (row >= PLANES * ROWS) return;
    __global const DATA_T* in = src + row * SRC_W;
    __global DATA_T* out = dst + dst_off + row * DST_W;
    for (int f = 0; f < PHASES; ++f)
        for (int j = 0; j < DST_W / PHASES; ++j) {
            const int col = j * PHASES + f - LEFT;
            STORE(out, f * (DST_W / PHASES) + j, (col >= 0 && col < SRC_W) ? LOAD(in, col) : 0.0f);
        }
}
