"""Running one batch-norm solver on host data, outputs poisoned first, for the batch-norm tests."""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from miopy.batchnorm.problem import BatchNormProblem, BnDirection
from miopy.plan import Plan, operands
from miopy.tensor import strided_view

EPSILON, FACTOR = 1e-3, 0.3
FORWARD = {"alpha": 1.0, "beta": 0.0, "epsilon": EPSILON, "factor": FACTOR}
BACKWARD = {"alpha_data": 1.0, "beta_data": 0.0, "alpha_param": 1.0, "beta_param": 0.0, "epsilon": EPSILON}
POSITIVE = ("running_var", "estimated_variance", "saved_inv_variance")


def random_host(problem: BatchNormProblem, seed: int, mean: float = 0.0) -> dict[str, np.ndarray]:
    """Flat host arrays over each role's span: data ~ N(mean, 1), variances in [0.5, 1.5), the rest N(0, 1)."""
    rng = np.random.default_rng(seed)
    host = {}
    for role, desc in problem.tensors().items():
        if role in POSITIVE:
            values = rng.random(desc.element_span) + 0.5
        else:
            values = rng.standard_normal(desc.element_span) + (mean if role in ("x",) else 0.0)
        host[role] = values.astype(desc.dtype.numpy)
    return host


def views(problem: BatchNormProblem, host: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {role: strided_view(host[role], desc.dims, desc.strides) for role, desc in problem.tensors().items()}


def run(handle, problem: BatchNormProblem, solution, host: dict[str, np.ndarray], scalars: dict | None = None,
        poison: bool = True) -> dict[str, np.ndarray]:
    """Run solution on copies of host (pure outputs poisoned with NaN); every role's logical view after."""
    tensors = problem.tensors()
    data = {role: a.copy() for role, a in host.items()}
    keep = {"running_mean", "running_var"} | ({"saved_mean", "saved_inv_variance"}
                                              if problem.direction is BnDirection.BACKWARD else set())
    for role in problem.outputs():
        if poison and role not in keep:
            data[role][...] = np.nan
    mf = cl.mem_flags
    bufs = [cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=data[role]) for role in tensors]
    plan = Plan(handle, solution, operands(tensors, problem.outputs()), problem=problem)
    defaults = BACKWARD if problem.direction is BnDirection.BACKWARD else FORWARD
    values = {k: np.float32(v) for k, v in {**defaults, **(scalars or {})}.items()}
    plan.run_values(tuple(bufs), scalars=values)
    for role, buf in zip(tensors, bufs):
        cl.enqueue_copy(handle.queue, data[role], buf)
    handle.finish()
    return views(problem, data)
