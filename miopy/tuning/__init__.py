"""Tuning: search strategies over a solver's grid, a runner that compiles in parallel and times on the
device, a tuning log so runs resume, and the user perf DB as the destination of every verified winner."""
from .compile_ahead import Compiler
from .runner import GuardedRunner, Measurement, ReplayRunner, TuneOptions
from .space import SearchSpace
from .strategies import STRATEGIES
from .tuner import DEFAULT_BUDGET, TuneResult, find_after_search, tunable, tune_problem, tune_solver

__all__ = ["Compiler", "DEFAULT_BUDGET", "GuardedRunner", "Measurement", "ReplayRunner", "STRATEGIES",
           "SearchSpace", "TuneOptions", "TuneResult", "find_after_search", "tunable", "tune_problem", "tune_solver"]
