"""Solvers: one file per kernel family; see registry.py for the ordered list."""
from .base import KernelLaunch, Solution, Solver, require
from .registry import get, solvers

__all__ = ["KernelLaunch", "Solution", "Solver", "get", "require", "solvers"]
