/* conv_mma.cl's copies of a slice from global to local memory: cp.async, or fetched into registers one step ahead,
 * converted (fp32 -> TF32 with cvt.rna; fp16 kept as raw bits) and staged (stored into the local tile).
 *
 * Defines read here (all ints):
 *   CP_ASYNC         1: slices copied global -> local by cp.async (sm_80+) without passing through registers,
 *                    zero-filled (src-size 0) where the gather reads padding; STAGES >= 2 buffers in a ring,
 *                    cp.async.commit_group per slice, cp.async.wait_group STAGES-2 and one barrier per step.
 *                    fp32: A and B by 4-byte copies (A by 16-byte .cg copies with VECTOR_A), converted to TF32
 *                    when the fragments are read (the weight copy of TRANSFORM_W is rounded already).
 *                    fp16: A by 16-byte copies with VECTOR_A, else by 4-byte pairs along k (A_PAIRS: k contiguous,
 *                    sizes even, as VECTOR_A's checks with 2-vectors); B keeps the register path (a 2-byte element
 *                    is below cp.async's 4-byte minimum), staged after the multiply of each step, except
 *                    (A_PAIRS in backward-weights with P*Q odd) pairs that are misaligned, straddle two dy planes
 *                    or end the tensor, which are read and stored element by element (A_PAIR_TAIL), and
 *                    with VECTOR_B, where each vector that is one aligned copy (or all zeros) goes by cp.async
 *                    0: fetched into registers one step ahead, converted, stored (the STAGES 1-2 loop)
 *   STAGES           local buffers: 2 = double buffering (one barrier per step), 1 = one buffer;
 *                    3, 4 (CP_ASYNC only): copies of slice s + STAGES - 1 in flight while slice s is multiplied
 *   VECTOR_A         1: A slices fetched as 16-byte vectors of consecutive k (float4 / 8 halves) where k is
 *                    contiguous in memory (transformed weights, 1x1 forward weights, dy planes in
 *                    backward-weights) and the channel / plane sizes are multiples of the vector
 *   VECTOR_B         0, or 2 / 4 / 8: forward / backward-data with CHANNEL_BLOCKS and stride 1 along w (W and Q
 *                    multiples of it): each work-item gathers B as VECTOR_B consecutive columns (one output
 *                    row's neighbours, neighbours in memory too), read as one vector (or one cp.async of
 *                    VECTOR_B elements) where the tap keeps them aligned and all inside or all outside the image,
 *                    else element by element; staged with one local store
 *   TRANSFORM_X      1: B read from the channel-fastest copy as 16-byte vectors of consecutive channels (one bounds
 *                    check and one cp.async per vector, fp16 included; C/G or K/G a multiple of the vector): along
 *                    k forward / backward-data, along the columns in backward-weights
 *   MMA_EMULATE      1: cp.async's synchronous stand-ins, TF32 rounding without PTX
 * It defines local_address (the 32-bit local address PTX takes), cp_async4/8/16, cp_commit, cp_wait, fetch_a,
 * fetch_b, to_raw, stage_b, stage, and A_CONVERT / B_CONVERT with tf32_bits (fragments read from cp.async copies).
 */
#ifndef MIOPY_MMA_COPY_H
#define MIOPY_MMA_COPY_H
/* -- cp.async (global -> local without registers) ---------------------------------------------------------
 * The local address is taken as the LDMATRIX path takes it; the source is the global address (NVIDIA's generic
 * address of global memory is the global one). src-size 0 copies nothing and zero-fills the destination: the
 * source is then the tensor's base, never read. MMA_EMULATE: synchronous stand-ins with the same effect. */
#if !MMA_EMULATE
inline uint local_address(__local const raw_t* p) { return (uint)(size_t)p; }
#endif

#if CP_ASYNC && MMA_EMULATE
inline void cp_async4(__local raw_t* dst, __global const src_t* src, bool valid)
{
    *(__local uint*)dst = valid ? *(__global const uint*)src : 0u;
}
inline void cp_async8(__local raw_t* dst, __global const src_t* src, bool valid)
{
    *(__local uint2*)dst = valid ? *(__global const uint2*)src : (uint2)(0u);
}
inline void cp_async16(__local raw_t* dst, __global const src_t* src, bool valid)
{
    *(__local uint4*)dst = valid ? *(__global const uint4*)src : (uint4)(0u);
}
inline void cp_commit(void) {}
inline void cp_wait(void) {}
#elif CP_ASYNC
inline void cp_async4(__local raw_t* dst, __global const src_t* src, bool valid)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;"
                 :: "r"(local_address(dst)), "l"((ulong)src), "r"(valid ? 4u : 0u) : "memory");
}
inline void cp_async8(__local raw_t* dst, __global const src_t* src, bool valid)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;"
                 :: "r"(local_address(dst)), "l"((ulong)src), "r"(valid ? 8u : 0u) : "memory");
}
inline void cp_async16(__local raw_t* dst, __global const src_t* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :: "r"(local_address(dst)), "l"((ulong)src), "r"(valid ? 16u : 0u) : "memory");
}
inline void cp_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
/* this work-item's copies of every group but the newest STAGES - 2 have landed */
#if STAGES == 2
inline void cp_wait(void) { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
#elif STAGES == 3
inline void cp_wait(void) { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
#else
inline void cp_wait(void) { asm volatile("cp.async.wait_group 2;" ::: "memory"); }
#endif
#endif

/* -- slice fetch (global -> registers, or global -> local with cp.async), conversion, stage -------------
 * fetch_a / fetch_b deliver each element of a slice either into reg (register path: converted and stored by
 * stage later) or, when the operand is A_ASYNC / B_ASYNC, straight into its place in the local tile. */
#if VECTOR_A || A_PAIRS
#if A_PAIRS
#define A_VEC 2
typedef uint a_reg_t;            /* 2 halves (cp.async only: never fetched into registers) */
#elif MIOPY_HALF
#define A_VEC 8
typedef uint4 a_reg_t;           /* 8 halves */
#else
#define A_VEC 4
typedef float4 a_reg_t;
#endif
#define A_GROUPS (K_BLK / A_VEC)           /* vectors across a slice's k */
#define A_VROWS (THREADS / A_GROUPS)       /* rows m one pass fetches */
#define A_REGS (M_BLK / A_VROWS)
#define A_KK_OF(t) ((t) % A_GROUPS * A_VEC)
#define A_COL_OF(t, j) ((t) / A_GROUPS + (j) * A_VROWS)
/* Work-item t fetches k = A_KK_OF(t) ... + A_VEC - 1 of rows A_COL_OF(t, j): all valid or none
 * (the solver checks that channel, plane and split sizes are multiples of A_VEC). */
inline void fetch_a(__global const src_t* restrict a, const int* a_cols, a_reg_t* reg, __local raw_t* tile, int t,
                    int step, range_t kr)
{
    const inner_t in = inner_at(step, A_KK_OF(t), kr);
    const int row = a_row(in);
#if A_PAIR_TAIL
    const inner_t in1 = inner_at(step, A_KK_OF(t) + 1, kr);
    const int row1 = a_row(in1);
#endif
    #pragma unroll
    for (int j = 0; j < A_REGS; ++j) {
        const bool ok = a_cols[j] >= 0 && in.valid;
#if A_PAIR_TAIL
        __local raw_t* dst = tile + A_AT(A_KK_OF(t), A_COL_OF(t, j));
        const bool ok1 = a_cols[j] >= 0 && in1.valid;
        if (!ok || (ok1 && row1 == row + 1 && ((a_cols[j] + row) & 1) == 0)) {
            cp_async4(dst, a + (ok ? a_cols[j] + row : 0), ok);
        } else {   /* the tail: element by element */
            dst[0] = a[a_cols[j] + row];
            dst[1] = ok1 ? a[a_cols[j] + row1] : (src_t)0;
        }
#elif A_PAIRS
        cp_async4(tile + A_AT(A_KK_OF(t), A_COL_OF(t, j)), a + (ok ? a_cols[j] + row : 0), ok);
#elif A_ASYNC
        cp_async16(tile + A_AT(A_KK_OF(t), A_COL_OF(t, j)), a + (ok ? a_cols[j] + row : 0), ok);
#else
        reg[j] = ok ? *(__global const a_reg_t*)(a + a_cols[j] + row) : (a_reg_t)(0);
#endif
    }
}
#else
typedef src_t a_reg_t;
#define A_REGS (A_NKK * A_NIDX)
#define A_COL_OF(t, j) (A_T_IDX + (j) * A_IDX_STEP)
inline void fetch_a(__global const src_t* restrict a, const int* a_cols, a_reg_t* reg, __local raw_t* tile, int t,
                    int step, range_t kr)
{
    #pragma unroll
    for (int i = 0; i < A_NKK; ++i) {
        const inner_t in = inner_at(step, A_T_KK + i * A_KK_STEP, kr);
        const int row = a_row(in);
        #pragma unroll
        for (int j = 0; j < A_NIDX; ++j) {
            const bool ok = a_cols[j] >= 0 && in.valid;
#if A_ASYNC       /* fp32 only (fp16 copies pairs) */
            cp_async4(tile + A_AT(A_T_KK + i * A_KK_STEP, A_T_IDX + j * A_IDX_STEP), a + (ok ? a_cols[j] + row : 0), ok);
#else
            reg[i * A_NIDX + j] = ok ? a[a_cols[j] + row] : (src_t)0;
#endif
        }
    }
}
#endif
#define A_NCOLS (VECTOR_A || A_PAIRS ? A_REGS : A_NIDX)

#if B_ASYNC
#define B_PUT(i, j, ok, off) cp_async4(tile + B_AT(B_T_KK + (i) * B_KK_STEP, B_T_IDX + (j) * B_IDX_STEP), \
                                       b + ((ok) ? (off) : 0), (ok))
#else
#define B_PUT(i, j, ok, off) (reg[(i) * B_NIDX + (j)] = (ok) ? b[off] : (src_t)0)
#endif

#if CHANNEL_BLOCKS && DIRECTION != 4
#define CHAN_STRIDE (TRANSFORM_X ? 1 : DIRECTION == 1 ? XS_C : YS_K)
#endif

#if TRANSFORM_X && DIRECTION == 4
/* B_VEC channels of one tap at one (n, p, q): consecutive in the copy, all inside the image or all outside (zeros) */
inline void fetch_b(__global const src_t* restrict b, const tap_t* b_cols, b_reg_t* reg, __local raw_t* tile,
                    int t, int step, range_t kr, uint* mask)
{
    *mask = 0;
    #pragma unroll
    for (int i = 0; i < B_NVK; ++i) {
        const int kk = t / B_VSTEP + i * B_VROWS;
        const inner_t in = inner_at(step, kk, kr);
        tap_t row = b_row(in);
        row.h = in.valid ? row.h : OFF_IMAGE;
        #pragma unroll
        for (int j = 0; j < B_NVJ; ++j) {
            const int off = b_offset(row, b_cols[j]);
#if B_ASYNC
            cp_async16(tile + B_AT(kk, B_COL_OF(t, j)), b + (off >= 0 ? off : 0), off >= 0);
#else
            reg[i * B_NVJ + j] = off >= 0 ? *(__global const uint4*)(b + off) : (uint4)(0u);
#endif
        }
    }
}
#elif TRANSFORM_X
/* A step is one tap: the vector's B_VEC channels of a column are consecutive in the copy, all inside the image
 * or all outside (zeros), all below the channel count or all past it (it is a multiple of B_VEC). */
inline void fetch_b(__global const src_t* restrict b, const tap_t* b_cols, b_reg_t* reg, __local raw_t* tile,
                    int t, int step, range_t kr, uint* mask)
{
    *mask = 0;
    const int kk = B_KK_OF(t);
    const inner_t in = inner_at(step, kk, kr);
    const tap_t row = b_row(in);
    #pragma unroll
    for (int j = 0; j < B_REGS; ++j) {
        const int off = b_offset(row, b_cols[j]);
        const bool ok = in.valid && off >= 0;
#if B_ASYNC
        cp_async16(tile + B_AT(kk, B_COL_OF(t, j)), b + (ok ? off : 0), ok);
#else
        reg[j] = ok ? *(__global const uint4*)(b + off) : (uint4)(0u);
#endif
    }
}
#elif VECTOR_B
typedef CAT(SRC_BASE, VECTOR_B) b_vec_t;
#define B_VAT(i, j) B_AT(B_T_VK + (i) * B_VROWS, B_COL_OF(t, j))
#if B_ASYNC || B_MIXED   /* VECTOR_B elements in one copy */
#define VB_BYTES (VECTOR_B * (MIOPY_HALF ? 2 : 4))
#if VB_BYTES == 4
#define cp_async_vb(dst, src, ok) cp_async4((dst), (src), (ok))
#elif VB_BYTES == 8
#define cp_async_vb(dst, src, ok) cp_async8((dst), (src), (ok))
#else
#define cp_async_vb(dst, src, ok) cp_async16((dst), (src), (ok))
#endif
#endif
#if B_MIXED && B_NVK * B_NVJ > 32
#error "B_MIXED keeps one bit per vector in a uint"
#endif
/* A step is one tap. Per vector: the offsets of its VECTOR_B columns (consecutive in memory when they are
 * all inside); `whole` (all inside, aligned: one vector) and `none` (all outside: zeros) hold for every row,
 * the rows being whole channel planes apart (W, Q multiples of VECTOR_B keep planes aligned). B_MIXED: the
 * vectors copied by cp.async are marked in *mask (bit i * B_NVJ + j) for stage_b to skip. */
inline void fetch_b(__global const src_t* restrict b, const tap_t* b_cols, b_reg_t* reg, __local raw_t* tile,
                    int t, int step, range_t kr, uint* mask)
{
    const inner_t in0 = inner_at(step, B_T_VK, kr);
    const tap_t row0 = b_row(in0);
    uint copied = 0;
    #pragma unroll
    for (int j = 0; j < B_NVJ; ++j) {
        int offs[VECTOR_B];
        bool none = true;
        #pragma unroll
        for (int e = 0; e < VECTOR_B; ++e) {
            offs[e] = b_offset(row0, col_plus(b_cols[j], e));
            none = none && offs[e] < 0;
        }
        const bool whole = offs[0] >= 0 && offs[VECTOR_B - 1] == offs[0] + VECTOR_B - 1 && offs[0] % VECTOR_B == 0;
        #pragma unroll
        for (int i = 0; i < B_NVK; ++i) {
            const bool chan_ok = CHANS % K_BLK == 0 || in0.chan + i * B_VROWS < CHANS;
            const int shift = i * B_VROWS * CHAN_STRIDE;
#if B_ASYNC
            if (whole || none || !chan_ok) {
                const bool ok = whole && chan_ok;
                cp_async_vb(tile + B_VAT(i, j), b + (ok ? offs[0] + shift : 0), ok);
            } else {
                #pragma unroll
                for (int e = 0; e < VECTOR_B; ++e) {
                    const bool ok = offs[e] >= 0;
                    cp_async4(tile + B_VAT(i, j) + e, b + (ok ? offs[e] + shift : 0), ok);
                }
            }
#else
            src_t* at = reg + (i * B_NVJ + j) * VECTOR_B;
            if (whole || none || !chan_ok) {
#if B_MIXED
                const bool ok = whole && chan_ok;
                cp_async_vb(tile + B_VAT(i, j), b + (ok ? offs[0] + shift : 0), ok);
                copied |= 1u << (i * B_NVJ + j);
#else
                CAT(vstore, VECTOR_B)((whole && chan_ok) ? *(__global const b_vec_t*)(b + offs[0] + shift)
                                                         : (b_vec_t)((src_t)0), 0, at);
#endif
            } else {
                #pragma unroll
                for (int e = 0; e < VECTOR_B; ++e)
                    at[e] = offs[e] >= 0 ? b[offs[e] + shift] : (src_t)0;
            }
#endif
        }
    }
    *mask = copied;
}
#elif CHANNEL_BLOCKS && DIRECTION != 4
/* A step is one tap: every row's element sits a whole number of channels from row B_T_KK's, inside or
 * outside the image alike, so offsets and bounds are worked out once per column. */
inline void fetch_b(__global const src_t* restrict b, const tap_t* b_cols, b_reg_t* reg, __local raw_t* tile,
                    int t, int step, range_t kr, uint* mask)
{
    *mask = 0;
    const inner_t in0 = inner_at(step, B_T_KK, kr);
    const tap_t row0 = b_row(in0);
    int offs[B_NIDX];
    #pragma unroll
    for (int j = 0; j < B_NIDX; ++j)
        offs[j] = b_offset(row0, b_cols[j]);
    #pragma unroll
    for (int i = 0; i < B_NKK; ++i) {
        const bool chan_ok = CHANS % K_BLK == 0 || in0.chan + i * B_KK_STEP < CHANS;
        #pragma unroll
        for (int j = 0; j < B_NIDX; ++j)
            B_PUT(i, j, chan_ok && offs[j] >= 0, offs[j] + i * B_KK_STEP * CHAN_STRIDE);
    }
}
#else
inline void fetch_b(__global const src_t* restrict b, const tap_t* b_cols, b_reg_t* reg, __local raw_t* tile,
                    int t, int step, range_t kr, uint* mask)
{
    *mask = 0;
    #pragma unroll
    for (int i = 0; i < B_NKK; ++i) {
        const inner_t in = inner_at(step, B_T_KK + i * B_KK_STEP, kr);
        tap_t row = b_row(in);
        row.h = in.valid ? row.h : OFF_IMAGE;
        #pragma unroll
        for (int j = 0; j < B_NIDX; ++j) {
            const int off = b_offset(row, b_cols[j]);
            B_PUT(i, j, off >= 0, off);
        }
    }
}
#endif

#if MIOPY_HALF
inline raw_t to_raw(src_t v) { return v; }
#elif MMA_EMULATE
/* cvt.rna.tf32.f32: round the magnitude to 10 mantissa bits, ties away from zero */
inline raw_t to_raw(src_t v) { return (as_uint(v) + 0x1000u) & 0xffffe000u; }
#else
inline raw_t to_raw(src_t v)
{
    uint r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}
#endif

#if TRANSFORM_X && DIRECTION == 4
inline void stage_b(__local raw_t* b_tile, const b_reg_t* b_reg, int t, uint mask)
{
    #pragma unroll
    for (int i = 0; i < B_NVK; ++i)
        #pragma unroll
        for (int j = 0; j < B_NVJ; ++j)
            *(__local uint4*)(b_tile + B_AT(t / B_VSTEP + i * B_VROWS, B_COL_OF(t, j))) = b_reg[i * B_NVJ + j];
}
#elif TRANSFORM_X
inline void stage_b(__local raw_t* b_tile, const b_reg_t* b_reg, int t, uint mask)
{
    #pragma unroll
    for (int j = 0; j < B_REGS; ++j)
        *(__local uint4*)(b_tile + B_AT(B_KK_OF(t), B_COL_OF(t, j))) = b_reg[j];
}
#elif VECTOR_B
inline void stage_b(__local raw_t* b_tile, const b_reg_t* b_reg, int t, uint mask)
{
    #pragma unroll
    for (int i = 0; i < B_NVK; ++i)
        #pragma unroll
        for (int j = 0; j < B_NVJ; ++j) {
            if ((mask >> (i * B_NVJ + j)) & 1u)
                continue;
            const src_t* at = b_reg + (i * B_NVJ + j) * VECTOR_B;
            raw_t raw[VECTOR_B];
            #pragma unroll
            for (int e = 0; e < VECTOR_B; ++e)
                raw[e] = to_raw(at[e]);
            *(__local CAT(RAW_BASE, VECTOR_B)*)(b_tile + B_VAT(i, j)) = CAT(vload, VECTOR_B)(0, raw);
        }
}
#else
inline void stage_b(__local raw_t* b_tile, const b_reg_t* b_reg, int t, uint mask)
{
    #pragma unroll
    for (int i = 0; i < B_NKK; ++i)
        #pragma unroll
        for (int j = 0; j < B_NIDX; ++j)
            b_tile[B_AT(B_T_KK + i * B_KK_STEP, B_T_IDX + j * B_IDX_STEP)] = to_raw(b_reg[i * B_NIDX + j]);
}
#endif

inline void stage(__local raw_t* a_tile, __local raw_t* b_tile, const a_reg_t* a_reg, const b_reg_t* b_reg, int t)
{
#if VECTOR_A
    #pragma unroll
    for (int j = 0; j < A_REGS; ++j) {
        __local uint4* at = (__local uint4*)(a_tile + A_AT(A_KK_OF(t), A_COL_OF(t, j)));
#if MIOPY_HALF
        *at = a_reg[j];
#else
        *at = (uint4)(to_raw(a_reg[j].x), to_raw(a_reg[j].y), to_raw(a_reg[j].z), to_raw(a_reg[j].w));
#endif
    }
#else
    #pragma unroll
    for (int i = 0; i < A_NKK; ++i)
        #pragma unroll
        for (int j = 0; j < A_NIDX; ++j)
            a_tile[A_AT(A_T_KK + i * A_KK_STEP, A_T_IDX + j * A_IDX_STEP)] = to_raw(a_reg[i * A_NIDX + j]);
#endif
    stage_b(b_tile, b_reg, t, 0u);
}

/* Fragments of operands copied by cp.async hold fp32 bits: rounded to TF32 as they are read (as to_raw does
 * on the register path), except A from the weight copy, which transform_weights rounded already. WGMMA (TF32
 * backward-weights) reads such fp32 bits from local memory as the hardware does, dropping the low 13
 * (truncation: rounding the landed slices in place costs more than it is worth, docs/guide/tensor_cores.md, Accuracy):
 * so does its emulation. */
#define A_CONVERT (A_ASYNC && !MIOPY_HALF && !TRANSFORM_W)
#define B_CONVERT (B_ASYNC && !MIOPY_HALF && !TRANSFORM_X)
#if (A_CONVERT || B_CONVERT) && WGMMA
inline uint tf32_bits(uint v) { return v & 0xffffe000u; }
#elif A_CONVERT || B_CONVERT
inline uint tf32_bits(uint v) { return to_raw(as_float(v)); }
#endif

#endif
