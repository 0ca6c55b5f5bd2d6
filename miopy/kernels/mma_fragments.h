/* conv_mma.cl's mma.sync: the fragment layout, mma() through inline PTX or emulated, ldmatrix, and
 * multiply_slice, which runs one staged slice through every warp's mmas (WGMMA's is in mma_wgmma.h).
 *
 * Defines read here (all ints):
 *   MIOPY_HALF       0: mma.m16n8k8 .tf32 (operands rounded to 10-bit mantissas, fp32 sums); 1: mma.m16n8k16 .f16
 *                    with fp32 sums
 *   LDMATRIX         1: fragments read with ldmatrix.x4 (A always; B when fp16 or laid out [col][kk]);
 *                    0: one 32-bit local read per register
 *   MMA_EMULATE      1: no PTX; each mma is computed by the warp through local memory with the same
 *                    fragment layout and TF32 rounding (tests of the index mapping on any OpenCL device);
 *                    EMU_PARAM / EMU_ARG pass the warps' scratch (EMU_WARP floats each) to mma()
 */
#ifndef MIOPY_MMA_FRAGMENTS_H
#define MIOPY_MMA_FRAGMENTS_H
/* -- the mma and its fragments -------------------------------------------------------------------------
 * Lane = 4 * gid + tig. TF32 m16n8k8: a0 (row gid, k tig), a1 (gid+8, tig), a2 (gid, tig+4), a3 (gid+8,
 * tig+4); b0 (k tig, col gid), b1 (tig+4, gid). F16 m16n8k16: each register holds the pair k, k+1 (low half
 * first) at k = 2*tig (a0, a1, b0) or 2*tig+8 (a2, a3, b1). Sums: c0 (gid, 2*tig), c1 (gid, 2*tig+1),
 * c2 (gid+8, 2*tig), c3 (gid+8, 2*tig+1). */
#if MIOPY_HALF
#define PAIR(tile, at0, at1) ((uint)(tile)[at0] | ((uint)(tile)[at1] << 16))
#define A_FRAG(tile, kk, m) (*(__local const uint*)((tile) + A_AT(kk, m)))
#define A_K0 (2 * tig)
#define A_K1 (2 * tig + 8)
#if B_KK_FAST
#define B_FRAG(tile, kk, n) (*(__local const uint*)((tile) + B_AT(kk, n)))
#else
#define B_FRAG(tile, kk, n) PAIR(tile, B_AT(kk, n), B_AT((kk) + 1, n))
#endif
#else
#define A_FRAG(tile, kk, m) ((tile)[A_AT(kk, m)])
#define B_FRAG(tile, kk, n) ((tile)[B_AT(kk, n)])
#define A_K0 tig
#define A_K1 (tig + 4)
#endif

#if MMA_EMULATE
#define EMU_A (16 * MMA_K)
#define EMU_WARP (EMU_A + MMA_K * 8)
#define EMU_PARAM , __local float* emu
#define EMU_ARG , emu

#if MIOPY_HALF
inline float emu_half(uint bits)
{
    const ushort h = (ushort)bits;
    return vload_half(0, (const __private half*)&h);
}
inline void emu_put(__local float* at, uint reg, int stride)
{
    at[0] = emu_half(reg & 0xffffu);
    at[stride] = emu_half(reg >> 16);
}
#define EMU_PUT(at, reg, stride) emu_put((at), (reg), (stride))
#else
#define EMU_PUT(at, reg, stride) (*(at) = as_float(reg))
#endif

/* The warp's A (16 x MMA_K, row-major) and B (MMA_K x 8, row-major) written from the fragments, then each
 * lane sums its four outputs. Every work-item of the work-group calls it alike (barriers). */
inline void mma(float* c, uint a0, uint a1, uint a2, uint a3, uint b0, uint b1, __local float* emu)
{
    const int lane = get_local_id(0) % 32, gid = lane / 4, tig = lane % 4;
    __local float* a = emu + (get_local_id(0) / 32) * EMU_WARP;
    __local float* b = a + EMU_A;
#if MIOPY_HALF
    EMU_PUT(a + gid * MMA_K + 2 * tig, a0, 1);
    EMU_PUT(a + (gid + 8) * MMA_K + 2 * tig, a1, 1);
    EMU_PUT(a + gid * MMA_K + 2 * tig + 8, a2, 1);
    EMU_PUT(a + (gid + 8) * MMA_K + 2 * tig + 8, a3, 1);
    EMU_PUT(b + (2 * tig) * 8 + gid, b0, 8);
    EMU_PUT(b + (2 * tig + 8) * 8 + gid, b1, 8);
#else
    EMU_PUT(a + gid * MMA_K + tig, a0, 1);
    EMU_PUT(a + (gid + 8) * MMA_K + tig, a1, 1);
    EMU_PUT(a + gid * MMA_K + tig + 4, a2, 1);
    EMU_PUT(a + (gid + 8) * MMA_K + tig + 4, a3, 1);
    EMU_PUT(b + tig * 8 + gid, b0, 8);
    EMU_PUT(b + (tig + 4) * 8 + gid, b1, 8);
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < MMA_K; ++k) {
        c[0] = fma(a[gid * MMA_K + k], b[k * 8 + 2 * tig], c[0]);
        c[1] = fma(a[gid * MMA_K + k], b[k * 8 + 2 * tig + 1], c[1]);
        c[2] = fma(a[(gid + 8) * MMA_K + k], b[k * 8 + 2 * tig], c[2]);
        c[3] = fma(a[(gid + 8) * MMA_K + k], b[k * 8 + 2 * tig + 1], c[3]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#else
#define EMU_PARAM
#define EMU_ARG
inline void mma(float* c, uint a0, uint a1, uint a2, uint a3, uint b0, uint b1)
{
#if MIOPY_HALF
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
        : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
        : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#endif
}
#endif

#if LDMATRIX
/* Four 8x8 matrices of 16-bit elements (8 rows of 16 bytes each; lane l gives the address of row l % 8 of
 * matrix l / 8): lane 4*gid + tig receives elements (gid, 2*tig) and (gid, 2*tig + 1) of each, or with .trans
 * elements (2*tig, gid) and (2*tig + 1, gid). A 32-bit element counts as two 16-bit ones (TF32 rows). */
inline void ldmatrix_x4(uint* r, __local const raw_t* row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(local_address(row)) : "memory");
}

inline void ldmatrix_x4_trans(uint* r, __local const raw_t* row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(local_address(row)) : "memory");
}
#define HALF_K (MMA_K / 2)          /* the second half of an mma's k: 4 TF32 words or 8 halves, 16 bytes */
#define B_LDMATRIX (MIOPY_HALF || B_KK_FAST)
#if B_LDMATRIX && TILES_N % 2
#error "LDMATRIX reads B fragments two n-tiles at a time: WARP_N must be a multiple of 16"
#endif
#endif

#if !WGMMA || MMA_EMULATE    /* (WGMMA multiplies in mma_wgmma.h) */
/* One staged slice: K_BLK / MMA_K sub-steps of TILES_M x TILES_N mmas per warp. */
inline void multiply_slice(__local const raw_t* a_tile, __local const raw_t* b_tile, float* acc, int wm, int wn,
                           int gid, int tig EMU_PARAM)
{
#if LDMATRIX
    const int lane = 4 * gid + tig, row8 = lane % 8, quad = lane / 8;
#endif
    #pragma unroll
    for (int kb = 0; kb < K_BLK; kb += MMA_K) {
        uint a[TILES_M][4], b[TILES_N][2];
        #pragma unroll
        for (int i = 0; i < TILES_M; ++i) {
#if LDMATRIX   /* matrices: rows 0-7 / 8-15 (quad & 1) x k low / high half (quad >> 1) = a0, a1, a2, a3 */
            ldmatrix_x4(a[i], a_tile + A_AT(kb + (quad >> 1) * HALF_K, wm + i * 16 + (quad & 1) * 8 + row8));
#else
            const int m = wm + i * 16 + gid;
            a[i][0] = A_FRAG(a_tile, kb + A_K0, m);
            a[i][1] = A_FRAG(a_tile, kb + A_K0, m + 8);
            a[i][2] = A_FRAG(a_tile, kb + A_K1, m);
            a[i][3] = A_FRAG(a_tile, kb + A_K1, m + 8);
#endif
#if A_CONVERT
            #pragma unroll
            for (int r = 0; r < 4; ++r)
                a[i][r] = tf32_bits(a[i][r]);
#endif
        }
#if LDMATRIX && B_LDMATRIX
        /* two n-tiles per ldmatrix: matrices (tile j, k low), (j, k high), (j+1, k low), (j+1, k high) */
        #pragma unroll
        for (int j = 0; j < TILES_N; j += 2) {
            uint r[4];
            const int n = wn + (j + (quad >> 1)) * 8;
#if B_KK_FAST   /* [col][kk]: rows are columns, as A */
            ldmatrix_x4(r, b_tile + B_AT(kb + (quad & 1) * HALF_K, n + row8));
#else           /* [kk][col] fp16: rows are k, transposed on the way */
            ldmatrix_x4_trans(r, b_tile + B_AT(kb + (quad & 1) * 8 + row8, n));
#endif
            b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
        }
#else
        #pragma unroll
        for (int j = 0; j < TILES_N; ++j) {
            const int n = wn + j * 8 + gid;
            b[j][0] = B_FRAG(b_tile, kb + A_K0, n);
            b[j][1] = B_FRAG(b_tile, kb + A_K1, n);
        }
#endif
#if B_CONVERT
        #pragma unroll
        for (int j = 0; j < TILES_N; ++j)
            b[j][0] = tf32_bits(b[j][0]), b[j][1] = tf32_bits(b[j][1]);
#endif
        #pragma unroll
        for (int i = 0; i < TILES_M; ++i)
            #pragma unroll
            for (int j = 0; j < TILES_N; ++j)
                mma(acc + (i * TILES_N + j) * 4, a[i][0], a[i][1], a[i][2], a[i][3], b[j][0], b[j][1] EMU_ARG);
    }
}
#endif
#endif
