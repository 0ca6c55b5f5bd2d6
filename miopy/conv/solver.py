"""Where ConvSolver was: it lives in miopy.conv.solvers.common (each family keeps its solver base in
solvers/common.py). Kept only for modules being split elsewhere at the time of the move (conv/solvers/mma.py);
import ConvSolver from miopy.conv.solvers.common, and delete this module once nothing imports it."""
from __future__ import annotations

from .solvers.common import ConvSolver

__all__ = ["ConvSolver"]
