"""Inputs a tuning run times on, and the answer its winner is checked against: float64 on the host, or for a
problem of more than find.HOST_CHECK_MAX_FLOPS the naive solver on the device, its own bound against
float64 added to the tolerance (as find's accuracy check does: a float64 reference of an AlexNet layer at
batch 128 costs seconds to tens of seconds on the host, the naive kernel milliseconds)."""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from ..accuracy import max_error
from ..errors import MiopyError
from ..find import HOST_CHECK_MAX_FLOPS, naive_plan, random_host, run_poisoned, tensor_bytes, upload
from ..handle import Handle
from ..plan import Plan, check_fits
from ..solver import Problem, Solver
from ..tensor import strided_view

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Expected:
    """The outputs a winner must match, the bound of the reference itself (0 for float64) and where they came
    from."""

    arrays: dict
    bound: float = 0.0
    how: str = "float64 on the host"

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values())


class Workload:
    """Random normal data for every tensor of a problem (and a workspace) on the device, with host copies
    for verification against the problem family's float64 reference."""

    def __init__(self, handle: Handle, problem: Problem, workspace_bytes: int, seed: int = 0):
        self.handle, self.problem = handle, problem
        check_fits(handle, {**tensor_bytes(problem), "workspace": workspace_bytes})   # before any host data
        self.host = host_data(problem, seed)
        self.buffers = upload(handle, problem, self.host, workspace_bytes)
        self.seed = seed
        self._expected: Expected | None = None

    def error_of(self, plan: Plan, solver: Solver) -> str | None:
        """Run plan with its outputs poisoned (NaN); why it is wrong against the expected answer, or None."""
        expected = self.reference()
        got = run_poisoned(self.handle, self.problem, plan, self.buffers)
        limit = self.problem.registry.tolerance(solver, self.problem) + expected.bound
        for role, want in expected.arrays.items():
            err = max_error(got[role], want)
            if not err <= limit:
                return f"wrong result in {role}: max error {err:.3g} > tolerance {limit:.1e} ({expected.how})"
        return None

    def expected(self) -> dict[str, np.ndarray]:
        """The expected outputs on this workload's inputs (see reference())."""
        return self.reference().arrays

    def reference(self) -> Expected:
        """The answer on this workload's inputs, shared with the process's other workloads of the same problem
        and seed (the inputs are the same: random_host is deterministic), so the solvers of one problem tuned
        one after the other (or as jobs of one distributed worker) compute it once. Float64 on the host, or
        above HOST_CHECK_MAX_FLOPS the naive solver on the device when one applies and runs."""
        if self._expected is None:
            self._expected = EXPECTED.get((self.problem, self.seed))
        if self._expected is None:
            flops = getattr(self.problem, "flops", None)
            if flops is not None and flops() > HOST_CHECK_MAX_FLOPS:
                self._expected = self._from_naive()
            if self._expected is None:
                views = {role: strided_view(self.host[role], desc.dims, desc.strides)
                         for role, desc in self.problem.tensors().items()}
                self._expected = Expected(self.problem.registry.reference(self.problem, views))
            EXPECTED.put((self.problem, self.seed), self._expected)
        return self._expected

    def _from_naive(self) -> Expected | None:
        try:
            found = naive_plan(self.handle, self.problem)
            if found is None:
                return None
            naive, plan = found
            got = run_poisoned(self.handle, self.problem, plan, self.buffers)
        except (MiopyError, cl.Error) as exc:
            logger.info("tuning %s: the naive solver failed (%s); checking on the host", self.problem.key(), exc)
            return None
        return Expected({role: np.asarray(value, np.float64) for role, value in got.items()},
                        self.problem.registry.tolerance(naive, self.problem), f"{naive.id} on the device")


def host_data(problem: Problem, seed: int) -> dict[str, np.ndarray]:
    """random_host(problem, seed), kept for the next solver of the same problem (drawing the normals of an
    AlexNet layer at batch 128 takes about a second). Read-only: nothing writes to these arrays."""
    found = HOST.get((problem, seed))
    if found is None:
        found = random_host(problem, seed)
        for array in found.values():
            array.flags.writeable = False
        HOST.put((problem, seed), found)
    return found


class ExpectedCache:
    """Values (Expected, or dicts of arrays) by (problem, seed), least recently used first out, at most
    max_bytes."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _size(value) -> int:
        return value.nbytes if isinstance(value, Expected) else sum(a.nbytes for a in value.values())

    def get(self, key):
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key, value) -> None:
        if self._size(value) > self.max_bytes:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while sum(self._size(v) for v in self._items.values()) > self.max_bytes:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


EXPECTED = ExpectedCache(512 * 2**20)
HOST = ExpectedCache(512 * 2**20)
