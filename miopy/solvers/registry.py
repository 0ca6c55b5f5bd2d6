"""The ordered solver registry. Order is the tie-break and the heuristic's preference: most specialised
first, the naive fallback last. Ids are stable strings; a retired id is never reused.
"""
from __future__ import annotations

from .. import config
from ..errors import BadParam
from .base import Solver
from .direct_local import ConvDirectLocal
from .gemm_1x1 import ConvGemm1x1
from .im2col_gemm import ConvIm2colGemm
from .naive import ConvDirectNaive
from .winograd import ConvWinograd3x3F2, ConvWinograd3x3F4

ALL: tuple[Solver, ...] = (
    ConvWinograd3x3F4(),
    ConvWinograd3x3F2(),
    ConvGemm1x1(),
    ConvDirectLocal(),
    ConvIm2colGemm(),
    ConvDirectNaive(),
)

_BY_ID = {s.id: s for s in ALL}
assert len(_BY_ID) == len(ALL), "duplicate solver id"


def solvers() -> tuple[Solver, ...]:
    """The registry after MIOPY_FIND_ONLY_SOLVER and MIOPY_DISABLE_SOLVERS."""
    only, disabled = config.find_only_solver(), config.disabled_solvers()
    for name, ids in (("MIOPY_FIND_ONLY_SOLVER", {only} if only else set()), ("MIOPY_DISABLE_SOLVERS", disabled)):
        unknown = ids - set(_BY_ID)
        if unknown:
            raise BadParam(name, f"unknown solver id(s) {sorted(unknown)}; known: {sorted(_BY_ID)}")
    return tuple(s for s in ALL if (only is None or s.id == only) and s.id not in disabled)


def get(solver_id: str) -> Solver:
    """The solver with this id (whether or not the environment filters it out)."""
    try:
        return _BY_ID[solver_id]
    except KeyError:
        raise BadParam("solver", f"unknown solver id {solver_id!r}; known: {sorted(_BY_ID)}") from None
