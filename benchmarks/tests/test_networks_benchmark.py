"""benchmarks.networks without a device: the time guard stops a run wherever it is, and its results page renders
every kind of row (measured, missed target, failed, cold starts cut short)."""
from __future__ import annotations

import json
import time

import pytest

from benchmarks import harness


@pytest.fixture(scope="module")
def networks():
    from benchmarks import networks
    return networks


def test_budget_stops_a_busy_loop(networks):
    budget = networks.Budget(time.perf_counter() - networks.T0 + 0.2)
    budget.arm()
    try:
        with pytest.raises(networks.BudgetExceeded, match="time budget"):
            while True:
                sum(range(1000))
    finally:
        budget.disarm()
    assert budget.left() <= 0


def _row(model: str, batch: int, miopy_ms: float, torch_ms: float, **extra) -> dict:
    return {"model": model, "batch": batch, "miopy_ms": miopy_ms, "miopy_device_ms": miopy_ms * 0.9, "steps": 7,
            "residual_fused": 2, "load_s": 3.0, "max_error": 2e-5, "torch_fp32_ms": torch_ms,
            "torch_tf32_ms": torch_ms / 2, "ratio_fp32": torch_ms / miopy_ms, "ratio_tf32": torch_ms / 2 / miopy_ms,
            "memory": {"activations": 2**20, "weights": 2**21, "workspaces": 0, "slots": 3, "values": 9},
            "top_layers": [{"ms": 0.5, "layer": "conv1+bn1+relu1", "ops": "Conv+BatchNormalization+Relu",
                            "solver": "ConvImplicitGemm"}], **extra}


def test_page_renders_every_kind_of_row(networks, tmp_path):
    cold = {"no_perf_db": {"startup_s": 0.5, "first_inference_s": 12.25, "cache": {"compiled": 40}},
            "system_perf_db": {"error": "stopped at the time budget after 9 s"}}
    data = {"device": "Fake GPU", "platform": "Fake CL", "torch": "9.9", "cuda_device": "Fake", "find": True,
            "stopped": "time budget of 450 s reached",
            "rows": [_row("resnet18", 1, 1.0, 0.8, cold=cold), _row("resnet18", 32, 10.0, 8.0),
                     {"model": "vgg16", "batch": 1, "error": "not started: time budget"}]}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    text = "\n".join(networks.page([harness.Source.load(path)], tmp_path))
    assert "On Fake GPU (Fake CL), PyTorch 9.9 on Fake" in text and "`r.json`" in text   # provenance
    assert "stopped early (time budget of 450 s reached)" in text and "with find" in text
    assert "| resnet18 | 1 | 1.000 | 1000 |" in text and "| 0.80 | yes |" in text     # 0.8x >= 0.67x
    assert "| resnet18 | 32 | 10.000 | 3200 |" in text and "| 0.80 | **no** |" in text  # 0.8x < 0.9x
    assert "| vgg16 | 1 | not started: time budget |" in text
    assert "| resnet18 | 1 | 12.2 | 40 | stopped at the time budget after 9 s |  |" in text
    assert "![throughput ratio](networks.png)" in text
    assert (tmp_path / "networks.png").exists() == (harness.pyplot() is not None)
