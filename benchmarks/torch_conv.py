"""Convolutions through PyTorch beside miopy's: the same direction on the same tensors (cuDNN on the GPU, oneDNN on
the host), timed by CUDA events, and the float64 reference (through torch on the GPU where there is one, else
miopy's host reference). torch is imported only inside the functions that need it.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from benchmarks import harness
from miopy.conv import reference, registry
from miopy.conv.problem import ConvProblem, Direction

LETTERS = {"F": Direction.FORWARD, "B": Direction.BACKWARD_DATA, "W": Direction.BACKWARD_WEIGHTS}


def torch_call(problem: ConvProblem, x, w, y):
    """A no-argument callable computing problem's direction with PyTorch on torch tensors x, w, y."""
    import torch
    c = problem.conv
    if problem.direction is Direction.FORWARD:
        return lambda: torch.nn.functional.conv2d(x, w, None, c.stride, c.pad, c.dilation, c.groups)
    mask = [problem.direction is Direction.BACKWARD_DATA, problem.direction is Direction.BACKWARD_WEIGHTS, False]
    index = 0 if mask[0] else 1
    return lambda: torch.ops.aten.convolution_backward(y, x, w, None, c.stride, c.pad, c.dilation, False, [0, 0],
                                                       c.groups, mask)[index]


def host_tensors(problem: ConvProblem, seed: int = 0) -> dict[str, np.ndarray]:
    """Random normal x, w and y of problem's shapes in its data type."""
    rng = np.random.default_rng(seed)
    return {r: rng.standard_normal(d.dims).astype(d.dtype.numpy) for r, d in problem.tensors().items()}


def device_buffers(handle, tensors: Mapping[str, np.ndarray]) -> dict:
    """One read-write device buffer per host array, holding a copy of it."""
    import pyopencl as cl
    mf = cl.mem_flags
    return {r: cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a) for r, a in tensors.items()}


def float64_reference(problem: ConvProblem, tensors: Mapping[str, np.ndarray]) -> np.ndarray:
    """The exact result in float64: on the GPU through torch when it has one, else miopy's host reference."""
    torch = harness.load_torch()
    if torch is None:
        return reference.solve(problem, tensors)
    x, w, y = (torch.from_numpy(np.asarray(tensors[r], np.float64)).cuda() for r in "xwy")
    return torch_call(problem, x, w, y)().cpu().numpy()


def cudnn_ms(problem: ConvProblem, tensors: Mapping[str, np.ndarray], tf32: bool,
             iters: int = harness.ITERS) -> tuple[float, np.ndarray]:
    """cuDNN's median CUDA-event time for problem's direction (cudnn.benchmark; TF32 math or strict fp32; fp16
    tensors for fp16 problems), and its output as float32."""
    import torch
    torch.backends.cudnn.benchmark = True
    harness.set_tf32(torch, tf32)
    dtype = torch.float16 if problem.dtype.value == "FP16" else torch.float32
    x, w, y = (torch.from_numpy(np.ascontiguousarray(tensors[r])).to("cuda", dtype) for r in "xwy")
    call = torch_call(problem, x, w, y)
    ms = harness.cuda_ms(torch, call, iters=iters)
    out = call().float().cpu().numpy()
    del x, w, y
    return ms, out


def max_workspace(problem: ConvProblem, handle) -> int:
    """The largest workspace any applicable solver asks for on problem (4 bytes at least)."""
    return max([s.workspace_bytes(problem) for s in registry.solvers() if s.is_applicable(problem, handle.info)]
               + [4])
