"""The one list of primitive families.

Everything that works on every family iterates ``FAMILIES``: the top-level ``miopy`` namespace, the
driver's sub-commands, ``miopy-tune``, the layout test, the conformance test over every registry, the fuzz,
validation and big-tensor tests and the primitives benchmark. Adding a family is its package, its kernels,
its tests and one line here (docs/design.md, "Adding a family").

A family is a package ``miopy.<name>`` with the same modules in the same places:

==================  ==========================================================================================
``__init__``        public names (``__all__``); ``TOP_LEVEL``: those ``miopy`` re-exports
``descriptor``      the user's descriptors and enums (MIOpen's ``miopen*Descriptor_t``, ``*Mode_t``)
``problem``         the Problem (frozen; ``key``, ``tensors``, ``outputs``, ``direction``, ...) and Direction
``solvers/``        one file per Solver; ``solvers/common.py`` for what several of them share
``registry``        ``REGISTRY``: the ordered solvers, the reference hook and the ranking
``reference``       float64 NumPy ground truth and ``reference_outputs(problem, tensors)``
``api``             MIOpen's descriptor calls (``*_forward``, ``*_backward``) on memoised plans
``functional``      PyTorch's functional names on pyopencl arrays
``driver``          ``COMMANDS``, ``add_parsers(subparsers)`` (miopy-driver's sub-commands, MIOpenDriver's
                    names and flags) and ``problems(args)`` (the problems the flags describe: miopy-tune)
``samples``         small problems of every direction and dtype (conformance), and big ones (limits)
==================  ==========================================================================================

Nothing here imports a family until asked: the list is data, importable from any layer.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Family:
    """One primitive family: its name (the package ``miopy.<name>`` unless ``package`` says otherwise) and the
    families its package builds on (a family imports no other family's package but these)."""

    name: str
    needs: tuple[str, ...] = ()
    package: str = ""

    def __post_init__(self) -> None:
        if not self.package:
            object.__setattr__(self, "package", f"miopy.{self.name}")

    def module(self, part: str = "") -> ModuleType:
        """The family's package, or its module ``part`` (``"registry"``, ``"driver"``, ...), imported."""
        return importlib.import_module(f"{self.package}.{part}" if part else self.package)

    @property
    def registry(self) -> Any:
        """The family's solver registry (``miopy.<name>.registry.REGISTRY``)."""
        return self.module("registry").REGISTRY

    @property
    def exports(self) -> tuple[str, ...]:
        """The names ``miopy`` re-exports from the family (its package's ``TOP_LEVEL``)."""
        return tuple(self.module().TOP_LEVEL)


FAMILIES: tuple[Family, ...] = (
    Family("conv"),
    Family("activation"),
    Family("pooling"),
    Family("softmax"),
    Family("lrn"),
    Family("batchnorm"),
    Family("tensor_ops"),
    Family("dropout"),
    Family("fusion", needs=("conv", "activation", "batchnorm", "tensor_ops")),
)


def family(name: str) -> Family:
    """The family called name (KeyError names the known ones)."""
    for candidate in FAMILIES:
        if candidate.name == name:
            return candidate
    raise KeyError(f"no family {name!r}; known: {[f.name for f in FAMILIES]}")
