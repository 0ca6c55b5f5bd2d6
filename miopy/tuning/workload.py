"""Inputs a tuning run times on, and the float64 answer its winner is checked against."""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from .. import reference
from ..convolution import ConvProblem
from ..execute import OUTPUT_ROLE, Prepared
from ..handle import Handle


class Workload:
    """Random normal x, w, y (and a workspace) on the device, with host copies for verification."""

    def __init__(self, handle: Handle, problem: ConvProblem, workspace_bytes: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.handle, self.problem = handle, problem
        self.host = {role: rng.standard_normal(desc.element_span, dtype=np.float32)
                     for role, desc in (("x", problem.x), ("w", problem.w), ("y", problem.y))}
        mf = cl.mem_flags
        self.buffers = {role: cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a)
                        for role, a in self.host.items()}
        self.buffers["workspace"] = handle.alloc(workspace_bytes)
        self._expected: np.ndarray | None = None

    def error_of(self, prepared: Prepared, solver) -> str | None:
        """Run prepared with its output poisoned (NaN); why it is wrong against float64, or None."""
        role = OUTPUT_ROLE[self.problem.direction]
        desc = getattr(self.problem, role)
        out = self.buffers[role]
        cl.enqueue_copy(self.handle.queue, out, np.full(desc.element_span, np.nan, np.float32))
        prepared.enqueue(self.handle, self.buffers)
        got = np.empty(desc.element_span, np.float32)
        cl.enqueue_copy(self.handle.queue, got, out)
        self.handle.finish()
        err = reference.max_error(_view(got, desc), self.expected())
        limit = reference.tolerance(solver, self.problem)
        return None if err <= limit else f"wrong result: max error {err:.3g} > tolerance {limit:.0e}"

    def expected(self) -> np.ndarray:
        if self._expected is None:
            tensors = {role: _view(self.host[role], getattr(self.problem, role)) for role in ("x", "w", "y")}
            self._expected = reference.solve(self.problem, tensors)
        return self._expected


def _view(flat: np.ndarray, desc) -> np.ndarray:
    """The logical (N, C, H, W) tensor of a buffer laid out by desc's strides."""
    strides = tuple(s * flat.itemsize for s in desc.strides)
    return np.lib.stride_tricks.as_strided(flat, shape=desc.dims, strides=strides)
