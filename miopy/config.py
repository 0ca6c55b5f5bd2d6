"""Every MIOPY_* environment knob, read in one place (at call time, so tests can set them)."""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import platformdirs

APP = "miopy"


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else None


def _flag(name: str) -> bool:
    return (_env(name) or "0").lower() in ("1", "true", "yes", "on")


def cache_dir() -> Path:
    """Kernel binary cache directory (MIOPY_CACHE_DIR or the user cache dir)."""
    return Path(_env("MIOPY_CACHE_DIR") or platformdirs.user_cache_dir(APP))


def cache_disabled() -> bool:
    """MIOPY_DISABLE_CACHE=1 keeps compiled kernels in memory only."""
    return _flag("MIOPY_DISABLE_CACHE")


def cache_binaries() -> bool | None:
    """MIOPY_CACHE_BINARIES=1: kernel cache entries hold program binaries; 0: verified markers only (the
    driver's own cache keeps binaries); unset: decided per device (miopy.kernel_cache)."""
    value = _env("MIOPY_CACHE_BINARIES")
    return None if value is None else _flag("MIOPY_CACHE_BINARIES")


def user_dir(kind: Callable[[str | None], str], app: str | None = APP) -> Path | None:
    """platformdirs' directory of this kind (user_data_dir, user_cache_dir) for app, or None when there is no
    home directory to hold it (HOME unset and no passwd entry): platformdirs then raises RuntimeError, or
    (older versions) returns an unexpanded, relative '~/...'."""
    try:
        path = Path(kind(app))
    except RuntimeError:
        return None
    return path if path.is_absolute() else None


def user_db_path() -> Path | None:
    """User perf DB and find DB file (MIOPY_USER_DB_PATH or the user data dir); None when neither gives one."""
    explicit = _env("MIOPY_USER_DB_PATH")
    if explicit:
        return Path(explicit)
    data_dir = user_dir(platformdirs.user_data_dir)
    return data_dir / "miopy_user.db" if data_dir is not None else None


def system_db_path() -> Path:
    """Read-only system perf DB (MIOPY_SYSTEM_DB_PATH or the copy shipped in the package)."""
    return Path(_env("MIOPY_SYSTEM_DB_PATH") or Path(__file__).parent / "data" / "system_perf.db")


def find_verify() -> bool:
    """MIOPY_FIND_VERIFY=0 turns off find's accuracy check of each candidate's output (on by default)."""
    return (_env("MIOPY_FIND_VERIFY") or "1").lower() not in ("0", "false", "no", "off")


def find_check_on_device() -> bool:
    """MIOPY_FIND_CHECK_DEVICE=0: find's accuracy check reads each candidate's outputs back and compares them
    with the naive solver's in NumPy, as before, instead of comparing on the device (the default)."""
    return _env("MIOPY_FIND_CHECK_DEVICE") != "0"


def find_compile() -> str:
    """MIOPY_FIND_COMPILE=auto|threads|processes: how find compiles its cold candidates in parallel. auto (the
    default): helper processes on NVIDIA's OpenCL (whose compiler does not run in parallel within one
    process), threads elsewhere. An invalid value is auto."""
    value = (_env("MIOPY_FIND_COMPILE") or "auto").strip().lower()
    return value if value in ("auto", "threads", "processes") else "auto"


def find_jobs() -> int:
    """MIOPY_FIND_JOBS=<n>: threads (or helper processes: find_compile) find compiles its candidates' kernels
    in (default min(8, CPUs); 1: one at a time). An invalid value is the default."""
    default = min(8, os.cpu_count() or 1)
    try:
        return max(1, int(_env("MIOPY_FIND_JOBS") or default))
    except ValueError:
        return default


def heuristic_model() -> str | None:
    """MIOPY_HEURISTIC_MODEL=<path>: the immediate-mode model file to use instead of the shipped ones."""
    return _env("MIOPY_HEURISTIC_MODEL")


def find_only_solver() -> str | None:
    """MIOPY_FIND_ONLY_SOLVER=<id>: the registry holds only this solver."""
    return _env("MIOPY_FIND_ONLY_SOLVER")


def disabled_solvers() -> frozenset[str]:
    """MIOPY_DISABLE_SOLVERS=<id,...>: solvers left out of the registry."""
    raw = _env("MIOPY_DISABLE_SOLVERS") or ""
    return frozenset(s.strip() for s in raw.split(",") if s.strip())


def find_mode() -> str | None:
    """MIOPY_FIND_MODE: normal, fast or hybrid."""
    return _env("MIOPY_FIND_MODE")


def find_enforce() -> str | None:
    """MIOPY_FIND_ENFORCE: search, db_update or db_clean."""
    return _env("MIOPY_FIND_ENFORCE")


def log_cmd() -> bool:
    """MIOPY_LOG_CMD=1 logs each convolution call as a miopy-driver command."""
    return _flag("MIOPY_LOG_CMD")


def math_mode() -> str | None:
    """MIOPY_MATH_MODE: strict or tf32, the math mode of convolutions whose descriptor and handle name none
    (miopy.conv.problem.resolve_math_mode)."""
    return _env("MIOPY_MATH_MODE")
