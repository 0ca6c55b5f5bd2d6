"""Write probe variants of conv_mma.cl for kernel_ab.py: the kernel with one part of its work removed, to see
which part bounds it (the outputs are wrong; kernel_ab reports same_output false and times them anyway).

    python -m benchmarks.experiments.mma_probes            # writes miopy/kernels/conv_mma_{nomma,nob,noa}.cl
    python -m benchmarks.experiments.kernel_ab --alt conv_mma_nomma.cl --sets vgg16 --directions W --out DIR

- nomma: each mma.sync replaced by an integer mix of its operands into the sums (the fragments are still read and
  kept live): the time without the tensor cores' pipe.
- nob: backward-weights' B gather reads one address (offset 0, always inside): the time without x's gather (index
  arithmetic, bounds checks, memory traffic).
- noa: backward-weights' A reads row 0 of dy for every k: the time without streaming dy.
"""
from __future__ import annotations

import argparse
import sys

from benchmarks import harness
from miopy.kernel_cache import kernel_source  # conv_mma.cl with its headers inlined

KERNELS = harness.ROOT / "miopy" / "kernels"

MMA_ASM_F16 = '''    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
        : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));'''
MIX = '''    c[0] = as_float(as_uint(c[0]) ^ a0 ^ b0), c[1] = as_float(as_uint(c[1]) ^ a1 ^ b1);
    c[2] = as_float(as_uint(c[2]) ^ a2 ^ b0), c[3] = as_float(as_uint(c[3]) ^ a3 ^ b1);'''
# backward-weights' B offset and A row (the last definitions of each in the file are the DIRECTION == 4 ones)
B_OFFSET_W = '''inline int b_offset(tap_t row, tap_t col)
{
    const int h = col.h + row.h, w = col.w + row.w;
    return ((uint)h < H && (uint)w < W) ? col.off + row.off : -1;
}
#endif'''
A_ROW_W = '''inline int a_row(inner_t in)
{
    const int n = (int)((uint)in.chan / (P * Q)), pq = in.chan - n * (P * Q);
    return Y_AT(n, 0, pq / Q, pq % Q);
}'''


def probes(source: str) -> dict[str, str]:
    out = {}
    mma_tf32 = MMA_ASM_F16.replace("m16n8k16.row.col.f32.f16.f16.f32", "m16n8k8.row.col.f32.tf32.tf32.f32")
    assert source.count(MMA_ASM_F16) == 1 and source.count(mma_tf32) == 1
    out["nomma"] = source.replace(MMA_ASM_F16, MIX).replace(mma_tf32, MIX)
    assert source.count(B_OFFSET_W) == 1
    out["nob"] = source.replace(B_OFFSET_W, "inline int b_offset(tap_t row, tap_t col) { return 0; }\n#endif")
    assert source.count(A_ROW_W) == 1
    out["noa"] = source.replace(A_ROW_W, "inline int a_row(inner_t in) { return 0; }")
    return out


def main(argv=None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    source = kernel_source("conv_mma.cl")
    for name, text in probes(source).items():
        (KERNELS / f"conv_mma_{name}.cl").write_text(text)
        print(f"wrote {KERNELS / f'conv_mma_{name}.cl'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
