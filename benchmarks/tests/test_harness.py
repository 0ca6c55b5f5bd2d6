"""The harness pieces that run on any device: summaries, what a result records, JSON and markdown, and timing on
the default OpenCL device (PoCL in CI) with a tiny plan."""
from __future__ import annotations

import json
import math
import types

import numpy as np
import pytest

from benchmarks import harness


def test_geomean_skips_what_has_no_logarithm():
    assert harness.geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert harness.geomean([2.0, None, 0.0, float("nan"), float("inf"), -1.0, 8.0]) == pytest.approx(4.0)
    assert math.isnan(harness.geomean([])) and math.isnan(harness.geomean([None]))
    assert harness.geomean(v for v in (3.0,)) == pytest.approx(3.0)          # any iterable


def test_a_new_record_says_where_when_and_how_it_was_made(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "__main__",
                        types.SimpleNamespace(__spec__=types.SimpleNamespace(name="benchmarks.suite")))
    record = harness.new_record(None, ["suite.py", "--sets", "alexnet", "--out", "a b.json"], rows=[1])
    meta = record["meta"]
    assert record["rows"] == [1]
    assert meta["command"] == "python -m benchmarks.suite --sets alexnet --out 'a b.json'"
    assert meta["date"].endswith("+00:00") and meta["versions"]["python"] and meta["versions"]["numpy"]
    assert meta["commit"] is None or len(meta["commit"]) == 40
    assert set(meta) >= {"commit", "dirty", "date", "command", "versions", "host"}


def test_a_record_with_a_handle_names_its_device(handle):
    meta = harness.new_record(handle)["meta"]
    assert meta["device"] == handle.info.name and meta["device_id"] == handle.info.device_id
    assert meta["compute_units"] == handle.info.compute_units


def test_write_json_is_whole_or_absent_and_takes_numpy_values(tmp_path):
    path = tmp_path / "deep" / "r.json"
    harness.write_json(path, {"ms": np.float32(1.5), "dims": np.array([1, 2]), "where": tmp_path})
    assert json.loads(path.read_text()) == {"ms": 1.5, "dims": [1, 2], "where": str(tmp_path)}
    assert not list(path.parent.glob("*.tmp"))
    harness.write_json(None, {"nothing": "written"})   # no --out: no file


def test_meta_of_reads_new_and_older_results():
    new = {"meta": {"device": "GPU A", "command": "python -m benchmarks.x", "commit": "c" * 40}, "rows": []}
    assert harness.meta_of(new, {"device": "catalog's"})["device"] == "GPU A"          # the file's own meta first
    old = {"device": "NVIDIA CUDA|GPU B|1|2CU", "date": "2026-01-01", "argv": ["--batch", "32"]}
    meta = harness.meta_of(old, {"device": "GPU B", "commit": "d" * 40})
    assert meta == {"device": "GPU B", "commit": "d" * 40, "date": "2026-01-01", "command": "--batch 32"}
    assert harness.meta_of([{"a": 1}], {"device": "x"}) == {"device": "x"}          # list-shaped results


def test_markdown_tables_and_missing_values():
    assert harness.md_table(["a", "b"], [[1, "x|y"]]) == ["| a | b |", "|---|---|", "| 1 | x\\|y |"]
    assert harness.fmt(None, ".2f") == "-" and harness.fmt(float("nan"), ".2f") == "-"
    assert harness.fmt(1.234, ".2f") == "1.23"


def test_provenance_table_links_each_file(tmp_path):
    path = tmp_path / "r.json"
    harness.write_json(path, harness.new_record(None, rows=[]))
    source = harness.Source.load(path, {"device": "GPU C"})
    lines = harness.page_head("Title", [source], "Intro.")
    assert lines[0] == "# Title" and "Intro." in lines
    row = next(line for line in lines if line.startswith("| [`r.json`]"))
    assert "(../../benchmarks/results/r.json)" in row and "GPU C" in row and "python" in row


def test_host_and_wall_clocks_count_calls_and_drains():
    calls, drains = [], []
    us = harness.host_us(lambda: calls.append(1), lambda: drains.append(1), batches=4, per_batch=5, warmup=2)
    assert us >= 0 and len(calls) == 2 + 4 * 5 and len(drains) == 1 + 4
    calls.clear()
    ms = harness.wall_ms(lambda: calls.append(1), lambda: None, rounds=3, per_round=2, warmup=1)
    assert ms >= 0 and len(calls) == 1 + 3 * 2


def test_interleaved_calls_take_turns_and_settle_each_round():
    order, settled = [], []
    wall, cpu = harness.interleaved_ms({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, rounds=3,
                                       iters=2, settle=lambda: settled.append(1))
    assert set(wall) == set(cpu) == {"a", "b"} and len(settled) == 3
    assert order == ["a", "b"] + ["a", "a", "b", "b"] * 3        # one warm-up call each, then turns


def test_device_time_of_a_tiny_plan(handle):
    """A naive convolution's plan on the default device: the profiled time of a run and of each launch."""
    import miopy
    from miopy import ConvDesc, TensorDesc
    x_desc, w_desc = TensorDesc("FP32", (1, 4, 6, 6)), TensorDesc("FP32", (4, 4, 3, 3))
    naive = miopy.ConvAlgoPerf("ConvDirectNaive", "naive", 1.0, 0, {"WG": 64})
    plan = miopy.convolution_plan(handle, 1, x_desc, w_desc, ConvDesc(1), algo=naive)
    rng = np.random.default_rng(0)
    values = (handle.to_device(rng.standard_normal(x_desc.dims).astype(np.float32)),
              handle.to_device(rng.standard_normal(w_desc.dims).astype(np.float32)), handle.empty(x_desc.dims))
    ms = harness.device_ms(handle, lambda: plan.run_values(values), warmup=1, iters=3)
    assert 0 < ms < 10_000
    launches = harness.launch_ms(handle, lambda: plan.run_values(values), runs=2)
    assert len(launches) == len(plan.solution.launches) and all(t > 0 for t in launches)
    assert harness.events_ms(plan.run_values(values)) > 0


def test_copy_bandwidth_on_the_default_device(handle):
    assert harness.copy_bandwidth_gbs(handle, mbytes=1, iters=2) > 0
