"""miopy on a CPU OpenCL device (PoCL) against PyTorch's CPU convolutions, in one process.

For each layer, batch size and direction: miopy's normal find (every applicable solver, default params;
whether the naive fallback won), the find winner's time ("default"), the time after tuning the CPU
solvers with a small budget ("tuned": the faster of the find winner and the tuned points), and PyTorch's
time (torch.nn.functional.conv2d / aten.convolution_backward on the same threads). The three are timed
in interleaved rounds (wall clock around the call and a queue finish; medians), because the machine is
shared. GFLOP/s are against a peak measured in the same run: PyTorch's large sgemm.

    python -m benchmarks.cpu --json benchmarks/results/pocl-cpu-vs-torch.json [--batches 1,8] [--directions F,B,W]

Run it in a venv with torch (CPU) installed; tuning writes to a private user DB (a temporary directory),
so the user's perf DB is untouched and "default" really means untuned. The results page is docs/results/cpu.md
(`python -m benchmarks.report`).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyopencl as cl

import miopy
from benchmarks import harness
from benchmarks.torch_conv import LETTERS, device_buffers
from benchmarks.torch_conv import torch_call as torch_conv_call
from miopy.conv import reference, registry
from miopy.conv.problem import OUTPUT_ROLE, ConvDesc, ConvProblem, Direction
from miopy.find import find_problem
from miopy.plan import solution_plan
from miopy.tensor import TensorDesc
from miopy.tuning.runner import TuneOptions
from miopy.tuning.tuner import tune_solver

CPU_SOLVERS = ("ConvCpuDirect", "ConvCpuGemm")

# (name, C, H, K, R, pad, stride, groups): the seven layers first, then ResNet-50, VGG-16, MobileNet.
LAYERS = [
    ("issue-3x3-64@56", 64, 56, 64, 3, 1, 1, 1),
    ("issue-3x3-128@28", 128, 28, 128, 3, 1, 1, 1),
    ("issue-3x3-256@14", 256, 14, 256, 3, 1, 1, 1),
    ("issue-1x1-64-256@56", 64, 56, 256, 1, 0, 1, 1),
    ("issue-1x1-256-64@56", 256, 56, 64, 1, 0, 1, 1),
    ("issue-7x7s2-3-64@224", 3, 224, 64, 7, 3, 2, 1),
    ("issue-3x3s2-128@56", 128, 56, 128, 3, 1, 2, 1),
    ("resnet50-1x1-1024-256@14", 1024, 14, 256, 1, 0, 1, 1),
    ("resnet50-1x1s2-256-512@56", 256, 56, 512, 1, 0, 2, 1),
    ("resnet50-3x3-512@7", 512, 7, 512, 3, 1, 1, 1),
    ("vgg16-3x3-512@14", 512, 14, 512, 3, 1, 1, 1),
    ("mobilenet-dw3x3-32@112", 32, 112, 32, 3, 1, 1, 32),
    ("mobilenet-1x1-32-64@112", 32, 112, 64, 1, 0, 1, 1),
]


def make_problem(layer, n: int, direction: Direction) -> ConvProblem:
    _, c, h, k, r, pad, stride, groups = layer
    x, w = TensorDesc("FP32", (n, c, h, h)), TensorDesc("FP32", (k, c // groups, r, r))
    return ConvProblem.create(direction, x, w, ConvDesc(pad, stride, 1, groups))


def torch_call(problem: ConvProblem, t: dict):
    """A no-argument callable computing problem's direction with PyTorch on the host arrays t."""
    import torch
    return torch_conv_call(problem, *(torch.from_numpy(t[r]) for r in "xwy"))


class MiopyCall:
    """A solution bound to device buffers: call() runs it and waits (wall-clock timing like PyTorch's)."""

    def __init__(self, handle, problem: ConvProblem, solver_id: str, params: dict, bufs: dict):
        self.handle, self.solver_id, self.params = handle, solver_id, params
        self.plan = solution_plan(handle, problem, solver_id, params)
        self.bufs = {**bufs, "workspace": handle.alloc(max(self.plan.solution.workspace_bytes, 4))}

    def __call__(self) -> None:
        self.plan.enqueue(self.bufs)
        self.handle.finish()


def quick_timer(handle, plan, buffers) -> float:
    """find's timer with fewer runs (median of 3 after 1 warm-up): the slow GPU-shaped solvers dominate
    the benchmark's time otherwise, and a ranking by 10x or more needs no more."""
    return harness.device_ms(handle, lambda: plan.enqueue(buffers), warmup=1, iters=3)


def run_case(handle, layer, n: int, direction: Direction, args, peak: float) -> dict:
    problem = make_problem(layer, n, direction)
    rng = np.random.default_rng(0)
    t = {r: rng.standard_normal(d.dims, dtype=np.float32) for r, d in problem.tensors().items()}
    bufs = device_buffers(handle, t)
    rec: dict = {"layer": layer[0], "n": n, "direction": direction.letter, "channels": min(layer[1], layer[3]),
                 "flops": problem.flops(), "key": problem.key()}
    t0 = time.perf_counter()
    rec["find_mode"] = "normal" if n in args.find_batches else "fast"
    found = find_problem(handle, problem, mode=rec["find_mode"], store=False, timer=quick_timer)
    rec["find_s"] = time.perf_counter() - t0
    rec["find"] = {r.solver_id: r.time_ms for r in found}
    best = found[0]
    rec["find_winner"] = best.solver_id
    rec["naive_won"] = best.solver_id == "ConvDirectNaive"
    calls = {"default": MiopyCall(handle, problem, best.solver_id, best.params, bufs)}
    rec["default_params"] = best.params
    tuned = _tune(handle, problem, args.budget) if args.budget else None
    if tuned is not None:
        calls["tuned"] = MiopyCall(handle, problem, tuned[0], tuned[1], bufs)
        rec["tuned_solver"], rec["tuned_params"] = tuned
    calls["torch"] = torch_call(problem, t)
    ms, cpu_ms = harness.interleaved_ms(calls, args.rounds, args.iters)
    rec.update({f"{name}_cpu_ms": v for name, v in cpu_ms.items()})
    if "tuned" in ms and ms["tuned"] > ms["default"]:   # tuning keeps the find winner when it finds nothing faster
        ms["tuned"], rec["tuned_solver"], rec["tuned_params"] = ms["default"], best.solver_id, best.params
        rec["tuned_cpu_ms"] = rec["default_cpu_ms"]
    ms.setdefault("tuned", ms["default"])
    rec.setdefault("tuned_cpu_ms", rec["default_cpu_ms"])
    rec.update({f"{name}_ms": v for name, v in ms.items()})
    for name in ("default", "tuned", "torch"):
        rec[f"{name}_gflops"] = problem.flops() / ms[name] / 1e6
        rec[f"{name}_pct_peak"] = 100 * rec[f"{name}_gflops"] / peak
    rec["ratio_default"], rec["ratio_tuned"] = ms["default"] / ms["torch"], ms["tuned"] / ms["torch"]
    rec["cpu_ratio_default"] = rec["default_cpu_ms"] / rec["torch_cpu_ms"]
    rec["cpu_ratio_tuned"] = rec["tuned_cpu_ms"] / rec["torch_cpu_ms"]
    rec["max_err"] = _error(handle, problem, calls["tuned" if "tuned" in calls else "default"], bufs, t)
    return rec


def _tune(handle, problem: ConvProblem, budget: int):
    """The fastest verified point of the CPU solvers after tuning each with budget points, or None."""
    results = []
    for sid in CPU_SOLVERS:
        try:
            solver = registry.get(sid)
        except miopy.MiopyError:
            continue
        if not solver.is_applicable(problem, handle.info):
            continue
        res = tune_solver(handle, problem, solver, strategy_name="random", options=TuneOptions(budget=budget))
        if res.best_params is not None:
            results.append((res.best_ms, sid, res.best_params))
    return min(results, key=lambda r: r[0])[1:] if results else None


def _error(handle, problem: ConvProblem, call: MiopyCall, bufs: dict, t: dict) -> float:
    role = OUTPUT_ROLE[problem.direction]
    call()
    out = np.empty_like(t[role])
    cl.enqueue_copy(handle.queue, out, bufs[role])
    handle.finish()
    return harness.max_error(out, reference.solve(problem, t))


def summary(cases: list[dict]) -> dict:
    out = {}
    for group, letters in (("forward", "F"), ("backward", "BW")):
        sel = [c for c in cases if c["direction"] in letters and "torch_ms" in c]
        out[group] = {"cases": len(sel), **{f"geomean_{kind}_{which}": harness.geomean(c[f"{kind}_{which}"]
                                                                                       for c in sel)
                                            for kind in ("ratio", "cpu_ratio") for which in ("default", "tuned")}}
    wide = [c for c in cases if c["channels"] >= 16 and c.get("find_mode") == "normal"]
    out["naive_won_at_16_channels_or_more"] = [f"{c['layer']} N={c['n']} {c['direction']}" for c in wide
                                              if c.get("naive_won")]
    return out


def _print(rec: dict) -> None:
    print(f"{rec['layer']:28s} N={rec['n']} {rec['direction']} find {rec['find_winner']:16s} "
          f"default {rec['default_ms']:8.2f} tuned {rec['tuned_ms']:8.2f} torch {rec['torch_ms']:8.2f} ms  "
          f"x{rec['ratio_default']:.2f} / x{rec['ratio_tuned']:.2f}  {rec['tuned_gflops']:.0f} GF/s  "
          f"err {rec['max_err']:.1e}  cpu-time x{rec['cpu_ratio_default']:.2f} / x{rec['cpu_ratio_tuned']:.2f}  "
          f"load {rec['load']:.1f}", flush=True)


# -- the results page (docs/results/cpu.md) ---------------------------------------------------------------------------
def page(sources: list[harness.Source], out: Path) -> list[str]:
    """docs/results/cpu.md: each run's geometric means and per-case table; then cache_start's results."""
    from benchmarks import cache_start
    lines = harness.page_head(
        "CPU solvers on PoCL against PyTorch's CPU convolutions", sources,
        "`benchmarks.cpu`: miopy and PyTorch's CPU convolutions (oneDNN) timed in one process, in interleaved rounds "
        "(wall clock around the call and a queue finish, medians), the process CPU time per call beside the wall "
        "time. \"default\": find's winner (normal find at N=1, the immediate-mode pick otherwise) with default "
        "params; \"tuned\": the faster of that and the best of a few random grid points of each CPU solver. "
        "Ratios: miopy / PyTorch time (lower is better). The CI machine's 2 cores are shared, so wall times are "
        "noisy: the load average is recorded per case.")
    for s in sources:
        if "cases" in s.data:
            lines += run_section(s)
        else:
            lines += cache_start.section(s)
    return lines


def run_section(source: harness.Source) -> list[str]:
    data, cases = source.data, source.data["cases"]
    lines = [f"## {source.name}", "", f"{source.meta.get('device')}, PyTorch {data.get('torch')} "
             f"({data.get('torch_threads')} threads), tuning budget {data.get('budget')} points per solver, PyTorch "
             f"sgemm {data.get('peak_gflops_torch_sgemm', float('nan')):.0f} GFLOP/s at the start (a measure of the "
             "machine's load, not a peak).", "", "Geometric means of miopy / PyTorch time:", ""]
    groups = [("forward", lambda c: c["direction"] == "F"), ("backward-data and backward-weights",
                                                              lambda c: c["direction"] in "BW")]
    for n in sorted({c["n"] for c in cases}):
        groups += [(f"N={n} forward", lambda c, n=n: c["n"] == n and c["direction"] == "F"),
                   (f"N={n} backward", lambda c, n=n: c["n"] == n and c["direction"] in "BW")]
    table = []
    for label, keep in groups:
        sel = [c for c in cases if keep(c) and "torch_ms" in c]
        if sel:
            table.append([label, len(sel)] + [f"{harness.geomean(c[k] for c in sel):.2f}" for k in
                                              ("ratio_default", "ratio_tuned", "cpu_ratio_default", "cpu_ratio_tuned")])
    lines += harness.md_table(["", "cases", "default (wall)", "tuned (wall)", "default (CPU time)",
                               "tuned (CPU time)"], table)
    lines += ["", *harness.md_table(
        ["layer", "N", "dir", "find chose", "default ms", "tuned ms (solver)", "PyTorch ms", "default / PyTorch",
         "tuned / PyTorch", "tuned GFLOP/s", "CPU-time ratio tuned", "load"],
        [[c["layer"], c["n"], c["direction"], c["find_winner"], f"{c['default_ms']:.2f}",
          f"{c['tuned_ms']:.2f} ({c.get('tuned_solver', c['find_winner'])})", f"{c['torch_ms']:.2f}",
          f"{c['ratio_default']:.2f}", f"{c['ratio_tuned']:.2f}", f"{c['tuned_gflops']:.0f}",
          f"{c['cpu_ratio_tuned']:.2f}", harness.fmt(c.get("load"), ".1f")] for c in cases])]
    naive = summary(cases)["naive_won_at_16_channels_or_more"]
    return lines + ["", "The naive solver won normal find on " + (", ".join(naive) if naive else "none") +
                    " of the layers with 16 channels or more.", ""]


def setup_environment() -> None:
    """A private user DB (tuning must not touch the user's, and "default" must mean untuned), and PyTorch's
    OpenMP threads passive: otherwise they spin after each call and slow the PoCL threads timed next (and the
    reverse; 2-20x distortions on the shared 2-core machine). Before torch is imported."""
    os.environ.setdefault("MIOPY_USER_DB_PATH", os.path.join(tempfile.mkdtemp(prefix="miopy-cpu-bench-"), "user.db"))
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--directions", default="F,B,W")
    ap.add_argument("--layers", default="", help="comma-separated substrings of layer names (default: all)")
    ap.add_argument("--budget", type=int, default=6, help="tuning points per CPU solver (0: no tuning)")
    ap.add_argument("--find-batches", default="1",
                    help="batch sizes that run normal find over every solver (the others: the heuristic's pick)")
    ap.add_argument("--batch-layers", default="8:issue", help="per batch size, layer-name substrings (b:s1+s2,...)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=3)
    args = ap.parse_args(argv)
    args.find_batches = {int(b) for b in args.find_batches.split(",") if b}
    subsets = dict(item.split(":") for item in args.batch_layers.split(",") if item)
    setup_environment()
    import torch
    handle = miopy.Handle()
    peak = harness.torch_sgemm_peak_gflops(torch)
    layers = [ly for ly in LAYERS if not args.layers or any(s in ly[0] for s in args.layers.split(","))]
    result = harness.new_record(handle, torch=torch.__version__, torch_threads=torch.get_num_threads(),
                                peak_gflops_torch_sgemm=peak, load_before=os.getloadavg(), budget=args.budget,
                                omp_wait_policy=os.environ.get("OMP_WAIT_POLICY"), cases=[])
    print(f"{handle.info.name}: torch sgemm peak {peak:.0f} GFLOP/s, load {os.getloadavg()}", flush=True)
    for n in map(int, args.batches.split(",")):
        chosen = [ly for ly in layers if str(n) not in subsets or any(s in ly[0] for s in subsets[str(n)].split("+"))]
        for letter in args.directions.split(","):
            for layer in chosen:
                rec = run_case(handle, layer, n, LETTERS[letter], args, peak)
                rec["load"] = os.getloadavg()[0]
                result["cases"].append(rec)
                _print(rec)
                result["summary"], result["load_after"] = summary(result["cases"]), os.getloadavg()
                harness.write_json(args.json, result)
    result["peak_gflops_torch_sgemm_end"] = harness.torch_sgemm_peak_gflops(torch)
    harness.write_json(args.json, result)
    print(json.dumps(result["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
