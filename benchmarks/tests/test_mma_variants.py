"""benchmarks.mma_variants without a device: the variants it plans on a described H100, and its results-page table
(moved here from tests/solvers/test_mma.py: the library's tests import no benchmark)."""
from __future__ import annotations

import argparse

from benchmarks import harness
from miopy.device import DeviceInfo

H100 = DeviceInfo("NVIDIA CUDA", "NVIDIA Corporation", "NVIDIA H100", "580", "ALL | GPU", 132, 48 << 10, 1024,
                  (1024, 1024, 64), 80 << 30, False, ptx_mma=("tf32", "f16", "cp_async"))


def test_variant_benchmark_plans_split_variants_and_renders_the_h100_table():
    """The previous defaults and the split variants on ResNet-50's 1x1 backward-weights (a described H100, nothing
    built), direction filters, and the table of the H100 result file."""
    from benchmarks import mma_variants
    args = argparse.Namespace(layers="resnet50-1x1-64-256", sets="", directions="WF", dtypes="FP32",
                              variants="prev,split-double,splitk2")
    wgrad, fwd = mma_variants.plan_rows(H100, args)
    by = {v["name"]: v for v in wgrad["variants"]}
    assert by["prev"]["params"]["SPLIT"] == 8 and by["prev"]["params"]["M_BLK"] == 32
    assert by["split-double"]["params"]["SPLIT"] == 2 * by["default"]["params"]["SPLIT"]
    assert by["splitk2"] == {"name": "splitk2", "not_for": "W"}
    assert {v["name"]: v for v in fwd["variants"]}["prev"] == {"name": "prev", "not_for": "F"}
    record = harness.read_json(harness.RESULTS / "h100-mma-variants.json")
    lines = mma_variants.markdown(record, "h100-mma-variants.json")
    assert sum(line.startswith("| resnet50") for line in lines) == 12
    assert "- TF32 geomean best / cuDNN 1.84 over 12 rows, worst 3.37" in lines
