"""Primitive kernels (pooling, softmax, LRN, ...) at ResNet-50 and AlexNet sizes: kernel time, effective
bandwidth against the device-to-device copy bandwidth measured in the same run, and PyTorch's time for the
same op on the same GPU.

A case is a name, the network it comes from, its input (C, H, W), a build function
``build(handle, (N, C, H, W)) -> Op`` (device tensors and a built call: ``Op.enqueue()`` returns the
OpenCL events of one run), and a PyTorch equivalent ``torch_build(torch, (N, C, H, W)) -> callable`` (or
None). A family's hand-written cases are in WRITTEN; a family without any is benchmarked on its samples
(samples.problems_on at a ResNet-50 size) on the solver immediate mode picks. Times are medians of profiled
runs after warm-ups (OpenCL profiling events for miopy, CUDA events for PyTorch, which runs with
cudnn.benchmark on). Bytes moved are what the op must read and write at least (Op.bytes); effective
bandwidth is bytes / time, and "% copy" compares it with a float4 copy kernel on the same device.

    python -m benchmarks.primitives --batch 32 128 --out benchmarks/results/h100-primitives.json
    python -m benchmarks.primitives --batch 1 --shrink 8 --iters 3            # CPU (PoCL) smoke run
    python -m benchmarks.primitives --batch 32 --find      # also every applicable solver's time (ranking data)

The results page is docs/results/primitives.md (`python -m benchmarks.report`).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import miopy
from benchmarks import harness
from miopy import TensorDesc, families

Dims = tuple[int, int, int, int]


@dataclass
class Op:
    """One built primitive call: enqueue() runs it once; bytes it must move; the solver that runs it; its
    problem (for --find, which times every applicable solver)."""

    enqueue: Callable[[], list]
    bytes: int
    solver: str
    problem: Any = None


@dataclass(frozen=True)
class Case:
    name: str
    net: str
    chw: tuple[int, int, int]
    build: Callable[[miopy.Handle, Dims], Op]
    torch_build: Callable[[Any, Dims], Callable[[], Any]] | None = None


def _random(handle: miopy.Handle, dims, seed: int = 0):
    return handle.to_device(np.random.default_rng(seed).standard_normal(dims, dtype=np.float32))


# -- pooling -------------------------------------------------------------------------------------------------
def pooling(mode: str, window: int, stride: int, pad: int, backward: bool) -> Callable[[miopy.Handle, Dims], Op]:
    from miopy.pooling import PoolingDesc
    from miopy.pooling.api import backward_call, forward_call

    def build(handle: miopy.Handle, dims: Dims) -> Op:
        desc = PoolingDesc(mode, window, pad, stride)
        x_desc = TensorDesc("FP32", dims)
        y_desc = desc.output_desc(x_desc)
        x, y = _random(handle, dims), handle.empty(y_desc.dims)
        ws = handle.empty((max(desc.workspace_bytes(y_desc) // 4, 1),), np.int32)
        fwd = forward_call(handle, desc, x_desc, y_desc, backward)
        fwd.run((x, y), 1.0, 0.0, ws)
        if not backward:
            return Op(lambda: fwd.run((x, y), 1.0, 0.0, ws), fwd.plan.problem.bytes(), fwd.plan.solver_id,
                      fwd.plan.problem)
        bwd = backward_call(handle, desc, y_desc, y_desc, x_desc, x_desc)
        dy, dx = _random(handle, y_desc.dims, 1), handle.empty(dims)
        return Op(lambda: bwd.run((dx, dy), 1.0, 0.0, ws), bwd.plan.problem.bytes(), bwd.plan.solver_id,
                  bwd.plan.problem)
    return build


def torch_pooling(mode: str, window: int, stride: int, pad: int, backward: bool):
    def build(torch, dims: Dims):
        x = torch.randn(dims, device="cuda")
        f = torch.nn.functional
        if mode == "max":
            y, idx = f.max_pool2d(x, window, stride, pad, return_indices=True)
            if not backward:
                return lambda: f.max_pool2d(x, window, stride, pad)
            dy = torch.randn_like(y)
            return lambda: torch.ops.aten.max_pool2d_with_indices_backward(dy, x, [window] * 2, [stride] * 2,
                                                                           [pad] * 2, [1, 1], False, idx)
        inclusive = mode == "avg_in"
        y = f.avg_pool2d(x, window, stride, pad, count_include_pad=inclusive)
        if not backward:
            return lambda: f.avg_pool2d(x, window, stride, pad, count_include_pad=inclusive)
        dy = torch.randn_like(y)
        return lambda: torch.ops.aten.avg_pool2d_backward(dy, x, [window] * 2, [stride] * 2, [pad] * 2, False,
                                                          inclusive, None)
    return build


def global_avg(backward: bool) -> Callable[[miopy.Handle, Dims], Op]:
    from miopy.pooling import PoolingDesc
    from miopy.pooling.api import backward_call, forward_call

    def build(handle: miopy.Handle, dims: Dims) -> Op:
        desc = PoolingDesc("avg", (dims[2], dims[3]))
        x_desc = TensorDesc("FP32", dims)
        y_desc = desc.output_desc(x_desc)
        if backward:
            call = backward_call(handle, desc, y_desc, y_desc, x_desc, x_desc)
            values = (handle.empty(dims), _random(handle, y_desc.dims, 1))
        else:
            call = forward_call(handle, desc, x_desc, y_desc, False)
            values = (_random(handle, dims), handle.empty(y_desc.dims))
        return Op(lambda: call.run(values, 1.0, 0.0, None), call.plan.problem.bytes(), call.plan.solver_id,
                  call.plan.problem)
    return build


def torch_global_avg(backward: bool):
    def build(torch, dims: Dims):
        x = torch.randn(dims, device="cuda")
        if not backward:
            return lambda: torch.nn.functional.adaptive_avg_pool2d(x, 1)
        dy = torch.randn((dims[0], dims[1], 1, 1), device="cuda")
        return lambda: torch.ops.aten._adaptive_avg_pool2d_backward(dy, x)
    return build


def _pool_cases() -> list[Case]:
    out = []
    for backward in (False, True):
        tag = "bwd" if backward else "fwd"
        out += [
            Case(f"maxpool 3x3/2 p1 {tag}", "resnet50", (64, 112, 112), pooling("max", 3, 2, 1, backward),
                 torch_pooling("max", 3, 2, 1, backward)),
            Case(f"global avgpool {tag}", "resnet50", (2048, 7, 7), global_avg(backward), torch_global_avg(backward)),
            Case(f"maxpool 3x3/2 {tag}", "alexnet", (96, 55, 55), pooling("max", 3, 2, 0, backward),
                 torch_pooling("max", 3, 2, 0, backward)),
            Case(f"maxpool 3x3/2 {tag}", "alexnet", (256, 27, 27), pooling("max", 3, 2, 0, backward),
                 torch_pooling("max", 3, 2, 0, backward)),
            Case(f"maxpool 3x3/2 {tag}", "alexnet", (256, 13, 13), pooling("max", 3, 2, 0, backward),
                 torch_pooling("max", 3, 2, 0, backward)),
            Case(f"avgpool 3x3/1 p1 {tag}", "googlenet", (480, 28, 28), pooling("avg_in", 3, 1, 1, backward),
                 torch_pooling("avg_in", 3, 1, 1, backward)),
        ]
    return out


# -- softmax -------------------------------------------------------------------------------------------------
def softmax(algorithm: str, backward: bool) -> Callable[[miopy.Handle, Dims], Op]:
    from miopy.softmax import SoftmaxDesc
    from miopy.softmax.api import backward_plan, forward_plan

    def build(handle: miopy.Handle, dims: Dims) -> Op:
        desc, t = SoftmaxDesc(algorithm, "channel"), TensorDesc("FP32", dims)
        if backward:
            plan = backward_plan(handle, desc, t, t, t)
            values = (handle.empty(dims), _random(handle, dims, 1), _random(handle, dims, 2))
        else:
            plan = forward_plan(handle, desc, t, t)
            values = (_random(handle, dims), handle.empty(dims))
        return Op(lambda: plan.run_values(values), plan.problem.bytes(), plan.solver_id, plan.problem)
    return build


def torch_softmax(algorithm: str, backward: bool):
    def build(torch, dims: Dims):
        x = torch.randn(dims, device="cuda")
        log = algorithm == "log"
        forward = torch.log_softmax if log else torch.softmax
        if not backward:
            return lambda: forward(x, 1)
        y, dy = forward(x, 1), torch.randn(dims, device="cuda")
        grad = torch._log_softmax_backward_data if log else torch._softmax_backward_data
        return lambda: grad(dy, y, 1, x.dtype)
    return build


def _softmax_cases() -> list[Case]:
    out = []
    for backward in (False, True):
        tag = "bwd" if backward else "fwd"
        for algorithm in ("accurate", "log"):
            name = f"{'log_' if algorithm == 'log' else ''}softmax channel {tag}"
            out += [Case(name, "resnet50", (1000, 1, 1), softmax(algorithm, backward),
                         torch_softmax(algorithm, backward)),
                    Case(name, "fcn", (21, 128, 128), softmax(algorithm, backward),
                         torch_softmax(algorithm, backward))]
    return out


# -- LRN ------------------------------------------------------------------------------------------------------
def lrn(mode: str, size: int, backward: bool) -> Callable[[miopy.Handle, Dims], Op]:
    from miopy.lrn import LRNDesc
    from miopy.lrn.api import backward_call, forward_call

    def build(handle: miopy.Handle, dims: Dims) -> Op:
        desc, t = LRNDesc(mode, size, 1e-4, 0.75, 2.0), TensorDesc("FP32", dims)
        x, y, scale = _random(handle, dims), handle.empty(dims), handle.empty(dims)
        fwd = forward_call(handle, desc, t, t, True)
        fwd.run((x, y, scale), 1.0, 0.0)
        if not backward:
            return Op(lambda: fwd.run((x, y, scale), 1.0, 0.0), fwd.plan.problem.bytes(), fwd.plan.solver_id,
                      fwd.plan.problem)
        bwd = backward_call(handle, desc, t, t, t, t)
        values = (handle.empty(dims), _random(handle, dims, 1), x, scale)
        return Op(lambda: bwd.run(values, 1.0, 0.0), bwd.plan.problem.bytes(), bwd.plan.solver_id, bwd.plan.problem)
    return build


def torch_lrn(size: int, backward: bool):
    def build(torch, dims: Dims):
        x = torch.randn(dims, device="cuda", requires_grad=backward)
        f = torch.nn.functional
        if not backward:
            return lambda: f.local_response_norm(x, size, 1e-4, 0.75, 2.0)
        y, dy = f.local_response_norm(x, size, 1e-4, 0.75, 2.0), torch.randn(dims, device="cuda")
        return lambda: torch.autograd.grad(y, x, dy, retain_graph=True)
    return build


def _lrn_cases() -> list[Case]:
    out = []
    for backward in (False, True):
        tag = "bwd" if backward else "fwd"
        out += [Case(f"lrn cross 5 {tag}", "alexnet", (96, 55, 55), lrn("cross", 5, backward), torch_lrn(5, backward)),
                Case(f"lrn cross 5 {tag}", "alexnet", (256, 27, 27), lrn("cross", 5, backward),
                     torch_lrn(5, backward)),
                Case(f"lrn within 3 {tag}", "alexnet", (96, 55, 55), lrn("within", 3, backward), None)]
    return out


# -- batch normalisation (spatial, the only mode ResNet uses) -------------------------------------------------
def batchnorm(kind: str) -> Callable[[miopy.Handle, Dims], Op]:
    """kind: "train" (forward training, running and saved statistics), "infer" or "bwd" (with saved)."""
    from miopy.batchnorm import BnDirection, batch_normalization_plan, derive_bn_tensor_descriptor

    direction = {"train": BnDirection.FORWARD_TRAINING, "infer": BnDirection.FORWARD_INFERENCE,
                 "bwd": BnDirection.BACKWARD}[kind]

    def build(handle: miopy.Handle, dims: Dims) -> Op:
        x_desc = TensorDesc("FP32", dims)
        p_desc = derive_bn_tensor_descriptor(x_desc, "spatial")
        backward = direction is BnDirection.BACKWARD
        plan = batch_normalization_plan(handle, direction, "spatial", x_desc, x_desc, p_desc,
                                        x_desc if backward else None, running=kind == "train",
                                        saved=kind != "infer")
        data = [_random(handle, dims, i) for i in range(3 if backward else 2)]
        params = [handle.to_device(np.random.default_rng(i).uniform(0.5, 1.5, dims[1]).astype(np.float32))
                  for i in range(len(plan.operands) - len(data))]
        values = tuple(data + params)
        one, zero, eps = np.float32(1), np.float32(0), np.float32(1e-5)
        scalars = ({"alpha_data": one, "beta_data": zero, "alpha_param": one, "beta_param": zero, "epsilon": eps}
                   if backward else {"alpha": one, "beta": zero, "epsilon": eps, "factor": np.float32(0.1)})
        nbytes = x_desc.nbytes * (3 if backward else 2)
        return Op(lambda: plan.run_values(values, scalars=scalars), nbytes, plan.solver_id)
    return build


def torch_batchnorm(kind: str):
    def build(torch, dims: Dims):
        x, c = torch.randn(dims, device="cuda"), dims[1]
        w, b = torch.rand(c, device="cuda") + 0.5, torch.randn(c, device="cuda")
        rm, rv = torch.zeros(c, device="cuda"), torch.ones(c, device="cuda")
        if kind == "train":
            return lambda: torch.nn.functional.batch_norm(x, rm, rv, w, b, True, 0.1, 1e-5)
        if kind == "infer":
            return lambda: torch.nn.functional.batch_norm(x, rm, rv, w, b, False, 0.1, 1e-5)
        _, mean, invstd = torch.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)
        dy = torch.randn_like(x)
        return lambda: torch.ops.aten.native_batch_norm_backward(dy, x, w, rm, rv, mean, invstd, True, 1e-5,
                                                                 [True, True, True])
    return build


def _batchnorm_cases() -> list[Case]:
    sizes = [(64, 112, 112), (256, 56, 56), (512, 28, 28), (2048, 7, 7)]
    return [Case(f"batchnorm {kind}", "resnet50", chw, batchnorm(kind), torch_batchnorm(kind))
            for kind in ("train", "infer", "bwd") for chw in sizes]


# -- tensor operations -----------------------------------------------------------------------------------------
def op_tensor_case(op: str, broadcast: bool) -> Callable[[miopy.Handle, Dims], Op]:
    from miopy.tensor_ops import op_tensor_plan

    def build(handle: miopy.Handle, dims: Dims) -> Op:
        a_desc = TensorDesc("FP32", dims)
        b_desc = TensorDesc("FP32", (1, dims[1], 1, 1) if broadcast else dims)
        plan = op_tensor_plan(handle, op, a_desc, b_desc, a_desc)
        values = (_random(handle, dims), _random(handle, b_desc.dims, 1), handle.empty(dims))
        scalars = {"alpha1": np.float32(1), "alpha2": np.float32(1), "beta": np.float32(0)}
        nbytes = 2 * a_desc.nbytes + b_desc.nbytes
        return Op(lambda: plan.run_values(values, scalars=scalars), nbytes, plan.solver_id)
    return build


def torch_op_tensor(op: str, broadcast: bool):
    def build(torch, dims: Dims):
        a, c = torch.randn(dims, device="cuda"), torch.empty(dims, device="cuda")
        b = torch.randn((1, dims[1], 1, 1) if broadcast else dims, device="cuda")
        fn = {"add": torch.add, "max": torch.maximum}[op]
        return lambda: fn(a, b, out=c)
    return build


def unary_case(kind: str) -> Callable[[miopy.Handle, Dims], Op]:
    """kind: "set", "scale" or "transform" (NCHW to NHWC)."""
    from miopy.tensor_ops import scale_tensor, set_tensor, transform_tensor, transform_tensor_plan, unary_plan

    def build(handle: miopy.Handle, dims: Dims) -> Op:
        desc = TensorDesc("FP32", dims)
        y = _random(handle, dims)
        if kind == "set":
            set_tensor(handle, desc, y, 1.0)
            kernel = unary_plan(handle, "set_tensor", desc).solver_id
            return Op(lambda: set_tensor(handle, desc, y, 0.5), desc.nbytes, kernel)
        if kind == "scale":
            scale_tensor(handle, desc, y, 1.0)
            kernel = unary_plan(handle, "scale_tensor", desc).solver_id
            return Op(lambda: scale_tensor(handle, desc, y, 1.0), 2 * desc.nbytes, kernel)
        n, c, h, w = dims
        nhwc = TensorDesc("FP32", dims, (h * w * c, 1, w * c, c))
        x = _random(handle, dims, 1)
        out = y.base_data     # a raw Buffer: a C-contiguous Array is refused for an NHWC descriptor (as it should be)
        transform_tensor(handle, 1.0, desc, x, 0.0, nhwc, out)
        kernel = transform_tensor_plan(handle, desc, nhwc).solver_id
        return Op(lambda: transform_tensor(handle, 1.0, desc, x, 0.0, nhwc, out), 2 * desc.nbytes, kernel)
    return build


def torch_unary(kind: str):
    def build(torch, dims: Dims):
        y = torch.randn(dims, device="cuda")
        if kind == "set":
            return lambda: y.fill_(0.5)
        if kind == "scale":
            return lambda: y.mul_(1.0)
        out = torch.empty((dims[0], dims[2], dims[3], dims[1]), device="cuda")
        return lambda: out.copy_(y.permute(0, 2, 3, 1))
    return build


def _tensor_op_cases() -> list[Case]:
    return [
        Case("add (residual)", "resnet50", (256, 56, 56), op_tensor_case("add", False), torch_op_tensor("add", False)),
        Case("add (residual)", "resnet50", (2048, 7, 7), op_tensor_case("add", False), torch_op_tensor("add", False)),
        Case("add bias (broadcast)", "alexnet", (96, 55, 55), op_tensor_case("add", True),
             torch_op_tensor("add", True)),
        Case("max", "alexnet", (256, 27, 27), op_tensor_case("max", False), torch_op_tensor("max", False)),
        Case("set", "resnet50", (64, 112, 112), unary_case("set"), torch_unary("set")),
        Case("scale", "resnet50", (64, 112, 112), unary_case("scale"), torch_unary("scale")),
        Case("transform NCHW->NHWC", "resnet50", (64, 56, 56), unary_case("transform"), torch_unary("transform")),
    ]


# -- dropout ------------------------------------------------------------------------------------------------
def dropout_case(backward: bool) -> Callable[[miopy.Handle, Dims], Op]:
    from miopy.dropout import DropoutDirection, dropout_plan, set_dropout_descriptor

    def build(handle: miopy.Handle, dims: Dims) -> Op:
        desc = TensorDesc("FP32", dims)
        states = handle.empty((16,), np.uint8)
        d = set_dropout_descriptor(handle, 0.5, states, 1234, state_evo=True)
        direction = DropoutDirection.BACKWARD if backward else DropoutDirection.FORWARD
        plan = dropout_plan(handle, direction, desc, desc, state_evo=True)
        x, y, mask = _random(handle, dims), handle.empty(dims), handle.empty((desc.element_count,), np.uint8)
        values = (x, y, mask) if backward else (x, y, mask, states)
        scalars = {"scale": d.scale} if backward else {"threshold": d.threshold, "scale": d.scale}
        return Op(lambda: plan.run_values(values, scalars=scalars), 2 * desc.nbytes + desc.element_count,
                  plan.solver_id)
    return build


def torch_dropout(backward: bool):
    def build(torch, dims: Dims):
        x = torch.randn(dims, device="cuda")
        if not backward:
            return lambda: torch.ops.aten.native_dropout(x, 0.5, True)
        _, mask = torch.ops.aten.native_dropout(x, 0.5, True)
        return lambda: torch.ops.aten.native_dropout_backward(x, mask, 2.0)
    return build


def _dropout_cases() -> list[Case]:
    return [Case(f"dropout {'bwd' if backward else 'fwd'}", net, chw, dropout_case(backward), torch_dropout(backward))
            for backward in (False, True) for net, chw in (("alexnet", (4096, 1, 1)), ("resnet50", (256, 56, 56)))]


# -- any family: its samples posed at a network size, on immediate mode's solver ---------------------------
def sampled(family_name: str, index: int) -> Callable[[miopy.Handle, Dims], Op]:
    """The family's samples.problems_on(an FP32 tensor of dims)[index] on the solver immediate mode picks,
    on random buffers: a benchmark for a family with no hand-written cases."""
    from miopy.find import get_solutions, random_buffers
    from miopy.plan import solution_plan

    def build(handle: miopy.Handle, dims: Dims) -> Op:
        family = next(f for f in families.FAMILIES if f.name == family_name)
        problem = family.module("samples").problems_on(TensorDesc("FP32", dims))[index]
        record = get_solutions(handle, problem)[0]
        plan = solution_plan(handle, problem, record.solver_id, record.params)
        buffers = random_buffers(handle, problem, record.workspace_bytes)
        moved = problem.bytes() if hasattr(problem, "bytes") else sum(d.nbytes for d in problem.tensors().values())
        return Op(lambda: plan.enqueue(buffers), moved, record.solver_id, problem)
    return build


def _sampled_cases(family: families.Family) -> list[Case]:
    dims = (1, 64, 56, 56)
    count = len(family.module("samples").problems_on(TensorDesc("FP32", dims)))
    return [Case(f"{family.name} {i}", "resnet50", dims[1:], sampled(family.name, i)) for i in range(count)]


# Hand-written cases (PyTorch's equivalents beside them) by family; a family with none is benchmarked on its
# samples; convolution and fusion have benchmarks of their own (suite, tensor_cores, fusion).
WRITTEN = {"pooling": _pool_cases, "softmax": _softmax_cases, "lrn": _lrn_cases, "batchnorm": _batchnorm_cases,
           "tensor_ops": _tensor_op_cases, "dropout": _dropout_cases}
OWN_BENCHMARKS = ("conv", "fusion")


def cases() -> list[Case]:
    """Every family's cases, in the family list's order."""
    return [case for family in families.FAMILIES if family.name not in OWN_BENCHMARKS
            for case in (WRITTEN[family.name]() if family.name in WRITTEN else _sampled_cases(family))]


# -- measuring ----------------------------------------------------------------------------------------------
def measure(handle: miopy.Handle, case: Case, dims: Dims, copy_gbs: float, torch, warmup: int, iters: int,
            find: bool = False) -> dict:
    row: dict[str, Any] = {"case": case.name, "net": case.net, "dims": list(dims)}
    try:
        op = case.build(handle, dims)
        ms = harness.device_ms(handle, op.enqueue, warmup=warmup, iters=iters)
        if find and op.problem is not None:   # every applicable solver, on random buffers (find's timer)
            found = miopy.find_problem(handle, op.problem, mode="normal", store=False)
            row["solvers_ms"] = {r.solver_id: r.time_ms for r in found}
    except miopy.MiopyError as exc:   # failures are data: record and go on
        return {**row, "error": f"{type(exc).__name__}: {exc}"}
    gbs = op.bytes / ms / 1e6
    row.update(solver=op.solver, bytes=op.bytes, miopy_ms=ms, gbs=gbs, pct_copy=100 * gbs / copy_gbs)
    if torch is not None and case.torch_build is not None:
        tms = harness.cuda_ms(torch, case.torch_build(torch, dims), warmup, iters)
        row.update(torch_ms=tms, ratio=ms / tms)
        torch.cuda.empty_cache()
    return row


def print_row(row: dict) -> None:
    head = f"{row['net']:9} {row['case']:24} {'x'.join(map(str, row['dims'])):18}"
    if "error" in row:
        print(f"{head} FAILED: {row['error']}")
        return
    torch_part = f"{row['torch_ms']:9.4f} {row['ratio']:6.2f}x" if "torch_ms" in row else f"{'-':>9} {'-':>7}"
    others = "".join(f" {sid}={ms:.4f}" for sid, ms in row.get("solvers_ms", {}).items())
    print(f"{head} {row['bytes'] / 2**20:9.1f} {row['miopy_ms']:9.4f} {row['gbs']:8.1f} {row['pct_copy']:6.1f}% "
          f"{torch_part}  {row['solver']}{' [find:' + others + ']' if others else ''}")


def shrunk(case: Case, n: int, factor: int) -> Dims:
    c, h, w = case.chw
    return (n, c, max(h // factor, min(h, 3)), max(w // factor, min(w, 3)))


def run(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, nargs="+", default=[32, 128])
    ap.add_argument("--shrink", type=int, default=1, help="divide spatial sizes by this (quick CPU runs)")
    ap.add_argument("--update", type=Path, nargs=2, metavar=("BASE", "NEW"), default=None,
                    help="replace BASE's rows by NEW's rows of the same net, case and dims (a later --only run on "
                         "the same device), noting which; then stop")
    ap.add_argument("--only", default=None,
                    help="run only cases whose name contains one of these comma-separated substrings")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch even where it is installed")
    ap.add_argument("--find", action="store_true", help="also time every applicable solver (find, normal mode)")
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    a = ap.parse_args(argv)
    if a.update:
        update(*a.update)
        return 0
    handle = miopy.Handle()
    torch = None if a.no_torch else harness.load_torch()
    copy_gbs = harness.copy_bandwidth_gbs(handle)
    print(f"device: {handle.info.name} ({handle.info.platform}); copy bandwidth {copy_gbs:.1f} GB/s; "
          f"PyTorch: {torch.__version__ + ' on ' + torch.cuda.get_device_name() if torch else 'not used'}")
    print(f"{'net':9} {'case':24} {'dims':18} {'MiB':>9} {'miopy ms':>9} {'GB/s':>8} {'%copy':>7} "
          f"{'torch ms':>9} {'ratio':>7}  solver")
    rows: list[dict] = []
    record = harness.new_record(handle, torch=torch.__version__ if torch else None, copy_gbs=copy_gbs,
                                shrink=a.shrink)

    def save() -> None:   # after every row: a run cut short by the device's time limit keeps what it measured
        harness.write_json(a.out, {**record, "rows": rows})

    for n in a.batch:
        for case in cases():
            if a.only and not any(part in case.name for part in a.only.split(",")):
                continue
            row = measure(handle, case, shrunk(case, n, a.shrink), copy_gbs, torch, a.warmup, a.iters, a.find)
            print_row(row)
            rows.append(row)
            save()
    if a.out:
        print(f"wrote {a.out}")
    return 0


def update(base_path: Path, new_path: Path) -> None:
    base, new = harness.read_json(base_path), harness.read_json(new_path)
    devices = harness.meta_of(base).get("device"), harness.meta_of(new).get("device")
    if devices[0] != devices[1]:
        raise SystemExit(f"--update: {new_path} is from {devices[1]}, {base_path} from {devices[0]}")
    fresh = {(r["net"], r["case"], tuple(r["dims"])): r for r in new["rows"]}
    rows = []
    for r in base["rows"]:
        key = (r["net"], r["case"], tuple(r["dims"]))
        rows.append({**fresh.pop(key), "run": new_path.name} if key in fresh else r)
    rows += [{**r, "run": new_path.name} for r in fresh.values()]
    base["rows"], base["updated_from"] = rows, sorted({*base.get("updated_from", []), new_path.name})
    harness.write_json(base_path, base)
    print(f"updated {base_path}: {sum(r.get('run') == new_path.name for r in rows)} rows from {new_path}")


# -- the results page (docs/results/primitives.md) ------------------------------------------------------------------
def page(sources: list[harness.Source], out: Path) -> list[str]:
    """docs/results/primitives.md: one table per result file, then the targets over every row."""
    lines = harness.page_head(
        "Primitives against PyTorch on the GPU", sources,
        "Each primitive at ResNet-50, AlexNet, GoogLeNet and FCN sizes, timed with OpenCL profiling events (median "
        "after warm-ups); effective bandwidth = the bytes the op must move / time, against a device-to-device copy "
        "measured in the same run; PyTorch's equivalent on the same GPU by CUDA events (cudnn.benchmark). Rows "
        "marked with a file name come from that later run on the same device (merged with `--update`).")
    lines += section([s.data | {"device": s.meta.get("device")} for s in sources])
    return lines + targets([s.data for s in sources])


def section(results: list[dict]) -> list[str]:
    """Markdown tables of recorded runs: one per result file, every row with its bandwidth and ratio."""
    out = []
    for res in results:
        out += [f"## {res['device']} (copy bandwidth {res['copy_gbs']:.0f} GB/s; PyTorch {res.get('torch') or '-'})",
                "", "| net | case | N x C x H x W | MiB moved | miopy ms | GB/s | % copy | PyTorch ms "
                "| miopy / PyTorch | solver |", "|" + "---|" * 10]
        for r in res["rows"]:
            dims = "x".join(map(str, r["dims"]))
            if "error" in r:
                out.append(f"| {r['net']} | {r['case']} | {dims} | error: {r['error']} |" + " |" * 6)
                continue
            torch_part = f"{r['torch_ms']:.4f} | {r['ratio']:.2f}" if "torch_ms" in r else "- | -"
            later = f" ({r['run']})" if "run" in r else ""
            out.append(f"| {r['net']} | {r['case']} | {dims} | {r['bytes'] / 2**20:.1f} | {r['miopy_ms']:.4f} | "
                       f"{r['gbs']:.0f} | {r['pct_copy']:.0f} | {torch_part} | {r['solver']}{later} |")
        out.append("")
    return out


def targets(results: list[dict], big_mib: float = 64, min_pct: float = 70, max_ratio: float = 1.2) -> list[str]:
    """The issue's two targets over every row: which rows meet them and which miss (with their numbers)."""
    rows = [r for res in results for r in res["rows"] if "error" not in r]

    def name(r: dict) -> str:
        later = f", {r['run']}" if "run" in r else ""
        return f"{r['case']} {'x'.join(map(str, r['dims']))} ({r['solver']}{later})"
    timed = [r for r in rows if "ratio" in r]
    slow = [r for r in timed if r["ratio"] > max_ratio]
    big = [r for r in rows if r["bytes"] >= big_mib * 2**20]
    low = [r for r in big if r["pct_copy"] < min_pct]
    out = ["**Against the targets** (computed from the rows above):", "",
           f"- <= {max_ratio}x PyTorch's time: met on {len(timed) - len(slow)} of {len(timed)} rows with a PyTorch "
           "counterpart; missed on " + ("; ".join(f"{name(r)} {r['ratio']:.2f}x" for r in slow) or "none") + ".",
           f"- >= {min_pct:.0f}% of copy bandwidth on tensors >= {big_mib:.0f} MiB: met on {len(big) - len(low)} of "
           f"{len(big)} rows; missed on " + ("; ".join(f"{name(r)} {r['pct_copy']:.0f}%" for r in low) or "none") + "."]
    return out + [""]


if __name__ == "__main__":
    sys.exit(run())
