/* Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), the counter-based
 * generator of Random123 and PyTorch: four independent uniform 32-bit words from a 128-bit counter and a
 * 64-bit key, with no state to carry between work-items. miopy.dropout.reference mirrors it in NumPy. */
#ifndef MIOPY_PHILOX_H
#define MIOPY_PHILOX_H

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

uint4 philox4x32_10(uint4 ctr, uint2 key)
{
    for (int round = 0; round < 10; ++round) {
        const uint lo0 = PHILOX_M0 * ctr.x, hi0 = mul_hi(PHILOX_M0, ctr.x);
        const uint lo1 = PHILOX_M1 * ctr.z, hi1 = mul_hi(PHILOX_M1, ctr.z);
        ctr = (uint4)(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
        key += (uint2)(PHILOX_W0, PHILOX_W1);
    }
    return ctr;
}

#endif
