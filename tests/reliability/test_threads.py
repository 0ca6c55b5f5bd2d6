"""The threading model (docs/guide/caches_and_environment.md, Threads): a Handle may be shared by threads, and
each thread may have its own. 8 threads issue different convolutions (every direction, solvers with and without
workspace, alpha/beta blends, find on first use), all at once, on one shared handle and then on a handle each;
every result is checked against the float64 reference."""
import sys
import threading

import numpy as np
import pytest

import miopy
from miopy.accuracy import max_error
from miopy.conv import reference, registry
from miopy.conv.problem import OUTPUT_ROLE, Direction
from tests.helpers import make_problem

ITERATIONS = 8
# (direction, problem sizes n c h w k r s pad stride dilation groups, solver id or None for find, alpha, beta)
CASES = [
    (Direction.FORWARD, (1, 4, 6, 6, 4, 3, 3, 1, 1, 1, 1), "ConvDirectNaive", 1.0, 0.0),
    (Direction.FORWARD, (2, 6, 7, 5, 4, 3, 3, 0, 2, 1, 2), "ConvIm2colGemm", 1.0, 0.0),
    (Direction.FORWARD, (1, 8, 8, 8, 8, 3, 3, 1, 1, 1, 1), "ConvWinograd3x3F2", 0.5, 2.0),
    (Direction.BACKWARD_DATA, (1, 4, 6, 6, 4, 3, 3, 1, 1, 1, 1), "ConvDirectLocal", 1.0, 0.0),
    (Direction.BACKWARD_WEIGHTS, (2, 6, 7, 5, 4, 3, 3, 0, 2, 1, 2), "ConvIm2colGemm", 1.0, 0.0),
    (Direction.FORWARD, (2, 8, 5, 5, 6, 1, 1, 0, 1, 1, 1), "ConvGemm1x1", 1.0, 0.0),
    (Direction.BACKWARD_DATA, (1, 8, 8, 8, 8, 3, 3, 1, 1, 1, 1), "ConvWinograd3x3F2", 1.0, 1.0),
    (Direction.BACKWARD_WEIGHTS, (1, 4, 6, 6, 4, 3, 3, 1, 1, 1, 1), None, 1.0, 0.0),
]
CALLS = {Direction.FORWARD: miopy.convolution_forward, Direction.BACKWARD_DATA: miopy.convolution_backward_data,
         Direction.BACKWARD_WEIGHTS: miopy.convolution_backward_weights}


def _arguments(problem, arrays):
    """The direction's call arguments from forward-role arrays (x, w, y)."""
    x, w, y = ((desc, arrays[role]) for role, desc in (("x", problem.x), ("w", problem.w), ("y", problem.y)))
    first, second, out = {Direction.FORWARD: (x, w, y), Direction.BACKWARD_DATA: (y, w, x),
                          Direction.BACKWARD_WEIGHTS: (y, x, w)}[problem.direction]
    return (*first, *second, problem.conv, *out)


def _thread(handle, case, index, barrier, failures, done):
    """One thread's work; anything it raises is a failure of the test, never lost in the thread."""
    try:
        _work(handle, case, index, barrier, failures)
        done.append(index)
    except BaseException as exc:   # noqa: BLE001
        failures.append(f"case {index}: {type(exc).__name__}: {exc}")
        barrier.abort()


def _work(handle, case, index, barrier, failures):
    direction, sizes, solver_id, alpha, beta = case
    problem = make_problem(direction, *sizes)
    algo = None
    if solver_id is not None:
        solver = registry.get(solver_id)
        algo = miopy.ConvAlgoPerf(solver_id, solver.algorithm, 1.0, solver.workspace_bytes(problem),
                                  solver.default_params(problem, handle.info))
    tolerance = reference.tolerance(registry.get(solver_id or "ConvDirectNaive"), problem)
    out_role = OUTPUT_ROLE[direction]
    barrier.wait()
    for i in range(ITERATIONS):
        rng = np.random.default_rng(1000 * index + i)
        host = {role: rng.standard_normal(desc.dims).astype(np.float32)
                for role, desc in problem.tensors().items()}
        if beta == 0.0:
            host[out_role][...] = np.nan   # poison: unwritten elements show
        arrays = {role: handle.to_device(a) for role, a in host.items()}
        CALLS[direction](handle, *_arguments(problem, arrays), algo=algo, alpha=alpha, beta=beta)
        got = arrays[out_role].get(queue=handle.queue)
        expect = alpha * reference.solve(problem, host) + (beta * host[out_role] if beta else 0.0)
        error = max_error(got, expect)
        if not error <= tolerance:
            failures.append(f"case {index} ({solver_id} {direction.name}) iteration {i}: error {error:.3g}")


@pytest.mark.parametrize("sharing", ["one shared handle", "a handle per thread"])
def test_eight_threads_issue_different_convolutions_and_every_result_is_right(sharing, fresh_dbs, report):
    shared = miopy.Handle() if sharing == "one shared handle" else None
    barrier, failures, done = threading.Barrier(len(CASES)), [], []
    threads = [threading.Thread(target=_thread, args=(shared or miopy.Handle(), case, i, barrier, failures, done))
               for i, case in enumerate(CASES)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)   # switch threads often, also in the middle of a run's launches
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failures, failures
    assert sorted(done) == list(range(len(CASES)))
    report.tally(f"{len(CASES)} threads issuing different convolutions at once on {sharing} (every direction, "
                 "workspace solvers, alpha/beta blends, find on first use; threads switched every microsecond)",
                 f"every one of the {len(CASES) * ITERATIONS} results verified against float64; no exception",
                 "test_threads", repetitions=len(CASES) * ITERATIONS)
