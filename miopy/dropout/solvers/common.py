"""What both dropout solvers share: kernel arguments and the launch list (the draw, then the state advance)."""
from __future__ import annotations

from ...kernel_cache import KernelSpec
from ...solver import KernelLaunch, round_up
from ..problem import DropoutDirection, DropoutProblem

WG = 256
FORWARD_ARGS = ("x", "y", "reserve_space", "states", "threshold", "scale")
BACKWARD_ARGS = ("dy", "dx", "reserve_space", "scale")


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
