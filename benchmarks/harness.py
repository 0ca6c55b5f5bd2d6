"""The one harness every benchmark uses: how to time, what to record, how to write it down.

Timing, one way each (Kernel Tuner's and Triton's do_bench habit):

- device_ms: OpenCL profiling events, first kernel's start to last kernel's end, median of ITERS runs after
  WARMUP (miopy.Handle.time_ms); launch_ms splits a multi-kernel call by launch.
- host_us / wall_ms: perf_counter around calls on the host, medians, with the device drained around them
  (host time per call apart from device time).
- cuda_ms: PyTorch (cuDNN, cuBLAS) by CUDA events, median of ITERS runs after WARMUP; torch is imported lazily
  (load_torch), so every benchmark runs without it.
- interleaved_ms: several calls timed in turns (wall and process CPU time), so a shared machine's load hits all.
- fp32_peak_gflops / copy_bandwidth_gbs (microbench.cl) and torch_sgemm_peak_gflops: the rates results are
  compared with, measured in the same run.

Recording: new_record starts a result with its "meta" (device, git commit, date, command line, library
versions); write_json writes it atomically (after every row, so a run cut short keeps what it measured);
meta_of reads the provenance of new and older result files alike. md_table and fmt write markdown.
"""
from __future__ import annotations

import datetime
import importlib.metadata
import json
import math
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from miopy.accuracy import max_error  # noqa: F401 (Boda's hybrid error, which results record: harness.max_error)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
WARMUP = 3
ITERS = 20


# -- device time: OpenCL profiling events ---------------------------------------------------------------------
def device_ms(handle, enqueue: Callable[[], Sequence[Any]], warmup: int = WARMUP, iters: int = ITERS) -> float:
    """Median over iters of the profiled time from the first event's start to the last's end, after warmup runs.
    enqueue runs the work once and returns its events."""
    return handle.time_ms(enqueue, warmup=warmup, iters=iters)


def events_ms(events: Sequence[Any]) -> float:
    """Profiled ms from the first event's start to the last event's end (the events complete)."""
    events[-1].wait()
    return (events[-1].profile.end - events[0].profile.start) * 1e-6


def launch_ms(handle, enqueue: Callable[[], Sequence[Any]], runs: int = 5) -> list[float]:
    """Each launch's median profiled ms over runs: where a multi-kernel call's time goes."""
    samples = []
    for _ in range(runs):
        events = enqueue()
        handle.finish()
        samples.append([(e.profile.end - e.profile.start) * 1e-6 for e in events])
    return [statistics.median(column) for column in zip(*samples)]


# -- host time: perf_counter ------------------------------------------------------------------------------------
def host_us(call: Callable[[], Any], finish: Callable[[], Any], batches: int = 30, per_batch: int = 100,
            warmup: int = WARMUP) -> float:
    """Host microseconds per call: the median over batches of (seconds for per_batch back-to-back calls, no
    synchronisation inside a batch) / per_batch; the device is drained between batches, outside the clock."""
    for _ in range(warmup):
        call()
    finish()
    samples = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(per_batch):
            call()
        samples.append((time.perf_counter() - start) / per_batch * 1e6)
        finish()
    return statistics.median(samples)


def wall_ms(run: Callable[[], Any], finish: Callable[[], Any], rounds: int = ITERS, per_round: int = 1,
            warmup: int = WARMUP) -> float:
    """Wall-clock ms per call, device work included: the median over rounds of per_round back-to-back calls
    followed by finish (the device drained before the clock starts)."""
    for _ in range(warmup):
        run()
    finish()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(per_round):
            run()
        finish()
        samples.append((time.perf_counter() - start) * 1e3 / per_round)
    return statistics.median(samples)


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def interleaved_ms(calls: Mapping[str, Callable[[], Any]], rounds: int, iters: int = 1,
                   settle: Callable[[], Any] | None = None) -> tuple[dict[str, float], dict[str, float]]:
    """Each call's median wall ms, the calls taking turns round by round (iters calls each per turn), so load from
    other processes and queue depth hit them alike; and each call's process CPU ms per call (all threads), which
    other processes inflate far less. settle (e.g. a queue finish) runs after each round, outside the clock."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    cpu = {name: 0.0 for name in calls}
    for call in calls.values():
        call()
    for _ in range(rounds):
        for name, call in calls.items():
            start_cpu = _cpu_s()
            for _ in range(iters):
                start = time.perf_counter()
                call()
                samples[name].append((time.perf_counter() - start) * 1e3)
            cpu[name] += (_cpu_s() - start_cpu) * 1e3 / (rounds * iters)
        if settle is not None:
            settle()
    return {name: statistics.median(values) for name, values in samples.items()}, cpu


def seconds(call: Callable[[], Any]) -> float:
    """Wall seconds of one call."""
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


# -- PyTorch: CUDA events -----------------------------------------------------------------------------------------
def load_torch(tf32: bool = False, benchmark: bool = True, device: str = "cuda"):
    """torch where it is installed and (device "cuda") has a GPU, else None; cudnn.benchmark on and TF32 off for
    cuDNN and cuBLAS unless asked (strict fp32: what miopy's fp32 results are compared with)."""
    try:
        import torch
    except ImportError:
        return None
    if device == "cuda" and not torch.cuda.is_available():
        return None
    if device == "cuda":
        torch.backends.cudnn.benchmark = benchmark
        set_tf32(torch, tf32)
    return torch


def set_tf32(torch, on: bool) -> None:
    """TF32 math for cuDNN convolutions and cuBLAS matmuls on (PyTorch's default for cuDNN) or off (strict)."""
    torch.backends.cudnn.allow_tf32 = on
    torch.backends.cuda.matmul.allow_tf32 = on


def cuda_ms(torch, call: Callable[[], Any], warmup: int = WARMUP, iters: int = ITERS) -> float:
    """Median of iters CUDA-event timings of call, after warmup calls."""
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    samples = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


# -- peaks and bandwidth ------------------------------------------------------------------------------------------
MICROBENCH = Path(__file__).with_name("microbench.cl")
FMA_ITERS = 4096
FMA_CHAINS = 16   # 4 float4 chains per work-item


def fp32_peak_gflops(handle, iters: int = 10) -> float:
    """The device's fp32 FMA rate: independent FMA chains on many work-items per compute unit (median of iters)."""
    import numpy as np
    import pyopencl as cl
    kernel = cl.Kernel(cl.Program(handle.context, MICROBENCH.read_text()).build(f"-DITERS={FMA_ITERS}"), "fma_peak")
    items = handle.info.compute_units * 2048 * (8 if handle.info.is_gpu else 1)
    out = handle.alloc(items * 4)
    kernel.set_args(out, np.float32(0.999), np.float32(0.001))
    ms = device_ms(handle, lambda: [cl.enqueue_nd_range_kernel(handle.queue, kernel, (items,), (256,))], 2, iters)
    return 2.0 * FMA_CHAINS * FMA_ITERS * items / ms / 1e6


def copy_bandwidth_gbs(handle, mbytes: int = 1024, iters: int = 10) -> float:
    """Bytes read plus bytes written per second by a float4 device-to-device copy of mbytes MiB (64 MiB at most
    on a CPU device)."""
    import pyopencl as cl
    nbytes = mbytes << 20 if handle.info.is_gpu else min(mbytes << 20, 64 << 20)
    kernel = cl.Kernel(cl.Program(handle.context, MICROBENCH.read_text()).build("-DITERS=1"), "copy4")
    src, dst = handle.alloc(nbytes), handle.alloc(nbytes)
    kernel.set_args(src, dst)
    ms = device_ms(handle, lambda: [cl.enqueue_nd_range_kernel(handle.queue, kernel, (nbytes // 16,), (256,))],
                   2, iters)
    return 2.0 * nbytes / ms / 1e6


def torch_sgemm_peak_gflops(torch, size: int = 2048, reps: int = 5) -> float:
    """The host's practical fp32 rate on PyTorch's threads: the best of reps sgemms of size^3."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    return 2 * size**3 / min(seconds(lambda: a @ b) for _ in range(reps)) / 1e9


# -- summaries ------------------------------------------------------------------------------------------------------
def geomean(values: Iterable[float | None]) -> float:
    """Geometric mean of the positive finite values (None, 0, inf and NaN skipped); NaN when none is left."""
    kept = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, kept)) / len(kept)) if kept else float("nan")


def median(values: Iterable[float]) -> float:
    kept = list(values)
    return statistics.median(kept) if kept else float("nan")


# -- what a result records ------------------------------------------------------------------------------------------
def device_description(handle) -> dict:
    """The device as the results name it: its name, miopy's device id (platform|name|driver|CUs), platform,
    driver, compute units and type."""
    info = handle.info
    return {"device": info.name, "device_id": info.device_id, "platform": info.platform,
            "driver": info.driver_version, "compute_units": info.compute_units, "is_gpu": info.is_gpu}


def git_commit(root: Path = ROOT) -> dict:
    """The checkout's commit and whether its tracked files differ from it (None where git or the repo is absent).
    MIOPY_BENCH_COMMIT names the commit instead, for copies whose git metadata is not the code's own (the GPU
    machine receives the working tree over a stale .git)."""
    named = os.environ.get("MIOPY_BENCH_COMMIT")
    if named:
        return {"commit": named, "dirty": False}
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def versions() -> dict:
    """Python's and the installed libraries' versions (read from package metadata: nothing is imported)."""
    out = {"python": platform.python_version()}
    for name in ("miopy", "pyopencl", "numpy", "torch", "onnx", "onnxruntime"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def command_line(argv: Sequence[str] | None = None) -> str:
    """This run's command as it can be typed again from the repository root (`python -m benchmarks.x ...`)."""
    argv = list(sys.argv if argv is None else argv)
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    head = f"python -m {spec.name}" if spec is not None and spec.name else f"python {argv[0]}" if argv else "python"
    return " ".join([head, *map(shlex.quote, argv[1:])])


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def run_meta(handle=None, argv: Sequence[str] | None = None) -> dict:
    """The provenance every result records: device (when a handle is given), commit, date, command, versions."""
    meta = {**(device_description(handle) if handle is not None else {}), **git_commit(), "date": utc_now(),
            "command": command_line(argv), "versions": versions(), "host": platform.node()}
    return meta


def new_record(handle=None, argv: Sequence[str] | None = None, **fields) -> dict:
    """A result dict: {"meta": run_meta(...), **fields}."""
    return {"meta": run_meta(handle, argv), **fields}


def write_json(path: Path | str | None, data: Any) -> None:
    """data as indented JSON at path, written to a temporary name and moved into place (a run stopped mid-write
    leaves the previous whole file); nothing when path is None."""
    if path is None:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=_plain) + "\n")
    os.replace(tmp, path)


def _plain(value: Any) -> Any:
    """JSON for NumPy scalars and arrays, paths and the like."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def read_json(path: Path | str) -> Any:
    return json.loads(Path(path).read_text())


PROVENANCE = ("device", "device_id", "date", "command", "commit", "dirty")


def meta_of(data: Any, known: Mapping[str, Any] | None = None) -> dict:
    """A result's provenance: its "meta" where the harness wrote it; for older files, what the results catalog
    records of the file (known), then the file's own top-level device / date / command / argv keys."""
    meta: dict = dict(data.get("meta") or {}) if isinstance(data, dict) else {}
    for key, value in (known or {}).items():
        meta.setdefault(key, value)
    if isinstance(data, dict):
        for key in PROVENANCE:
            if key not in meta and isinstance(data.get(key), (str, bool)):
                meta[key] = data[key]
        if "command" not in meta and isinstance(data.get("argv"), list):
            meta["command"] = " ".join(data["argv"])
    return meta


# -- markdown -------------------------------------------------------------------------------------------------------
def fmt(value: Any, spec: str = "", missing: str = "-") -> str:
    """value formatted with spec; missing for None and NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    return format(value, spec)


def md_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """A markdown table: a header row, its rule, one line per row (cells as str, pipes escaped)."""
    def line(cells: Sequence[Any]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
    return [line(header), "|" + "---|" * len(header), *(line(r) for r in rows)]


# -- results pages --------------------------------------------------------------------------------------------------
class Source:
    """A recorded result file as a page sees it: its name under benchmarks/results, its data, its provenance."""

    def __init__(self, name: str, data: Any, meta: Mapping[str, Any]):
        self.name, self.data, self.meta = name, data, dict(meta)

    @classmethod
    def load(cls, path: Path | str, known: Mapping[str, Any] | None = None) -> Source:
        data = read_json(path)
        return cls(Path(path).name, data, meta_of(data, known))

    def link(self) -> str:
        """A markdown link to the file from docs/results/."""
        return f"[`{self.name}`](../../benchmarks/results/{self.name})"


def provenance(sources: Sequence[Source]) -> list[str]:
    """A page's table of the result files it shows: device, date, commit and the command that recorded each."""
    rows = []
    for s in sources:
        commit = s.meta.get("commit")
        rows.append([s.link(), s.meta.get("device", "-"), s.meta.get("date", "-"),
                     f"`{commit[:10]}`" + (" (modified)" if s.meta.get("dirty") else "") if commit else "-",
                     f"`{s.meta['command']}`" if s.meta.get("command") else "-"])
    return md_table(["result file", "device", "recorded", "commit", "command"], rows)


def page_head(title: str, sources: Sequence[Source], *intro: str) -> list[str]:
    """A results page's title, the generated-page note, intro paragraphs and the provenance table."""
    lines = [f"# {title}", "", "Generated by `python -m benchmarks.report` from the recorded results named below; "
             "do not edit by hand. Commit: the checkout that recorded the file (for files recorded before the "
             "harness wrote its own: the last commit that changed the file, so the code that measured it is that "
             "commit's parent or older).", ""]
    for paragraph in intro:
        lines += [paragraph, ""]
    return lines + provenance(sources) + [""]


def pyplot():
    """matplotlib.pyplot on the Agg backend, or None where matplotlib (the `bench` extra) is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_figure(fig, path: Path) -> None:
    """A figure as PNG without the metadata that changes from run to run (so a page regenerates identically)."""
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    import matplotlib.pyplot as plt
    plt.close(fig)
