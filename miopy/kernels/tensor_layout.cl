/* Copies through an index map over up to six dimensions: concatenation (a source written into a slice of
 * the destination), transposition (a source read with permuted strides) and padding (a source read with
 * begin offsets, the outside filled with a constant, reflected or clamped to the edge). One work-item per
 * element of the index space D0 x D1 x ... x D5 (D5 fastest); unused leading dimensions are 1.
 *
 * For index (c0, ..., c5):
 *   source coordinate along axis i:  s_i = c_i - PB_i, brought into [0, SD_i) as PAD_MODE says
 *   dst[DST_OFF + sum c_i * DS_i] = inside ? src[SRC_OFF + sum s_i * SS_i] : value
 *
 * Defines (all ints):
 *   D0 .. D5      the index space                      COUNT   D0 * ... * D5
 *   SS0 .. SS5    element strides of the source        DS0 .. DS5   element strides of the destination
 *   SRC_OFF DST_OFF   element offsets of both
 *   PAD_MODE      0: no padding (PB_i, SD_i unused); 1: constant value; 2: reflect; 3: edge
 *   PB0 .. PB5    begin padding per axis (PAD_MODE > 0; negative crops)
 *   SD0 .. SD5    source dims (PAD_MODE > 0)
 */
#include "types.h"

#if !defined(D5) || !defined(COUNT) || !defined(PAD_MODE) || !defined(SRC_OFF) || !defined(DST_OFF)
#error "D0..D5, COUNT, PAD_MODE, SRC_OFF and DST_OFF must be defined"
#endif

#if PAD_MODE == 0
#define SOURCE(c, i) (c)
#else
/* The source coordinate of index c along an axis of SD elements padded by PB at its begin; -1: outside. */
inline int source_coordinate(int c, const int pb, const int sd)
{
    int s = c - pb;
#if PAD_MODE == 1
    return (s >= 0 && s < sd) ? s : -1;
#elif PAD_MODE == 2
    if (s < 0) s = -s;
    if (s >= sd) s = 2 * (sd - 1) - s;
    return s;
#else
    return clamp(s, 0, sd - 1);
#endif
}
#define SOURCE(c, i) source_coordinate((c), PB##i, SD##i)
#endif

__kernel void layout_copy(__global const DATA_T* restrict src, __global DATA_T* restrict dst, const float value)
{
    const int gid = get_global_id(0);
    if (gid >= COUNT) return;
    int rest = gid;
    const int c5 = rest % D5; rest /= D5;
    const int c4 = rest % D4; rest /= D4;
    const int c3 = rest % D3; rest /= D3;
    const int c2 = rest % D2; rest /= D2;
    const int c1 = rest % D1; rest /= D1;
    const int c0 = rest;
    const int s0 = SOURCE(c0, 0), s1 = SOURCE(c1, 1), s2 = SOURCE(c2, 2), s3 = SOURCE(c3, 3), s4 = SOURCE(c4, 4),
              s5 = SOURCE(c5, 5);
    const int out = DST_OFF + c0 * DS0 + c1 * DS1 + c2 * DS2 + c3 * DS3 + c4 * DS4 + c5 * DS5;
#if PAD_MODE == 1
    if ((s0 | s1 | s2 | s3 | s4 | s5) < 0) {
        STORE(dst, out, value);
        return;
    }
#endif
    STORE(dst, out, LOAD(src, SRC_OFF + s0 * SS0 + s1 * SS1 + s2 * SS2 + s3 * SS3 + s4 * SS4 + s5 * SS5));
}
