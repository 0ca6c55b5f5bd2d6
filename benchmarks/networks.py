"""Whole networks: torchvision CNNs (random weights) exported to ONNX and run through miopy.onnx, checked
against PyTorch fp32 and timed beside PyTorch fp32 (cuDNN, TF32 off) and PyTorch's default (TF32 on) in
the same run; cold first-inference time with empty caches, without and with the shipped system perf DB.

    python -m benchmarks.networks --out benchmarks/results/h100-networks.json        # the GPU machine
    python -m benchmarks.networks --out R.json --resume                              # go on where it stopped
    python -m benchmarks.networks --quick --out /tmp/quick.json                      # PoCL smoke run, no torch

The results page is docs/results/networks.md (and networks.png), written by `python -m benchmarks.report`.

Time guard: the run stops at --budget seconds (default 450) wherever it is (a SIGALRM timer), so it cannot
run past ~8 minutes (under a shell `timeout`, give --budget some 20 s less than it); a (model, batch) is
only started with --min-row seconds left, and the cold-start measurements (fresh processes, everything
compiled again) come last, in the time that is left. The JSON
is rewritten after every row (atomically), so a stopped run leaves everything measured so far; --resume
reads it back and does only what is missing (rows skipped, stopped or failed, then the cold starts).

Throughput is images per second from wall-clock time over back-to-back passes, with the device drained
before and after (both sides: miopy replays its captured pass, PyTorch calls the module under no_grad).
The device-time column is miopy's first-kernel-start to last-kernel-end of one pass. --quick needs no
torch: small models built with onnx.helper (ResNet basic blocks, an Inception-style concat with LRN, a
depthwise block) are checked against onnxruntime instead.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import harness

ROOT = harness.ROOT

MODELS = ("resnet18", "resnet50", "vgg16", "alexnet", "googlenet", "mobilenet_v2")
QUICK_MODELS = ("quick_resnet", "quick_inception")
BATCHES = (1, 32)
QUICK_BATCHES = (1, 2)
TOLERANCE = 1e-3          # max hybrid |a - e| / (1 + |e|) against PyTorch fp32
TARGETS = {1: 0.67, 32: 0.9}   # miopy / PyTorch fp32 throughput the issue asks for, per batch
T0 = time.perf_counter()


def say(text: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f} s] {text}", flush=True)


class BudgetExceeded(BaseException):
    """The run's time budget is spent (raised by the SIGALRM timer wherever the run is)."""


class Budget:
    """Seconds left of the run's budget, counted from the script's start; arm() sets the hard stop."""

    def __init__(self, seconds: float):
        self.end = T0 + seconds
        self.seconds = seconds

    def left(self) -> float:
        return self.end - time.perf_counter()

    def arm(self) -> None:
        def stop(signum, frame):
            raise BudgetExceeded(f"time budget of {self.seconds:.0f} s reached")
        signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, max(self.left(), 0.01))

    @staticmethod
    def disarm() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)


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
    """ONNX through the TorchScript exporter (opset 17) where this torch has it, else the default one (a
    torch without the dynamo switch, or one whose TorchScript exporter fails)."""
    import torch
    x = torch.randn(batch, 3, 224, 224)
    kwargs = dict(input_names=["input"], output_names=["output"], opset_version=17)
    try:
        torch.onnx.export(model, (x,), str(path), dynamo=False, **kwargs)
    except Exception as exc:
        say(f"  the TorchScript exporter failed ({type(exc).__name__}: {exc}); the default exporter instead")
        torch.onnx.export(model, (x,), str(path), **kwargs)


def quick_model(name: str, batch: int, path: Path, seed: int = 0) -> None:
    """A small model built with onnx.helper, the PoCL stand-in for the torchvision ones: quick_resnet (a
    stem, two basic blocks and a projection block: residual adds fused into convolutions) or
    quick_inception (a stem with LRN, an Inception-style concat, a depthwise-separable block with ReLU6,
    dropout, a classifier and a softmax)."""
    import onnx
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
    if name == "quick_resnet":
        for _ in range(2):                                                    # basic blocks
            x = node("Relu", [node("Add", [conv_bn(conv_bn(x, 16, 16), 16, 16, relu=False), x])])
        main = conv_bn(conv_bn(x, 16, 32, stride=2), 32, 32, relu=False)      # projection block
        x = node("Relu", [node("Add", [main, conv_bn(x, 16, 32, r=1, stride=2, relu=False)])])
    elif name == "quick_inception":
        x = node("LRN", [x], size=5, alpha=1e-4, beta=0.75, bias=1.0)
        branches = [conv_bn(x, 16, 8, r=1), conv_bn(conv_bn(x, 16, 8, r=1), 8, 8, r=3),
                    conv_bn(node("MaxPool", [x], kernel_shape=[3, 3], pads=[1] * 4, strides=[1, 1]), 16, 16, r=1)]
        x = node("Concat", branches, axis=1)                                  # 32 channels
        relu6 = [const(0.0), const(6.0)]
        x = node("Clip", [conv_bn(x, 32, 32, group=32, relu=False), *relu6])  # depthwise
        x = node("Clip", [conv_bn(x, 32, 32, r=1, relu=False), *relu6])      # pointwise
        x = node("Dropout", [x])
    else:
        raise ValueError(f"unknown quick model {name!r}")
    channels = 32
    x = node("Flatten", [node("GlobalAveragePool", [x])])
    y = node("Gemm", [x, const(rng.standard_normal((10, channels)) / 6), const(rng.standard_normal(10))], transB=1)
    y = node("Softmax", [y], axis=1)
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                                          [batch, 3, 32, 32])],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


# -- timing ------------------------------------------------------------------------------------------------------
def pass_ms(run, sync, iters: int) -> float:
    """Wall-clock ms per pass: the median over 3 rounds of iters back-to-back passes, drained around each round."""
    return harness.wall_ms(run, sync, rounds=3, per_round=iters)


def torch_times(model, x, iters: int) -> dict:
    """PyTorch's ms per pass, strict fp32 (cuDNN and matmul TF32 off) and default (cuDNN TF32 on, matmul
    as PyTorch leaves it), and the fp32 output (the reference)."""
    import torch
    saved = (torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.benchmark = True
    out = {}
    try:
        for label, tf32 in (("fp32", False), ("tf32", True)):
            torch.backends.cudnn.allow_tf32 = tf32
            torch.backends.cuda.matmul.allow_tf32 = saved[2] if tf32 else False
            with torch.no_grad():
                y = model(x)
                out[f"torch_{label}_ms"] = pass_ms(lambda: model(x), torch.cuda.synchronize, iters)
            if label == "fp32":
                out["reference"] = y.float().cpu().numpy()
    finally:
        (torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32,
         torch.backends.cuda.matmul.allow_tf32) = saved
    return out


def miopy_run(path: Path, handle, feeds: dict, iters: int, find: bool) -> dict:
    from miopy.onnx import InferenceSession
    start = time.perf_counter()
    compiled = handle.cache_stats().get("compiled", 0)
    session = InferenceSession(path, handle, find=find)
    load_s = time.perf_counter() - start
    say(f"  miopy loaded in {load_s:.1f} s ({len(session.steps)} steps, "
        f"{handle.cache_stats().get('compiled', 0) - compiled} kernels compiled); timing")
    (y,) = session.run(None, feeds)
    ms = pass_ms(session.sequence.replay, handle.finish, iters)
    layer_ms, device_ms = session.profile(iters=max(iters // 2, 3))
    layers = sorted(zip(layer_ms, session.layers()), key=lambda t: -t[0])
    return {"output": y, "miopy_ms": ms, "miopy_device_ms": device_ms, "load_s": load_s, "steps": len(session.steps),
            "residual_fused": sum("residual" in step.node.fused for step in session.steps),
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


def cold_start(path: Path, budget: Budget) -> dict:
    """First inference in fresh processes with empty kernel caches, user DB and driver JIT cache: without
    any perf DB, then with the shipped system perf DB (each process killed at the budget's end)."""
    out = {}
    for label, system_db in (("no_perf_db", "/nonexistent/miopy-system.db"), ("system_perf_db", None)):
        if budget.left() < 5:
            out[label] = {"error": "skipped: time budget"}
            continue
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, MIOPY_CACHE_DIR=f"{tmp}/cache", MIOPY_USER_DB_PATH=f"{tmp}/user.db",
                       CUDA_CACHE_PATH=f"{tmp}/nv", CUDA_CACHE_DISABLE="1", POCL_KERNEL_CACHE="0",
                       PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}")
            env.pop("MIOPY_SYSTEM_DB_PATH", None)
            if system_db:
                env["MIOPY_SYSTEM_DB_PATH"] = system_db
            try:
                done = subprocess.run([sys.executable, "-c", COLD_CHILD, str(path)], env=env, capture_output=True,
                                      text=True, cwd=ROOT, timeout=max(budget.left() - 2, 1))
            except subprocess.TimeoutExpired as exc:
                done = None
                out[label] = {"error": f"stopped at the time budget after {exc.timeout:.0f} s"}
            if done is not None:
                out[label] = (json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0
                              else {"error": " ".join(done.stderr.strip().splitlines()[-1:])})
        say(f"  cold {label}: {_cold_text(out[label])}")
    return out


def _cold_text(cold: dict) -> str:
    if "error" in cold:
        return cold["error"]
    return f"first inference {cold['first_inference_s']:.1f} s, {cold['cache'].get('compiled', '?')} kernels compiled"


# -- the models of a run: torchvision through PyTorch on the GPU, or onnx.helper ones checked by onnxruntime -------
class TorchModels:
    """torchvision models exported to ONNX, the reference and timings from PyTorch on CUDA."""

    def __init__(self):
        import torch
        self.torch = torch
        self.name, self.model = None, None

    def info(self) -> dict:
        return {"torch": self.torch.__version__, "cuda_device": self.torch.cuda.get_device_name(0)}

    def _model(self, name: str):
        if self.name != name:
            self.name, self.model = None, None   # let the previous one go first
            self.name, self.model = name, torch_model(name)
        return self.model

    def write(self, name: str, batch: int, path: Path) -> None:
        export(self._model(name).cpu(), batch, path)

    def prepare(self, name: str, batch: int, tmp: Path, iters: int) -> tuple[Path, dict, np.ndarray, dict]:
        """(ONNX path, feeds, reference output, PyTorch timings) of name at batch."""
        path = tmp / f"{name}-{batch}.onnx"
        say(f"{name} N={batch}: exporting to ONNX")
        self.write(name, batch, path)
        x = np.random.default_rng(batch).standard_normal((batch, 3, 224, 224)).astype(np.float32)
        say(f"{name} N={batch}: timing PyTorch")
        timing = torch_times(self._model(name).cuda(), self.torch.from_numpy(x).cuda(), iters)
        self.torch.cuda.empty_cache()   # PyTorch's cached blocks back to the driver, for miopy's buffers
        return path, {"input": x}, timing.pop("reference"), timing


class QuickModels:
    """onnx.helper models (quick_model), the reference from onnxruntime, no PyTorch."""

    def info(self) -> dict:
        return {"quick": True}

    def write(self, name: str, batch: int, path: Path) -> None:
        quick_model(name, batch, path)

    def prepare(self, name: str, batch: int, tmp: Path, iters: int) -> tuple[Path, dict, np.ndarray, dict]:
        from miopy.onnx.reference import onnxruntime_session
        path = tmp / f"{name}-{batch}.onnx"
        say(f"{name} N={batch}: building with onnx.helper")
        self.write(name, batch, path)
        x = np.random.default_rng(batch).standard_normal((batch, 3, 32, 32)).astype(np.float32)
        reference = onnxruntime_session(path).run(None, {"input": x})[0]
        return path, {"input": x}, reference, {}


# -- the run ---------------------------------------------------------------------------------------------------------
def start_result(args, handle, models) -> dict:
    if args.resume and args.out and args.out.exists():
        result = json.loads(args.out.read_text())
        result.pop("stopped", None)
        say(f"resuming {args.out}: {sum(1 for r in result['rows'] if _done(r))} rows done")
        return result
    return harness.new_record(handle, find=args.find, iters=args.iters, **models.info(), rows=[])


def _done(row: dict) -> bool:
    return "miopy_ms" in row and "error" not in row


def measure(models, handle, name: str, batch: int, tmp: Path, args) -> dict:
    row: dict = {"model": name, "batch": batch}
    path, feeds, reference, timing = models.prepare(name, batch, tmp, args.iters)
    row.update(timing)
    say(f"{name} N={batch}: loading into miopy ({'find' if args.find else 'immediate mode'})")
    ours = miopy_run(path, handle, feeds, args.iters, args.find)
    row.update({k: v for k, v in ours.items() if k != "output"})
    row["max_error"] = harness.max_error(ours["output"], reference)
    if "torch_fp32_ms" in row:
        row["ratio_fp32"] = row["torch_fp32_ms"] / row["miopy_ms"]
        row["ratio_tf32"] = row["torch_tf32_ms"] / row["miopy_ms"]
    return row


def run(args) -> dict:
    import miopy
    budget = Budget(args.budget)
    budget.arm()
    models = QuickModels() if args.quick else TorchModels()
    handle = miopy.Handle()
    result = start_result(args, handle, models)
    rows = {(r["model"], r["batch"]): r for r in result["rows"]}
    say(f"{handle.info.name}: models {','.join(args.models)}, N {','.join(map(str, args.batches))}, "
        f"budget {args.budget:.0f} s")
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        try:
            for name in args.models:
                for batch in args.batches:
                    if _done(rows.get((name, batch), {})):
                        continue
                    if budget.left() < args.min_row:
                        rows[(name, batch)] = {"model": name, "batch": batch,
                                               "error": f"skipped: {budget.left():.0f} s of the budget left"}
                        say(f"{name} N={batch}: skipped (time budget)")
                    else:
                        try:
                            rows[(name, batch)] = _row(models, handle, name, batch, tmp, args)
                        except BudgetExceeded as exc:
                            rows[(name, batch)] = {"model": name, "batch": batch, "error": f"stopped: {exc}"}
                            raise
                    result["rows"] = list(rows.values())
                    harness.write_json(args.out, result)
            _cold_phase(models, rows, tmp, args, budget, result)
        except BudgetExceeded as exc:
            say(f"stopped: {exc}")
            result["stopped"] = str(exc)
        finally:
            budget.disarm()
            for name in args.models:
                for batch in args.batches:
                    rows.setdefault((name, batch), {"model": name, "batch": batch,
                                                    "error": "not started: time budget"})
            result["rows"] = list(rows.values())
            result["elapsed_s"] = time.perf_counter() - T0
            harness.write_json(args.out, result)
    return result


def _row(models, handle, name: str, batch: int, tmp: Path, args) -> dict:
    try:
        row = measure(models, handle, name, batch, tmp, args)
    except Exception as exc:   # one model's failure is a row, not the end of the run
        row = {"model": name, "batch": batch, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        gc.collect()           # the session's device buffers go before the next model's
    say(_line(row))
    return row


def _cold_phase(models, rows: dict, tmp: Path, args, budget: Budget, result: dict) -> None:
    """Cold first inference of every finished row at the cold batches, in the time left."""
    for (name, batch), row in rows.items():
        if batch not in args.cold_batches or not _done(row) or _cold_done(row):
            continue
        if budget.left() < 10:
            say(f"{name} N={batch}: cold start skipped (time budget)")
            continue
        path = tmp / f"{name}-{batch}.onnx"
        if not path.exists():   # a resumed run: export or build it again
            models.write(name, batch, path)
        say(f"{name} N={batch}: cold first inference in fresh processes")
        row["cold"] = cold_start(path, budget)
        harness.write_json(args.out, result)


def _cold_done(row: dict) -> bool:
    return "cold" in row and all("error" not in c for c in row["cold"].values())


def _line(row: dict) -> str:
    if "error" in row:
        return f"{row['model']} N={row['batch']}: {row['error']}"
    text = (f"{row['model']} N={row['batch']}: miopy {row['miopy_ms']:.3f} ms "
            f"({row['batch'] / row['miopy_ms'] * 1e3:.1f} img/s, device {row['miopy_device_ms']:.3f} ms, "
            f"{row['steps']} steps, load {row['load_s']:.1f} s), max err {row['max_error']:.1e}")
    if "torch_fp32_ms" in row:
        text += (f" | torch fp32 {row['torch_fp32_ms']:.3f} ms ({row['ratio_fp32']:.2f}x), "
                 f"tf32 {row['torch_tf32_ms']:.3f} ms ({row['ratio_tf32']:.2f}x)")
    return text


# -- the report ----------------------------------------------------------------------------------------------------
def page(sources: list[harness.Source], out: Path) -> list[str]:
    """docs/results/networks.md (and networks.png where matplotlib is installed) from one run's results."""
    (source,) = sources
    data = source.data
    rows = [r for r in data["rows"] if "error" not in r]
    _plot(rows, out / "networks.png")
    lines = harness.page_head("Whole networks on miopy (ONNX)", sources, *_intro(data, source.meta))
    if data.get("note"):
        lines += [f"Provenance: {data['note']}", ""]
    lines += ["![throughput ratio](networks.png)", ""]
    return lines + _main_table(data, rows) + _cold_table(rows) + _top_layers(rows)


def _intro(data: dict, meta: dict) -> list[str]:
    what = ("Small onnx.helper models (`--quick`), checked against onnxruntime" if data.get("quick") else
            "Torchvision models with random weights (batch-norm statistics randomised), exported to ONNX (opset 17)")
    where = f"On {meta.get('device')} ({meta.get('platform', data.get('platform', '-'))})" + (
        f", PyTorch {data['torch']} on {data['cuda_device']}" if "torch" in data else "") + (
        f"; the run stopped early ({data['stopped']})" if "stopped" in data else "") + "."
    text = (f"{what}, run through `miopy.onnx.InferenceSession`" + (" with find" if data.get("find") else
                                                                    " in immediate mode") +
            ". Throughput from wall-clock time over back-to-back passes; ratio = PyTorch time / miopy time (above "
            "1: miopy is faster). PyTorch fp32: cuDNN with TF32 off; PyTorch default: cuDNN TF32 on. Max error: "
            f"hybrid |a - e| / (1 + |e|) of miopy's output against the reference (bound {TOLERANCE:g}). Targets "
            f"(miopy / PyTorch fp32 throughput): {', '.join(f'N={n}: {t:g}x' for n, t in TARGETS.items())}.")
    return [where, text]


def _main_table(data: dict, rows: list[dict]) -> list[str]:
    lines = ["| model | N | miopy ms | img/s | device ms | steps | residual adds fused | PyTorch fp32 ms | ratio fp32 "
             "| target met | PyTorch TF32 ms | ratio TF32 | max error | load s | peak MiB |", "|" + "---|" * 15]
    for r in rows:
        target = TARGETS.get(r["batch"])
        met = "" if target is None or "ratio_fp32" not in r else ("yes" if r["ratio_fp32"] >= target else "**no**")
        torch_cols = (f"{r['torch_fp32_ms']:.3f} | {r['ratio_fp32']:.2f} | {met} | {r['torch_tf32_ms']:.3f} | "
                      f"{r['ratio_tf32']:.2f}") if "torch_fp32_ms" in r else " | | | |"
        mem = r["memory"]
        lines.append(f"| {r['model']} | {r['batch']} | {r['miopy_ms']:.3f} | {r['batch'] / r['miopy_ms'] * 1e3:.0f} | "
                     f"{r['miopy_device_ms']:.3f} | {r['steps']} | {r.get('residual_fused', '')} | {torch_cols} | "
                     f"{r['max_error']:.1e} | {r['load_s']:.1f} | "
                     f"{(mem['activations'] + mem['weights'] + mem['workspaces']) / 2**20:.0f} |")
    for r in data["rows"]:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['batch']} | {r['error']} |" + " |" * 12)
    return lines


def _cold_table(rows: list[dict]) -> list[str]:
    lines = ["", "## Cold first inference", "",
             "A new process with empty kernel caches, user DB and driver JIT cache: load the model (build every "
             "plan, immediate mode) and run it once.", "",
             "| model | N | no perf DB: first inference s | kernels compiled "
             "| shipped system perf DB: first inference s | kernels compiled |", "|---|---|---|---|---|---|"]
    for r in rows:
        cold = r.get("cold")
        if cold:
            cells = [_cold_cells(cold.get(label, {"error": "not run"})) for label in ("no_perf_db", "system_perf_db")]
            lines.append(f"| {r['model']} | {r['batch']} | {cells[0]} | {cells[1]} |")
    return lines


def _cold_cells(cold: dict) -> str:
    if "error" in cold:
        return f"{cold['error']} | "
    return f"{cold['first_inference_s']:.1f} | {cold['cache'].get('compiled', '')}"


def _top_layers(rows: list[dict]) -> list[str]:
    lines = ["", "## Where the time goes (largest steps at the largest batch)", ""]
    largest = max((r["batch"] for r in rows), default=0)
    for r in (r for r in rows if r["batch"] == largest):
        lines += [f"**{r['model']}**, N={largest}: " + ", ".join(
            f"{t['layer']} ({t['ops']}, {t['solver']}) {t['ms']:.3f} ms" for t in r["top_layers"][:5]) + ".", ""]
    return lines


def _plot(rows: list[dict], path: Path) -> None:
    """The throughput ratios per batch as bars (images / s without PyTorch); nothing without matplotlib."""
    plt = harness.pyplot()
    batches = sorted({r["batch"] for r in rows})
    if plt is None or not batches:
        return
    fig, axes = plt.subplots(1, len(batches), figsize=(6 * len(batches), 3.6), squeeze=False)
    for ax, batch in zip(axes[0], batches):
        sel = [r for r in rows if r["batch"] == batch]
        pos = np.arange(len(sel))
        if all("ratio_fp32" in r for r in sel):
            ax.bar(pos - 0.2, [r["ratio_fp32"] for r in sel], 0.4, label="vs PyTorch fp32")
            ax.bar(pos + 0.2, [r["ratio_tf32"] for r in sel], 0.4, label="vs PyTorch TF32")
            ax.axhline(TARGETS.get(batch, 1.0), color="red", linestyle="--", linewidth=1, label="target")
            ax.set_ylabel("throughput ratio (miopy / PyTorch)")
            ax.legend(fontsize=8)
        else:
            ax.bar(pos, [batch / r["miopy_ms"] * 1e3 for r in sel], 0.5)
            ax.set_ylabel("images / s")
        ax.set_xticks(pos, [r["model"] for r in sel], rotation=20)
        ax.set_title(f"N = {batch}")
    harness.save_figure(fig, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=lambda s: s.split(","), default=None,
                    help=f"comma-separated (default {','.join(MODELS)}; with --quick {','.join(QUICK_MODELS)})")
    ap.add_argument("--batches", type=lambda s: [int(b) for b in s.split(",")], default=None,
                    help=f"comma-separated (default {','.join(map(str, BATCHES))}; with --quick "
                         f"{','.join(map(str, QUICK_BATCHES))})")
    ap.add_argument("--cold-batches", type=lambda s: [int(b) for b in s.split(",") if b], default=[1],
                    help="batches whose cold first inference is measured, after every other row (empty: none)")
    ap.add_argument("--iters", type=int, default=20, help="passes per timing round")
    ap.add_argument("--no-find", dest="find", action="store_false", help="immediate mode instead of find")
    ap.add_argument("--budget", type=float, default=450.0, help="seconds; the run stops there wherever it is")
    ap.add_argument("--min-row", type=float, default=30.0, help="seconds left needed to start a (model, batch)")
    ap.add_argument("--quick", action="store_true", help="small onnx.helper models on any device, no torch")
    ap.add_argument("--out", type=Path, help="results JSON, rewritten after every row")
    ap.add_argument("--resume", action="store_true", help="read --out and do only what it lacks")
    args = ap.parse_args(argv)
    args.models = args.models or list(QUICK_MODELS if args.quick else MODELS)
    args.batches = args.batches or list(QUICK_BATCHES if args.quick else BATCHES)
    result = run(args)
    say("summary:")
    for row in result["rows"]:
        print("  " + _line(row), flush=True)
    skipped = [r for r in result["rows"] if str(r.get("error", "")).startswith("skipped")]
    measured = [r for r in result["rows"] if r not in skipped]
    bad = [r for r in measured if "error" in r or r["max_error"] > TOLERANCE]
    say(f"done: {len(measured) - len(bad)} rows measured within tolerance, {len(bad)} beyond it or failed, "
        f"{len(skipped)} not measured (time budget)" + (f"; results in {args.out}" if args.out else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
