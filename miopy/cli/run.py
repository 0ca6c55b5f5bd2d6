"""miopy-run: run an ONNX model on miopy; a per-layer time table, the pass's time and throughput, and with
--verify the largest error against onnxruntime on the same random inputs (needs the `onnx` extra)."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from ..errors import MiopyError, check
from ..handle import Handle

VERIFY_TOLERANCE = 1e-3   # hybrid |a - e| / (1 + |e|) of a whole network against onnxruntime in fp32


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="miopy-run", description=__doc__)
    ap.add_argument("model", type=Path, help="the .onnx file")
    ap.add_argument("--batch", type=int, default=None, help="batch size (first dimension of every input)")
    ap.add_argument("--iters", type=int, default=10, help="timed passes (medians are reported)")
    ap.add_argument("--find", action="store_true", help="run find for every convolution before building it")
    ap.add_argument("--verify", action="store_true", help="compare the outputs with onnxruntime's")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    ap.add_argument("--json", type=Path, default=None, help="also write the table and totals to this file")
    return ap


def _session_type():
    try:
        from ..onnx import InferenceSession
    except ImportError as exc:   # the optional extra is missing
        raise SystemExit(f"miopy-run: needs the onnx extra (pip install 'miopy[onnx]'): {exc}") from None
    return InferenceSession


def table(session, times: list[float], total_ms: float) -> str:
    """The per-layer table: index, layer, ops, solver, median ms and share of the summed time."""
    summed = sum(times) or 1.0
    lines = [f"{'#':>4}  {'layer':<40}{'ops':<36}{'solver':<26}{'ms':>10}{'%':>7}"]
    for i, ((label, ops, solver), ms) in enumerate(zip(session.layers(), times)):
        lines.append(f"{i:>4}  {label[:39]:<40}{ops[:35]:<36}{solver[:25]:<26}{ms:>10.4f}{100 * ms / summed:>6.1f}%")
    lines.append(f"      {'layers summed':<102}{sum(times):>10.4f}")
    lines.append(f"      {'whole pass (first kernel start to last end)':<102}{total_ms:>10.4f}")
    return "\n".join(lines)


def verify(session, model: Path, feeds: dict) -> list[float]:
    """The hybrid error of each output against onnxruntime's CPU provider."""
    from ..onnx.reference import onnxruntime_session
    ours = session.run(None, feeds)
    theirs = onnxruntime_session(model).run(None, feeds)
    return [float(np.max(np.abs(a.astype(np.float64) - e) / (1.0 + np.abs(e)), initial=0.0))
            for a, e in zip(ours, theirs)]


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    session_type = _session_type()
    try:
        _check_args(args)
        handle = Handle()
        print(f"miopy-run: device {handle.info.name} ({handle.info.platform})")
        start = time.perf_counter()
        session = session_type(args.model, handle, batch=args.batch, find=args.find)
        load_s = time.perf_counter() - start
        rng = np.random.default_rng(args.seed)
        feeds = {a.name: rng.standard_normal(a.shape).astype(np.float32) for a in session.get_inputs()}
        start = time.perf_counter()
        session.run(None, feeds)
        first_s = time.perf_counter() - start
        times, total_ms = session.profile(iters=args.iters)
    except MiopyError as exc:
        print(f"miopy-run: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    batch = session.get_inputs()[0].shape[0] if session.get_inputs() else 1
    memory = session.memory
    print(f"loaded in {load_s:.2f} s ({len(session.steps)} steps, kernel cache {handle.cache_stats()}); "
          f"first run {first_s * 1e3:.1f} ms")
    print(f"device memory: activations {memory.activations / 2**20:.1f} MiB in {memory.slots} buffers for "
          f"{memory.values} values, weights {memory.weights / 2**20:.1f} MiB, workspaces "
          f"{memory.workspaces / 2**20:.1f} MiB, total {memory.total / 2**20:.1f} MiB")
    print(table(session, times, total_ms))
    print(f"batch {batch}: {total_ms:.3f} ms per pass, {batch / total_ms * 1e3:.1f} images/s")
    result = {"model": str(args.model), "batch": batch, "device": handle.info.name, "load_s": load_s,
              "first_run_ms": first_s * 1e3, "pass_ms": total_ms, "images_per_s": batch / total_ms * 1e3,
              "memory": memory.__dict__, "layers": [dict(zip(("layer", "ops", "solver"), layer), ms=ms)
                                                    for layer, ms in zip(session.layers(), times)]}
    ok = True
    if args.verify:
        errors = verify(session, args.model, feeds)
        ok = max(errors) <= VERIFY_TOLERANCE
        print(f"verify against onnxruntime: max hybrid error {max(errors):.2e} "
              f"({'OK' if ok else 'FAILED'}, tolerance {VERIFY_TOLERANCE:.0e})")
        result["max_error"] = max(errors)
    if args.json:
        try:
            args.json.write_text(json.dumps(result, indent=1))
        except OSError as exc:
            print(f"miopy-run: error: --json: cannot write {args.json}: {exc.strerror or exc}", file=sys.stderr)
            return 1
    return 0 if ok else 1


def _check_args(args) -> None:
    """BadParam naming the flag for counts out of range, before any device work."""
    check(args.iters >= 1, "--iters", f"must be >= 1 timed pass, got {args.iters}")
    check(args.seed >= 0, "--seed", f"must be >= 0, got {args.seed}")
    check(args.batch is None or args.batch >= 1, "--batch", f"must be >= 1, got {args.batch}")
    check(args.json is None or args.json.parent.is_dir(), "--json", f"directory {args.json.parent} does not exist")


if __name__ == "__main__":
    sys.exit(main())
