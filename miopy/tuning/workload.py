"""Inputs a tuning run times on, and the float64 answer its winner is checked against."""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import pyopencl as cl

from ..find import random_host, tensor_bytes
from ..handle import Handle
from ..plan import Plan, check_fits
from ..reference import max_error, strided_view
from ..solver import Problem, Solver


class Workload:
    """Random normal data for every tensor of a problem (and a workspace) on the device, with host copies
    for verification against the problem family's float64 reference."""

    def __init__(self, handle: Handle, problem: Problem, workspace_bytes: int, seed: int = 0):
        self.handle, self.problem = handle, problem
        check_fits(handle, {**tensor_bytes(problem), "workspace": workspace_bytes})   # before any host data
        self.host = random_host(problem, seed)
        self.buffers: dict = {}
        for role, host in self.host.items():
            self.buffers[role] = handle.alloc(host.nbytes)
            cl.enqueue_copy(handle.queue, self.buffers[role], host)
        self.buffers["workspace"] = handle.alloc(workspace_bytes)
        self.seed = seed
        self._expected: dict[str, np.ndarray] | None = None

    def error_of(self, plan: Plan, solver: Solver) -> str | None:
        """Run plan with its outputs poisoned (NaN); why it is wrong against float64, or None."""
        tensors = self.problem.tensors()
        for role in self.problem.outputs():
            poison = np.full(tensors[role].element_span, np.nan, tensors[role].dtype.numpy)
            cl.enqueue_copy(self.handle.queue, self.buffers[role], poison)
        plan.enqueue(self.buffers)
        limit = self.problem.registry.tolerance(solver, self.problem)
        for role, expected in self.expected().items():
            desc = tensors[role]
            got = np.empty(desc.element_span, desc.dtype.numpy)
            cl.enqueue_copy(self.handle.queue, got, self.buffers[role])
            self.handle.finish()
            err = max_error(strided_view(got, desc.dims, desc.strides), expected)
            if not err <= limit:
                return f"wrong result in {role}: max error {err:.3g} > tolerance {limit:.0e}"
        return None

    def expected(self) -> dict[str, np.ndarray]:
        """The float64 answer on this workload's inputs, shared with the process's other workloads of the same
        problem and seed (the inputs are the same: random_host is deterministic), so the solvers of one
        problem tuned one after the other (or as jobs of one distributed worker) compute it once."""
        if self._expected is None:
            self._expected = EXPECTED.get((self.problem, self.seed))
        if self._expected is None:
            views = {role: strided_view(self.host[role], desc.dims, desc.strides)
                     for role, desc in self.problem.tensors().items()}
            self._expected = self.problem.registry.reference(self.problem, views)
            EXPECTED.put((self.problem, self.seed), self._expected)
        return self._expected


class ExpectedCache:
    """Float64 reference outputs by (problem, seed), least recently used first out, at most max_bytes."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key) -> dict[str, np.ndarray] | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key, value: dict[str, np.ndarray]) -> None:
        size = sum(a.nbytes for a in value.values())
        if size > self.max_bytes:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while sum(a.nbytes for v in self._items.values() for a in v.values()) > self.max_bytes:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


EXPECTED = ExpectedCache(512 * 2**20)
