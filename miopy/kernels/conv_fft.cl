/* FFT convolution (ConvFFT): two-dimensional FFTs of L x L planes (L = 8, 16 or 32) and, between them, one
 * complex GEMM per frequency (fft_cgemm below) over the half spectrum of L x (L/2 + 1) frequencies. A plane's
 * data sits at its origin, shifted cyclically, and zero elsewhere; the plane size is chosen so that the
 * cyclic correlation equals the zero-padded one on every output element.
 *
 *   fft_forward  one operand of the GEMM: for a grid of ROWS_P x COLS_P planes (rows: the GEMM's reduction
 *                channels or images; cols: its columns), the half spectrum of each plane as (real, imaginary)
 *                pairs, the planes of one frequency row by row:
 *                    dst[f][row][col] = (re, im)
 *                Planes outside ROWS x COLS are zero, so the GEMM's padded rows and columns add nothing.
 *   fft_forward_small  the same for planes of at most a few taps a side (filters): a direct DFT, no staging
 *   fft_inverse  the GEMM's output C[f][row][col] back to planes: the inverse FFT, scaled by 1 / L^2, each
 *                element of the output grid read where fft_forward would have put it, with the epilogue hook
 *                (forward only).
 *
 * A work-group of WG = PLANES * L/2 work-items transforms PLANES planes of consecutive columns: the planes are
 * staged in local memory (coalesced), each work-item runs one complex L-point FFT in registers on two real
 * rows at once, then one on a column (work-item 0 of a plane on columns 0 and L/2 together, both real), so
 * every work-item is busy in both phases; the spectrum goes out through local memory again, the pairs of
 * PLANES consecutive columns per frequency (64-byte runs at L = 32).
 *
 * Defines (all ints):
 *   FFT_L FFT_LOG2 PLANES   plane size, its log2, planes per work-group (WG = PLANES * FFT_L / 2)
 *   ROWS COLS ROWS_P COLS_P plane grid and its padded size (PLANES divides COLS_P)
 *   BASE ROW_TS COL_TS SH SW PH PW SHIFT_H SHIFT_W   the grid's tensor: element (row, col, h, w), h < PH and
 *                w < PW, is at BASE + row*ROW_TS + col*COL_TS + h*SH + w*SW (negative strides read filters
 *                backwards) and is plane element ((h + SHIFT_H) mod L, (w + SHIFT_W) mod L)
 *   DST_OFF      fft_forward: where the transformed grid goes in the workspace
 *   SRC_OFF      fft_inverse: where C is (rows ROWS_P, columns COLS_P)
 *   GEMM_M ...   fft_cgemm: see there
 *   MIOPY_HALF   tensors hold half values (types.h); the workspace is float either way
 */
#include "types.h"
#include "epilogue.h"

/* Global float2 / float8 accesses, at addresses the layout keeps 8- and 32-byte aligned, go through typed
 * pointers: vload2 / vstore8 on a float pointer promise only 4-byte alignment, and NVIDIA's compiler splits
 * them into scalar accesses (H100, AlexNet-v2 conv2 forward: 0.373 -> 0.341 ms, the GEMM's stores most).
 * Local memory keeps vload2 / vstore2: the odd plane pitch misaligns every other plane. */
#define GLOAD2(p) (*(__global const float2*)(p))
#define GSTORE2(v, p) (*(__global float2*)(p) = (v))
#define GSTORE8(v, p) (*(__global float8*)(p) = (v))
#define HALF_L (FFT_L / 2 + 1)            /* frequencies kept along a row (the spectrum is Hermitian) */
#define FREQS (FFT_L * HALF_L)
#define PITCH (FFT_L + 2)                 /* floats per local row: L reals, or HALF_L complex values */
#define PLANE_LD (FFT_L * PITCH + 1)   /* odd: the two planes of a warp fill even and odd banks */
#define LANES (FFT_L / 2)                /* work-items per plane: each runs one complex FFT per phase */
#define WG (PLANES * LANES)
#define MASK (FFT_L - 1)
/* Whether plane row r (or r + L/2, its partner in a packed FFT) holds tensor rows (h < PH at its shift) */
#define PAIR_HOLDS_DATA(r) ((((r) - SHIFT_H) & MASK) < PH || (((r) + LANES - SHIFT_H) & MASK) < PH)
/* The cooperative loops run a constant number of rounds of WG elements (they unroll, so every work-item
 * issues its global loads back to back instead of one latency per element). */
#define COOPERATIVE(e, total) \
    _Pragma("unroll") for (int round_ = 0; round_ < ((total) + WG - 1) / WG; ++round_) \
        for (int e = lid + round_ * WG; e < (total); e = (total))   /* once, where e < total */

#ifdef FFT_L   /* the transforms (fft_cgemm below is built without them) */
/* exp(-2 pi i j / 32), j < 16: the twiddles of a 32-point FFT; an L-point one takes every (32 / L)-th */
__constant float2 TWIDDLE32[16] = {
    (float2)(1.0f, 0.0f), (float2)(0.98078525f, -0.19509032f), (float2)(0.9238795f, -0.38268343f),
    (float2)(0.8314696f, -0.55557024f), (float2)(0.70710677f, -0.70710677f), (float2)(0.55557024f, -0.8314696f),
    (float2)(0.38268343f, -0.9238795f), (float2)(0.19509032f, -0.98078525f), (float2)(0.0f, -1.0f),
    (float2)(-0.19509032f, -0.98078525f), (float2)(-0.38268343f, -0.9238795f), (float2)(-0.55557024f, -0.8314696f),
    (float2)(-0.70710677f, -0.70710677f), (float2)(-0.8314696f, -0.55557024f), (float2)(-0.9238795f, -0.38268343f),
    (float2)(-0.98078525f, -0.19509032f)};

#define CMUL(a, b) ((float2)((a).x * (b).x - (a).y * (b).y, (a).x * (b).y + (a).y * (b).x))
#define CONJ(a) ((float2)((a).x, -(a).y))

/* j with its FFT_LOG2 bits reversed (a constant once the callers' loops unroll) */
inline int bit_reversed(int j)
{
    int r = 0;
    #pragma unroll
    for (int b = 0; b < FFT_LOG2; ++b) r |= ((j >> b) & 1) << (FFT_LOG2 - 1 - b);
    return r;
}

/* In-place radix-2 decimation-in-time FFT of v, given in bit-reversed order, out in natural order. Every
 * loop has a constant trip count, so all of them unroll and v stays in registers: stage s pairs element
 * k + j with k + j + span (span = 2^s) for butterfly b = (k / 2 + j, j < span). */
inline void fft_bitrev(float2* v)
{
    #pragma unroll
    for (int s = 0; s < FFT_LOG2; ++s) {
        #pragma unroll
        for (int b = 0; b < FFT_L / 2; ++b) {
            const int span = 1 << s, j = b & (span - 1), lo = ((b >> s) << (s + 1)) + j;
            const int step = (32 / FFT_L) * (FFT_L >> (s + 1));
            const float2 t = j == 0 ? v[lo + span] : CMUL(v[lo + span], TWIDDLE32[j * step]);
            const float2 u = v[lo];
            v[lo] = u + t;
            v[lo + span] = u - t;
        }
    }
}

/* The two spectra packed in z = FFT(a + ib) of real a and b, at frequency k (zc = z at L - k): A[k], B[k]. */
#define UNPACK_A(z, zc) (0.5f * ((z) + CONJ(zc)))
#define UNPACK_B(z, zc) (0.5f * (float2)((z).y + (zc).y, (zc).x - (z).x))   /* (z - conj(zc)) / 2i */

/* The column phase of a plane's row spectra (HALF_L complex per row, PITCH floats apart) in place: work-
 * item t < LANES transforms column t, and work-item 0 also column L/2, packed with column 0 into one
 * complex transform (both are real forward, both transform to reals inverse). inverse: the conjugate
 * transform (L times the inverse FFT). */
inline void column_phase(__local float* plane, int t, int inverse)
{
    float2 v[FFT_L];
    #pragma unroll
    for (int j = 0; j < FFT_L; ++j) {
        __local float* at = plane + bit_reversed(j) * PITCH;
        float2 z = vload2(t, at);
        if (t == 0)   /* pack: forward the real parts of columns 0 and L/2; inverse col 0 + i col L/2 */
            z = inverse ? z + (float2)(-at[FFT_L + 1], at[FFT_L]) : (float2)(z.x, at[FFT_L]);
        v[j] = inverse ? CONJ(z) : z;
    }
    fft_bitrev(v);
    if (t != 0) {
        #pragma unroll
        for (int j = 0; j < FFT_L; ++j) vstore2(inverse ? CONJ(v[j]) : v[j], t, plane + j * PITCH);
    } else if (inverse) {   /* real outputs: column 0 in the real part, column L/2 in the imaginary part */
        #pragma unroll
        for (int j = 0; j < FFT_L; ++j) {
            vstore2((float2)(v[j].x, 0.0f), 0, plane + j * PITCH);
            vstore2((float2)(-v[j].y, 0.0f), FFT_L / 2, plane + j * PITCH);
        }
    } else {
        #pragma unroll
        for (int j = 0; j < FFT_L; ++j) {
            const float2 zc = v[(FFT_L - j) & MASK];
            vstore2(UNPACK_A(v[j], zc), 0, plane + j * PITCH);
            vstore2(UNPACK_B(v[j], zc), FFT_L / 2, plane + j * PITCH);
        }
    }
}

#endif

#if defined(DST_OFF) && !defined(SMALL_WG)
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fft_forward(__global const DATA_T* restrict src, __global float* restrict ws)
{
    __local float buf[PLANES * PLANE_LD];
    const int lid = get_local_id(0), row = get_group_id(1), col0 = get_group_id(0) * PLANES;
    const int live = row < ROWS;

    /* stage the planes, shifted and zero-padded, as L x L reals */
    COOPERATIVE(e, PLANES * FFT_L * FFT_L) {
        const int p = e / (FFT_L * FFT_L), bh = (e / FFT_L) % FFT_L, bw = e % FFT_L;
        const int h = (bh - SHIFT_H) & MASK, w = (bw - SHIFT_W) & MASK, col = col0 + p;
        float value = 0.0f;
        if (live && col < COLS && h < PH && w < PW)
            value = LOAD(src, BASE + row * ROW_TS + col * COL_TS + h * SH + w * SW);
        buf[p * PLANE_LD + bh * PITCH + bw] = value;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* row phase: work-item (p, t) transforms rows t and t + L/2 of plane p as one complex FFT (rows
     * without data are zero) and unpacks their half spectra into the same rows */
    const int p = lid / LANES, t = lid % LANES;
    __local float* plane = buf + p * PLANE_LD;
    const int r2 = t + LANES, data = PAIR_HOLDS_DATA(t);
    float2 v[FFT_L];
    #pragma unroll
    for (int j = 0; j < FFT_L; ++j)
        v[j] = data ? (float2)(plane[t * PITCH + bit_reversed(j)], plane[r2 * PITCH + bit_reversed(j)]) : (float2)(0.0f);
    if (data) fft_bitrev(v);
    #pragma unroll
    for (int k = 0; k < HALF_L; ++k) {
        const float2 zc = v[(FFT_L - k) & MASK];
        vstore2(UNPACK_A(v[k], zc), k, plane + t * PITCH);
        vstore2(UNPACK_B(v[k], zc), k, plane + r2 * PITCH);
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    column_phase(plane, t, 0);
    barrier(CLK_LOCAL_MEM_FENCE);

    /* out: the pairs of PLANES consecutive columns per frequency */
    __global float* dst = ws + DST_OFF + 2 * (row * COLS_P + col0);
    COOPERATIVE(e, PLANES * FREQS) {
        const int q = e % PLANES, f = e / PLANES;
        GSTORE2(vload2(f % HALF_L, buf + q * PLANE_LD + (f / HALF_L) * PITCH), dst + f * (2 * ROWS_P * COLS_P) + 2 * q);
    }
}
#endif

#if defined(DST_OFF) && defined(SMALL_WG)
/* exp(-2 pi i j / L) for any j (the table holds the first half; the second is its negative) */
inline float2 twiddle(int j)
{
    const int j32 = (j * (32 / FFT_L)) & 31;
    return j32 < 16 ? TWIDDLE32[j32] : -TWIDDLE32[j32 - 16];
}

/* fft_forward_small: the half spectrum of planes with at most a few taps a side (PH, PW), as fft_forward
 * writes it, by a direct DFT. A work-group stages the taps of SMALL_WG planes of consecutive columns in
 * local memory (coalesced, once), then work-item (q, v) transforms the PH rows of plane q at column
 * frequency v (PW taps each), then the PH results along the column at every row frequency u, and writes
 * frequency (u, v): a 5x5 filter's 32 x 17 spectrum costs 17 * 32 * 5 complex multiply-adds and no
 * FFT phases. v is uniform across a warp, so the twiddles are broadcast.
 * Launch: global (COLS_P, L/2 + 1, ROWS_P), local (SMALL_WG, L/2 + 1, 1). */
#define TAPS (PH * PW)
#define TAPS_LD (TAPS | 1)   /* odd: the planes of a warp read different banks */
__kernel __attribute__((reqd_work_group_size(SMALL_WG, HALF_L, 1)))
void fft_forward_small(__global const DATA_T* restrict src, __global float* restrict ws)
{
    __local float taps[SMALL_WG * TAPS_LD];
    const int q = get_local_id(0), v = get_local_id(1), lid = v * SMALL_WG + q;
    const int col0 = get_group_id(0) * SMALL_WG, row = get_group_id(2);
    for (int e = lid; e < SMALL_WG * TAPS; e += SMALL_WG * HALF_L) {
        const int p = e / TAPS, hw = e % TAPS;
        float value = 0.0f;
        if (row < ROWS && col0 + p < COLS)
            value = LOAD(src, BASE + row * ROW_TS + (col0 + p) * COL_TS + (hw / PW) * SH + (hw % PW) * SW);
        taps[p * TAPS_LD + hw] = value;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    float2 tw_v[PW];
    #pragma unroll
    for (int w = 0; w < PW; ++w) tw_v[w] = twiddle(v * ((w + SHIFT_W) & MASK));
    float2 rows_v[PH];   /* the DFT at v of each of the plane's rows that hold data */
    #pragma unroll
    for (int h = 0; h < PH; ++h) {
        float2 acc = (float2)(0.0f);
        #pragma unroll
        for (int w = 0; w < PW; ++w) acc = mad((float2)(taps[q * TAPS_LD + h * PW + w]), tw_v[w], acc);
        rows_v[h] = acc;
    }
    __global float* dst = ws + DST_OFF + 2 * (row * COLS_P + col0 + q) + v * (2 * ROWS_P * COLS_P);
    #pragma unroll
    for (int u = 0; u < FFT_L; ++u) {
        float2 z = (float2)(0.0f);
        #pragma unroll
        for (int h = 0; h < PH; ++h) z += CMUL(rows_v[h], twiddle(u * ((h + SHIFT_H) & MASK)));
        GSTORE2(z, dst + u * (HALF_L * 2 * ROWS_P * COLS_P));
    }
}
#endif

#ifdef SRC_OFF
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fft_inverse(__global const float* restrict ws, __global DATA_T* restrict out MIOPY_EPILOGUE_PARAMS)
{
    __local float buf[PLANES * PLANE_LD];
    const int lid = get_local_id(0), row = get_group_id(1), col0 = get_group_id(0) * PLANES;

    /* stage the half spectra: (real, imaginary) pairs, PLANES consecutive ones per frequency */
    __global const float* src = ws + SRC_OFF + row * (2 * COLS_P) + 2 * col0;
    COOPERATIVE(e, PLANES * FREQS) {
        const int q = e % PLANES, f = e / PLANES;
        vstore2(GLOAD2(src + f * (ROWS_P * 2 * COLS_P) + 2 * q), f % HALF_L, buf + q * PLANE_LD + (f / HALF_L) * PITCH);
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    const int p = lid / LANES, t = lid % LANES;
    __local float* plane = buf + p * PLANE_LD;
    column_phase(plane, t, 1);
    barrier(CLK_LOCAL_MEM_FENCE);

    /* row phase: rows t and t + L/2 (if an output row reads either) as one complex transform of
     * S_t + i S_(t+L/2), each S the full row spectrum from its Hermitian half; the real and imaginary
     * parts of the result are the two rows */
    const int r2 = t + LANES, needed = PAIR_HOLDS_DATA(t);
    float2 v[FFT_L];
    #pragma unroll
    for (int j = 0; j < FFT_L; ++j) {
        const int b = bit_reversed(j), k = b < HALF_L ? b : FFT_L - b;
        float2 s1 = vload2(k, plane + t * PITCH), s2 = vload2(k, plane + r2 * PITCH);
        if (b >= HALF_L) {
            s1 = CONJ(s1);
            s2 = CONJ(s2);
        }
        v[j] = needed ? CONJ((float2)(s1.x - s2.y, s1.y + s2.x)) : (float2)(0.0f);   /* conj(S1 + i S2) */
    }
    if (needed) fft_bitrev(v);
    #pragma unroll
    for (int j = 0; j < FFT_L; ++j) {   /* inverse = conj(FFT(conj(Z))) / L^2 (the column phase's L too) */
        plane[t * PITCH + j] = v[j].x * (1.0f / (FFT_L * FFT_L));
        plane[r2 * PITCH + j] = -v[j].y * (1.0f / (FFT_L * FFT_L));
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    COOPERATIVE(e, PLANES * PH * PW) {
        const int q = e / (PH * PW), i = (e / PW) % PH, j = e % PW, col = col0 + q;
        if (row < ROWS && col < COLS) {
            const int oi = BASE + row * ROW_TS + col * COL_TS + i * SH + j * SW;
            const float value = buf[q * PLANE_LD + ((i + SHIFT_H) & MASK) * PITCH + ((j + SHIFT_W) & MASK)];
            STORE(out, oi, MIOPY_EPILOGUE(value, row, i * PW + j, oi));
        }
    }
}
#endif

#ifdef GEMM_M
/* fft_cgemm: the frequency-domain product, one complex GEMM per frequency z (the third NDRange axis),
 *     C[z][m][n] = sum_k conj(A[z][k][m]) B[z][k][n]
 * with A [z][GEMM_K][GEMM_M], B [z][GEMM_K][GEMM_N] and C [z][GEMM_M][GEMM_N] complex values stored as
 * (real, imaginary) float pairs at A_OFF, B_OFF, C_OFF of the workspace (the transforms' layout). Gauss's
 * three real products instead of four: for A = a + ib, B = c + id, conj(A) B = (ac + bd) + i(ad - bc), and
 * with m1 = sum ac, m2 = sum bd, m3 = sum (a - b)(c + d): real m1 + m2, imaginary m3 - m1 + m2.
 *
 * A work-group computes a TILE_M x TILE_N block, each work-item WORK_M x WORK_N of it held as three register
 * tiles (m1, m2, m3), as WORK_M/4 x WORK_N/4 float4 pieces spaced TILE_M/WORK_M x TILE_N/WORK_N float4s
 * apart. K_BLK rows of a, b, c, d are staged in local memory (split from the pairs while staging), double-
 * buffered: the next rows are fetched into registers while the current ones are multiplied.
 * Launch: global (GEMM_N / WORK_N, GEMM_M / WORK_M, frequencies), local (TILE_N / WORK_N, TILE_M / WORK_M).
 * Every dimension is padded to a multiple of its tile, K_BLK of GEMM_K (zeros in the padding).
 */
#define THREADS_N (TILE_N / WORK_N)
#define THREADS_M (TILE_M / WORK_M)
#define GWG (THREADS_N * THREADS_M)
#define A_ITEMS (K_BLK * TILE_M / 2)   /* float4s (two complex values each) of one staged A block */
#define B_ITEMS (K_BLK * TILE_N / 2)
#define A_LOADS ((A_ITEMS + GWG - 1) / GWG)
#define B_LOADS ((B_ITEMS + GWG - 1) / GWG)
#define COMPONENT(v, i) ((i) == 0 ? (v).s0 : (i) == 1 ? (v).s1 : (i) == 2 ? (v).s2 : (v).s3)

/* rows k0 .. k0 + K_BLK of a block (ITEMS float4s, rows of TILE / 2 float4s, row pitch WIDTH / 2) */
#define CFETCH(dst, src, k0, ITEMS, LOADS, TILE, WIDTH)                                  \
    _Pragma("unroll") for (int l = 0; l < LOADS; ++l) {                                  \
        const int item = lid + l * GWG;                                                  \
        if (ITEMS % GWG == 0 || item < ITEMS)                                            \
            dst[l] = src[((k0) + item / ((TILE) / 2)) * ((WIDTH) / 2) + item % ((TILE) / 2)]; \
    }
/* ... split into the real parts (re) and imaginary parts (im) of the local blocks */
#define CSTAGE(re, im, src, ITEMS, LOADS, TILE)                                          \
    _Pragma("unroll") for (int l = 0; l < LOADS; ++l) {                                  \
        const int item = lid + l * GWG;                                                  \
        if (ITEMS % GWG == 0 || item < ITEMS) {                                          \
            const int row = item / ((TILE) / 2), pair = item % ((TILE) / 2);             \
            vstore2(src[l].s02, pair, (__local float*)re[row]);                          \
            vstore2(src[l].s13, pair, (__local float*)im[row]);                          \
        }                                                                                \
    }

__kernel __attribute__((reqd_work_group_size(THREADS_N, THREADS_M, 1)))
void fft_cgemm(__global float* restrict ws)
{
    __local float4 ta[2][K_BLK][TILE_M / 4], tb[2][K_BLK][TILE_M / 4];
    __local float4 tc[2][K_BLK][TILE_N / 4], td[2][K_BLK][TILE_N / 4];
    const int tx = get_local_id(0), ty = get_local_id(1), lid = ty * THREADS_N + tx, z = get_group_id(2);
    const int m0 = get_group_id(1) * TILE_M, n0 = get_group_id(0) * TILE_N;
    __global const float4* a = (__global const float4*)(ws + A_OFF + 2 * (z * (GEMM_K * GEMM_M) + m0));
    __global const float4* b = (__global const float4*)(ws + B_OFF + 2 * (z * (GEMM_K * GEMM_N) + n0));

    float4 a_next[A_LOADS], b_next[B_LOADS];
    float4 m1[WORK_M][WORK_N / 4], m2[WORK_M][WORK_N / 4], m3[WORK_M][WORK_N / 4];
    #pragma unroll
    for (int i = 0; i < WORK_M; ++i)
        #pragma unroll
        for (int v = 0; v < WORK_N / 4; ++v) m1[i][v] = m2[i][v] = m3[i][v] = (float4)(0.0f);

    CFETCH(a_next, a, 0, A_ITEMS, A_LOADS, TILE_M, GEMM_M)
    CFETCH(b_next, b, 0, B_ITEMS, B_LOADS, TILE_N, GEMM_N)
    CSTAGE(ta[0], tb[0], a_next, A_ITEMS, A_LOADS, TILE_M)
    CSTAGE(tc[0], td[0], b_next, B_ITEMS, B_LOADS, TILE_N)
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int k0 = 0; k0 < GEMM_K; k0 += K_BLK) {
        const int buf = (k0 / K_BLK) & 1;
        const bool more = k0 + K_BLK < GEMM_K;
        if (more) {
            CFETCH(a_next, a, k0 + K_BLK, A_ITEMS, A_LOADS, TILE_M, GEMM_M)
            CFETCH(b_next, b, k0 + K_BLK, B_ITEMS, B_LOADS, TILE_N, GEMM_N)
        }
        #pragma unroll
        for (int kk = 0; kk < K_BLK; ++kk) {
            float4 a4[WORK_M / 4], b4[WORK_M / 4], d4m[WORK_M / 4], c4[WORK_N / 4], d4[WORK_N / 4], s4[WORK_N / 4];
            #pragma unroll
            for (int u = 0; u < WORK_M / 4; ++u) {
                a4[u] = ta[buf][kk][u * THREADS_M + ty];
                b4[u] = tb[buf][kk][u * THREADS_M + ty];
                d4m[u] = a4[u] - b4[u];
            }
            #pragma unroll
            for (int v = 0; v < WORK_N / 4; ++v) {
                c4[v] = tc[buf][kk][v * THREADS_N + tx];
                d4[v] = td[buf][kk][v * THREADS_N + tx];
                s4[v] = c4[v] + d4[v];
            }
            #pragma unroll
            for (int i = 0; i < WORK_M; ++i) {
                const float av = COMPONENT(a4[i / 4], i % 4), bv = COMPONENT(b4[i / 4], i % 4);
                const float dv = COMPONENT(d4m[i / 4], i % 4);
                #pragma unroll
                for (int v = 0; v < WORK_N / 4; ++v) {
                    m1[i][v] = mad((float4)(av), c4[v], m1[i][v]);
                    m2[i][v] = mad((float4)(bv), d4[v], m2[i][v]);
                    m3[i][v] = mad((float4)(dv), s4[v], m3[i][v]);
                }
            }
        }
        if (more) {
            CSTAGE(ta[buf ^ 1], tb[buf ^ 1], a_next, A_ITEMS, A_LOADS, TILE_M)
            CSTAGE(tc[buf ^ 1], td[buf ^ 1], b_next, B_ITEMS, B_LOADS, TILE_N)
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    __global float* c = ws + C_OFF + 2 * (z * (GEMM_M * GEMM_N) + m0 * GEMM_N + n0);
    #pragma unroll
    for (int u = 0; u < WORK_M / 4; ++u)
        #pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int row = (u * THREADS_M + ty) * 4 + i;
            #pragma unroll
            for (int v = 0; v < WORK_N / 4; ++v) {
                const float4 p = m1[u * 4 + i][v], q = m2[u * 4 + i][v], r = m3[u * 4 + i][v];
                const float4 re = p + q, im = r - p + q;
                GSTORE8((float8)(re.s0, im.s0, re.s1, im.s1, re.s2, im.s2, re.s3, im.s3),
                        c + 2 * (row * GEMM_N + (v * THREADS_N + tx) * 4));
            }
        }
}
#endif
