"""The conformance check every solver of every family passes (tests/test_conformance.py; a new family's tests
call it too): a solution run on random inputs (the family's prepare hook makes them valid) with its outputs
poisoned, inside a workspace of exactly its declared size followed by a guard, against the family's float64
reference at the family's bound."""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from miopy.accuracy import max_error
from miopy.find import random_host, run_poisoned, upload
from miopy.plan import plan_of
from miopy.tensor import strided_view

GUARD_BYTES = 256    # bytes past the declared workspace that a launch must leave alone
GUARD = 0xA5


def check_workspace_declared(solver, problem, solution) -> None:
    """The solution's workspace is what the solver declares for the problem (never dependent on params), and
    a solution whose launches take a workspace declares some."""
    declared = solver.workspace_bytes(problem)
    assert solution.workspace_bytes == declared, \
        f"{solver.id}: solution workspace {solution.workspace_bytes} != declared {declared} on {problem.key()}"
    users = [launch.spec.name for launch in solution.launches if "workspace" in launch.args]
    assert declared > 0 or not users, \
        f"{solver.id}: kernels {users} take a workspace, but the solver declares 0 bytes on {problem.key()}"


def check_solution(handle, solver, problem, params, seed: int = 0) -> float:
    """Run solver with params on problem against the float64 reference; asserts the bound and the workspace
    declaration, and that no launch wrote past the declared workspace. Returns the error."""
    solution = solver.solution(problem, params)
    check_workspace_declared(solver, problem, solution)
    declared = solution.workspace_bytes
    host = random_host(problem, seed)
    buffers = upload(handle, problem, host, declared + GUARD_BYTES)
    cl.enqueue_fill_buffer(handle.queue, buffers["workspace"], np.uint8(GUARD), 0, declared + GUARD_BYTES)
    got = run_poisoned(handle, problem, plan_of(handle, problem, solution), buffers)
    guard = np.empty(GUARD_BYTES, np.uint8)
    cl.enqueue_copy(handle.queue, guard, buffers["workspace"], src_offset=declared)
    handle.finish()
    assert (guard == GUARD).all(), f"{solver.id} {params} wrote past its {declared}-byte workspace on {problem.key()}"
    views = {role: strided_view(host[role], desc.dims, desc.strides) for role, desc in problem.tensors().items()}
    expected = problem.registry.reference(problem, views)
    limit = problem.registry.tolerance(solver, problem)
    errors = {role: max_error(got[role], want) for role, want in expected.items()}
    worst = max(errors, key=lambda role: errors[role])
    assert errors[worst] <= limit, \
        f"{solver.id} {params} on {problem.key()}: {worst} error {errors[worst]:.3g} > {limit:.3g}"
    return errors[worst]
