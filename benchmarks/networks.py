"""Whole networks: torchvision CNNs (random weights) exported to ONNX and run through miopy.onnx, checked
against PyTorch fp32 and timed beside PyTorch fp32 (cuDNN, TF32 off) and PyTorch's default (TF32 on) in
the same run; cold first-inference time with empty caches, without and with the shipped system perf DB.

    python3 benchmarks/networks.py --out benchmarks/results/h100-networks.json        # the GPU machine
    python3 benchmarks/networks.py --report benchmarks/results/h100-networks.json     # docs/networks.md + png
    python3 benchmarks/networks.py --quick                                            # PoCL smoke run

Throughput is images per second from wall-clock time over back-to-back passes, with the device drained
before and after (both sides: miopy replays its captured pass, PyTorch calls the module under no_grad).
The device-time column is miopy's first-kernel-start to last-kernel-end of one pass. --quick needs no
torch: a small ResNet-like model is built with onnx.helper and checked against onnxruntime instead.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODELS = ("resnet18", "resnet50", "vgg16", "alexnet", "googlenet", "mobilenet_v2")
BATCHES = (1, 32)
TOLERANCE = 1e-3          # max hybrid |a - e| / (1 + |e|) against PyTorch fp32
TARGETS = {1: 0.67, 32: 0.9}   # miopy / PyTorch fp32 throughput the issue asks for, per batch


def hybrid_error(got: np.ndarray, expected: np.ndarray) -> float:
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    return float(np.max(np.abs(got - expected) / (1.0 + np.abs(expected)), initial=0.0))


# -- the models --------------------------------------------------------------------------------------------------
def torch_model(name: str, seed: int = 0):
    """A torchvision model with random weights in eval mode; batch-norm statistics randomised too, so the
    folding into convolutions is exercised (fresh modules have mean 0, variance 1)."""
    import torch
    import torchvision
    torch.manual_seed(seed)
    kwargs = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    model = getattr(torchvision.models, name)(weights=None, **kwargs).eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
    return model


def export(model, batch: int, path: Path) -> None:
    """ONNX through the TorchScript exporter (opset 17) where this torch has it, else the default one."""
    import torch
    x = torch.randn(batch, 3, 224, 224)
    kwargs = dict(input_names=["input"], output_names=["output"], opset_version=17)
    try:
        torch.onnx.export(model, (x,), str(path), dynamo=False, **kwargs)
    except TypeError:   # a torch without the dynamo switch
        torch.onnx.export(model, (x,), str(path), **kwargs)


def quick_model(path: Path, seed: int = 0) -> None:
    """A small ResNet-like model (stem, two basic blocks, an Inception-style concat, a depthwise block,
    pooling, classifier) with onnx.helper: the PoCL stand-in for the torchvision models."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    nodes, inits, count = [], [], [0]

    def const(a) -> str:
        count[0] += 1
        inits.append(numpy_helper.from_array(np.asarray(a, np.float32), f"w{count[0]}"))
        return f"w{count[0]}"

    def node(op, inputs, **attrs) -> str:
        count[0] += 1
        out = f"v{count[0]}"
        nodes.append(helper.make_node(op, inputs, [out], name=f"{op.lower()}{count[0]}", **attrs))
        return out

    def conv_bn(x, c, k, r=3, stride=1, group=1, relu=True) -> str:
        w = const(rng.standard_normal((k, c // group, r, r)) * np.sqrt(2.0 / (c // group * r * r)))
        y = node("Conv", [x, w], pads=[r // 2] * 4, strides=[stride] * 2, group=group)
        bn = [const(rng.uniform(0.5, 1.5, k)), const(rng.uniform(-0.2, 0.2, k)), const(rng.uniform(-0.2, 0.2, k)),
              const(rng.uniform(0.5, 1.5, k))]
        y = node("BatchNormalization", [y, *bn])
        return node("Relu", [y]) if relu else y

    x = conv_bn("input", 3, 16, stride=2)
    for _ in range(2):                                    # basic blocks
        x = node("Relu", [node("Add", [conv_bn(conv_bn(x, 16, 16), 16, 16, relu=False), x])])
    branches = [conv_bn(x, 16, 8, r=1), conv_bn(x, 16, 8, r=3), node("MaxPool", [x], kernel_shape=[3, 3],
                                                                      pads=[1] * 4, strides=[1, 1])]
    x = node("Concat", branches, axis=1)                  # 32 channels
    x = conv_bn(conv_bn(x, 32, 32, group=32), 32, 32, r=1)   # depthwise + pointwise
    x = node("Flatten", [node("GlobalAveragePool", [x])])
    y = node("Gemm", [x, const(rng.standard_normal((10, 32)) / 6), const(rng.standard_normal(10))], transB=1)
    graph = helper.make_graph(nodes, "quick", [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                                             ["N", 3, 32, 32])],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], inits)
    import onnx
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


# -- timing ------------------------------------------------------------------------------------------------------
def wall_ms(run, sync, iters: int, warmup: int = 3) -> float:
    """Median over 3 rounds of the wall-clock ms per call of iters back-to-back calls, drained around."""
    for _ in range(warmup):
        run()
    sync()
    rounds = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(iters):
            run()
        sync()
        rounds.append((time.perf_counter() - start) * 1e3 / iters)
    return statistics.median(rounds)


def torch_times(model, x, iters: int) -> dict:
    """PyTorch's ms per pass and output, strict fp32 (TF32 off) and default (cuDNN TF32 on)."""
    import torch
    torch.backends.cudnn.benchmark = True
    out = {}
    for label, tf32 in (("fp32", False), ("tf32", True)):
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = False if not tf32 else torch.backends.cuda.matmul.allow_tf32
        with torch.no_grad():
            y = model(x)
            out[f"torch_{label}_ms"] = wall_ms(lambda: model(x), torch.cuda.synchronize, iters)
        if label == "fp32":
            out["reference"] = y.float().cpu().numpy()
    torch.backends.cudnn.allow_tf32 = True
    return out


def miopy_run(path: Path, handle, feeds: dict, iters: int, find: bool) -> dict:
    from miopy.onnx import InferenceSession
    start = time.perf_counter()
    session = InferenceSession(path, handle, find=find)
    load_s = time.perf_counter() - start
    (y,) = session.run(None, feeds)
    ms = wall_ms(session.sequence.replay, handle.finish, iters)
    layer_ms, device_ms = session.profile(iters=max(iters // 2, 3))
    layers = sorted(zip(layer_ms, session.layers()), key=lambda t: -t[0])
    return {"output": y, "miopy_ms": ms, "miopy_device_ms": device_ms, "load_s": load_s, "steps": len(session.steps),
            "memory": session.memory.__dict__,
            "top_layers": [{"ms": t, "layer": lbl, "ops": ops, "solver": sid} for t, (lbl, ops, sid) in layers[:8]],
            "solvers": _solver_counts(session)}


def _solver_counts(session) -> dict:
    counts: dict[str, int] = {}
    for _, _, solver in session.layers():
        counts[solver] = counts.get(solver, 0) + 1
    return counts


COLD_CHILD = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import miopy
from miopy.onnx import InferenceSession
handle = miopy.Handle()
t1 = time.perf_counter()
session = InferenceSession(sys.argv[1], handle)
x = np.random.default_rng(0).standard_normal(session.get_inputs()[0].shape).astype(np.float32)
session.run(None, {session.get_inputs()[0].name: x})
t2 = time.perf_counter()
print(json.dumps({"startup_s": t1 - t0, "first_inference_s": t2 - t1, "cache": handle.cache_stats()}))
"""


def cold_start(path: Path) -> dict:
    """First inference in fresh processes with empty kernel caches, user DB and driver JIT cache: without
    any perf DB, then with the shipped system perf DB."""
    out = {}
    for label, system_db in (("no_perf_db", "/nonexistent/miopy-system.db"), ("system_perf_db", None)):
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, MIOPY_CACHE_DIR=f"{tmp}/cache", MIOPY_USER_DB_PATH=f"{tmp}/user.db",
                       CUDA_CACHE_PATH=f"{tmp}/nv", PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}")
            env.pop("MIOPY_SYSTEM_DB_PATH", None)
            if system_db:
                env["MIOPY_SYSTEM_DB_PATH"] = system_db
            done = subprocess.run([sys.executable, "-c", COLD_CHILD, str(path)], env=env, capture_output=True,
                                  text=True, cwd=ROOT)
            out[label] = (json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0
                          else {"error": done.stderr.strip().splitlines()[-1:]})
    return out


# -- the runs ----------------------------------------------------------------------------------------------------
def run_gpu(args) -> dict:
    import torch

    import miopy
    handle = miopy.Handle()
    result = {"device": handle.info.name, "platform": handle.info.platform, "torch": torch.__version__,
              "cuda_device": torch.cuda.get_device_name(0), "find": args.find, "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            model = torch_model(name)
            for batch in args.batches:
                path = Path(tmp) / f"{name}-{batch}.onnx"
                export(model, batch, path)
                x = np.random.default_rng(batch).standard_normal((batch, 3, 224, 224)).astype(np.float32)
                row = {"model": name, "batch": batch}
                try:
                    timing = torch_times(model.cuda(), torch.from_numpy(x).cuda(), args.iters)
                    reference = timing.pop("reference")
                    ours = miopy_run(path, handle, {"input": x}, args.iters, args.find)
                    row.update(timing)
                    row.update({k: v for k, v in ours.items() if k != "output"})
                    row["max_error"] = hybrid_error(ours["output"], reference)
                    row["ratio_fp32"] = row["torch_fp32_ms"] / row["miopy_ms"]
                    row["ratio_tf32"] = row["torch_tf32_ms"] / row["miopy_ms"]
                    if batch in args.cold_batches:
                        row["cold"] = cold_start(path)
                except Exception as exc:   # one model's failure is a row, not the end of the run
                    row["error"] = f"{type(exc).__name__}: {exc}"
                model.cpu()
                print(_line(row), flush=True)
                result["rows"].append(row)
    return result


def run_quick(args) -> dict:
    import miopy
    handle = miopy.Handle()
    result = {"device": handle.info.name, "platform": handle.info.platform, "quick": True, "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "quick.onnx"
        quick_model(path)
        for batch in (1, 2):
            import onnx
            model = onnx.load(str(path))
            model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = batch
            fixed = Path(tmp) / f"quick-{batch}.onnx"
            onnx.save(model, str(fixed))
            x = np.random.default_rng(batch).standard_normal((batch, 3, 32, 32)).astype(np.float32)
            ours = miopy_run(fixed, handle, {"input": x}, args.iters, args.find)
            row = {"model": "quick", "batch": batch, **{k: v for k, v in ours.items() if k != "output"}}
            row["max_error"] = hybrid_error(ours["output"], onnxruntime_output(fixed, {"input": x}))
            if batch in args.cold_batches:
                row["cold"] = cold_start(fixed)
            print(_line(row), flush=True)
            result["rows"].append(row)
    return result


def onnxruntime_output(path: Path, feeds: dict) -> np.ndarray:
    from miopy.onnx.reference import onnxruntime_session
    return onnxruntime_session(path).run(None, feeds)[0]


def _line(row: dict) -> str:
    if "error" in row:
        return f"{row['model']:>14} N={row['batch']:<3} error: {row['error']}"
    text = (f"{row['model']:>14} N={row['batch']:<3} miopy {row['miopy_ms']:8.3f} ms "
            f"({row['batch'] / row['miopy_ms'] * 1e3:8.1f} img/s, device {row['miopy_device_ms']:.3f} ms, "
            f"{row['steps']} steps), max err {row['max_error']:.1e}")
    if "torch_fp32_ms" in row:
        text += (f" | torch fp32 {row['torch_fp32_ms']:.3f} ms ({row['ratio_fp32']:.2f}x), "
                 f"tf32 {row['torch_tf32_ms']:.3f} ms ({row['ratio_tf32']:.2f}x)")
    return text


# -- the report ----------------------------------------------------------------------------------------------------
def report(path: Path) -> None:
    """docs/networks.md and docs/networks.png from a results file."""
    data = json.loads(path.read_text())
    rows = [r for r in data["rows"] if "error" not in r]
    lines = ["# Whole networks on miopy (ONNX)", "",
             f"Generated by `python3 benchmarks/networks.py --report {_shown(path)}` "
             f"from a run of `benchmarks/networks.py` on {data['device']} ({data['platform']})"
             + (f", PyTorch {data['torch']} on {data['cuda_device']}" if "torch" in data else "") + ".",
             "", "Torchvision models with random weights (batch-norm statistics randomised), exported to ONNX "
             "(opset 17) and run through `miopy.onnx.InferenceSession`"
             + (" with find" if data.get("find") else "") + ". Throughput from wall-clock time over "
             "back-to-back passes; ratio = PyTorch time / miopy time (above 1: miopy is faster). PyTorch fp32: "
             "cuDNN with TF32 off; PyTorch default: cuDNN TF32 on. Max error: hybrid |a - e| / (1 + |e|) of "
             f"miopy's output against PyTorch fp32 (bound {TOLERANCE:g}).", "",
             "![throughput ratio](networks.png)", "",
             "| model | N | miopy ms | img/s | device ms | steps | PyTorch fp32 ms | ratio fp32 | target "
             "| PyTorch TF32 ms | ratio TF32 | max error | load s | peak MiB |", "|" + "---|" * 14]
    for r in rows:
        torch_cols = (f"{r['torch_fp32_ms']:.3f} | {r['ratio_fp32']:.2f} | {TARGETS.get(r['batch'], 0):.2f} | "
                      f"{r['torch_tf32_ms']:.3f} | {r['ratio_tf32']:.2f}") if "torch_fp32_ms" in r else " | | | |"
        mem = r["memory"]
        lines.append(f"| {r['model']} | {r['batch']} | {r['miopy_ms']:.3f} | {r['batch'] / r['miopy_ms'] * 1e3:.0f} | "
                     f"{r['miopy_device_ms']:.3f} | {r['steps']} | {torch_cols} | {r['max_error']:.1e} | "
                     f"{r['load_s']:.1f} | {(mem['activations'] + mem['weights'] + mem['workspaces']) / 2**20:.0f} |")
    for r in data["rows"]:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['batch']} | error: {r['error']} |" + " |" * 12)
    lines += ["", "## Cold first inference", "",
              "A new process with empty kernel caches, user DB and driver JIT cache: load the model (build every "
              "plan) and run it once.", "",
              "| model | N | no perf DB: first inference s | kernels compiled "
              "| shipped system perf DB: first inference s | kernels compiled |", "|---|---|---|---|---|---|"]
    for r in rows:
        cold = r.get("cold")
        if cold:
            cells = [f"{c.get('first_inference_s', float('nan')):.1f} | {c.get('cache', {}).get('compiled', '')}"
                     for c in (cold["no_perf_db"], cold["system_perf_db"])]
            lines.append(f"| {r['model']} | {r['batch']} | {cells[0]} | {cells[1]} |")
    lines += ["", "## Where the time goes (largest steps at the largest batch)", ""]
    largest = max((r["batch"] for r in rows), default=0)
    for r in (r for r in rows if r["batch"] == largest):
        lines += [f"**{r['model']}**, N={largest}: " + ", ".join(
            f"{t['layer']} ({t['ops']}, {t['solver']}) {t['ms']:.3f} ms" for t in r["top_layers"][:5]) + ".", ""]
    out = ROOT / "docs" / "networks.md"
    out.write_text("\n".join(lines) + "\n")
    _plot(rows, ROOT / "docs" / "networks.png")
    print(f"wrote {out}")


def _shown(path: Path) -> str:
    return str(path.resolve().relative_to(ROOT)) if path.resolve().is_relative_to(ROOT) else str(path)


def _plot(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    batches = sorted({r["batch"] for r in rows})
    fig, axes = plt.subplots(1, len(batches), figsize=(6 * len(batches), 3.6), squeeze=False)
    for ax, batch in zip(axes[0], batches):
        sel = [r for r in rows if r["batch"] == batch]
        names = [r["model"] for r in sel]
        pos = np.arange(len(sel))
        if all("ratio_fp32" in r for r in sel):
            ax.bar(pos - 0.2, [r["ratio_fp32"] for r in sel], 0.4, label="vs PyTorch fp32")
            ax.bar(pos + 0.2, [r["ratio_tf32"] for r in sel], 0.4, label="vs PyTorch TF32")
            ax.axhline(TARGETS.get(batch, 1.0), color="red", linestyle="--", linewidth=1, label="target")
            ax.set_ylabel("throughput ratio (miopy / PyTorch)")
        else:
            ax.bar(pos, [batch / r["miopy_ms"] * 1e3 for r in sel], 0.5)
            ax.set_ylabel("images / s")
        ax.set_xticks(pos, names, rotation=20)
        ax.set_title(f"N = {batch}")
        ax.legend(fontsize=8) if all("ratio_fp32" in r for r in sel) else None
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=lambda s: s.split(","), default=list(MODELS))
    ap.add_argument("--batches", type=lambda s: [int(b) for b in s.split(",")], default=list(BATCHES))
    ap.add_argument("--cold-batches", type=lambda s: [int(b) for b in s.split(",") if b], default=[1],
                    help="batches whose cold first inference is measured (empty: none)")
    ap.add_argument("--iters", type=int, default=20, help="passes per timing round")
    ap.add_argument("--no-find", dest="find", action="store_false", help="immediate mode instead of find")
    ap.add_argument("--quick", action="store_true", help="a small onnx.helper model on any device, no torch")
    ap.add_argument("--out", type=Path, help="results JSON")
    ap.add_argument("--report", type=Path, help="write docs/networks.md and .png from this results JSON")
    args = ap.parse_args(argv)
    if args.report:
        report(args.report)
        return 0
    result = run_quick(args) if args.quick else run_gpu(args)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    bad = [r for r in result["rows"] if "error" in r or r["max_error"] > TOLERANCE]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
