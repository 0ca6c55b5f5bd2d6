"""What both dropout solvers share: kernel arguments and the launch list (the draw, then the state advance)."""
from __future__ import annotations

from ...device import index_reason
from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, require_none, round_up
from ..problem import DropoutDirection, DropoutProblem

WG = 256
FORWARD_ARGS = ("x", "y", "reserve_space", "states", "threshold", "scale")
BACKWARD_ARGS = ("dy", "dx", "reserve_space", "scale")


def require_index_range(problem: DropoutProblem) -> None:
    """dropout.cl's element indices and work-item ids are 32-bit ints: NotApplicable past 2^31 elements."""
    require_none(index_reason(problem.x.element_span, problem.y.element_span))


def launches(problem: DropoutProblem, defines: dict, items: int) -> tuple[KernelLaunch, ...]:
    """The dropout kernel over items work-items, then (forward with state evolution) the state advance."""
    defines = {**defines, "COUNT": problem.x.element_count, "USE_MASK": int(problem.use_mask),
               **problem.dtype.defines}
    forward = problem.direction is DropoutDirection.FORWARD
    name, args = ("dropout_fwd", FORWARD_ARGS) if forward else ("dropout_bwd", BACKWARD_ARGS)
    main = KernelLaunch(KernelSpec.make("dropout.cl", name, defines), (round_up(items, WG),), (WG,), args)
    if not problem.state_evo:
        return (main,)
    return (main, KernelLaunch(KernelSpec.make("dropout.cl", "dropout_advance", defines), (1,), (1,), ("states",)))
