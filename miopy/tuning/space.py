"""The search space strategies walk: one solver's valid grid points on one problem and device."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..db import params_key
from ..device import DeviceInfo
from ..solver import Params, Problem, Solver


@dataclass(frozen=True)
class SearchSpace:
    """Valid points in grid order, the grid they come from, and the solver's default point; optionally the
    priors a search may use (miopy.tuning.priors): hints (other problems' tuned params valid here) and
    order (every point, most promising first by a cost estimate; empty when there is none)."""

    grid: Mapping[str, tuple]
    points: tuple[Params, ...]
    default: Params
    hints: tuple[Params, ...] = ()
    order: tuple[Params, ...] = ()
    _keys: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_keys", frozenset(params_key(p) for p in self.points))

    @classmethod
    def of(cls, solver: Solver, problem: Problem, dev: DeviceInfo) -> SearchSpace:
        return cls(dict(solver.grid), tuple(solver.search_space(problem, dev)), solver.default_params(problem, dev))

    def __len__(self) -> int:
        return len(self.points)

    def __contains__(self, params: Params) -> bool:
        return params_key(params) in self._keys

    def neighbours(self, params: Params) -> list[Params]:
        """Valid points that differ from params in one parameter, by one step along that parameter's grid."""
        out = []
        for name, values in self.grid.items():
            if params.get(name) not in values:
                continue
            i = values.index(params[name])
            for j in (i - 1, i + 1):
                candidate = {**params, name: values[j]} if 0 <= j < len(values) else None
                if candidate is not None and candidate in self:
                    out.append(candidate)
        return out
