"""The exceptions miopy raises. Every error the library raises on purpose is a MiopyError."""
from __future__ import annotations


class MiopyError(Exception):
    """Base class of every error miopy raises on purpose."""


class BadParam(MiopyError, ValueError):
    """An argument is invalid; ``field`` names it."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


class NotApplicable(MiopyError):
    """A solver does not apply to a problem; the message says why."""


class NotSupported(MiopyError):
    """A valid request that miopy cannot serve (no solver, unsupported combination)."""


class CompileError(MiopyError):
    """An OpenCL program failed to build; the message holds the build log."""


class LaunchError(MiopyError):
    """A kernel launch failed (out of resources, invalid work-group size, ...)."""


class OutOfResources(MiopyError):
    """The device cannot hold what the call needs (a buffer over its largest allocation or its memory, or
    an allocation that failed at run time); nothing was written."""


class DeviceNotFound(MiopyError):
    """No usable OpenCL device."""


def check(cond: bool, field: str, message: str) -> None:
    """Raise BadParam(field, message) unless cond holds."""
    if not cond:
        raise BadParam(field, message)
