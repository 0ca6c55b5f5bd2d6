"""The search space strategies walk: one solver's valid grid points on one problem and device."""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..db import params_key
from ..device import DeviceInfo
from ..solver import Params, Problem, Solver

_SPACES: OrderedDict = OrderedDict()   # SearchSpace.of's last 64 spaces
_LOCK = threading.Lock()


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
        """The space of solver on problem and dev, kept for the next ask (enumerating ConvDirectLocal's grid
        takes about a second; miopy-tune asks for each solver's space more than once)."""
        grid = tuple((name, tuple(values)) for name, values in solver.grid.items())
        key = (solver, problem, dev, grid)   # the grid as it is now: a changed grid is a new space
        with _LOCK:
            found = _SPACES.get(key)
        if found is None:
            found = cls(dict(grid), tuple(solver.search_space(problem, dev)), solver.default_params(problem, dev))
            with _LOCK:
                _SPACES[key] = found
                while len(_SPACES) > 64:
                    _SPACES.popitem(last=False)
        return found

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
