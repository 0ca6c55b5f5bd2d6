"""How a record's fields are stored and read back: canonical params JSON, stored times and provenance, and
the checks that turn a damaged or hand-edited row into _Malformed (a miss) rather than a wrong record."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from ..version import __version__


class _Malformed(ValueError):
    """A stored row whose fields do not have the types this module writes (damaged or edited by hand)."""


def params_key(params: Mapping[str, Any]) -> str:
    """Canonical JSON of params: how params are stored and compared."""
    return json.dumps(dict(params), sort_keys=True)


def _parsed_params(text: Any) -> dict:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        raise _Malformed(f"params {text!r} are not JSON") from None
    if not isinstance(value, dict):
        raise _Malformed(f"params {text!r} are not a JSON object")
    return value


def _parsed_time(value: Any, missing: float) -> float:
    """A stored time in ms; NULL (a failure, or no time) reads as missing."""
    if value is None:
        return missing
    if type(value) not in (int, float) or not value >= 0:
        raise _Malformed(f"time {value!r} is not a number of ms")
    return float(value)


def _typed(value: Any, kind: type, what: str) -> Any:
    if type(value) is not kind:
        raise _Malformed(f"{what} {value!r} is not of type {kind.__name__}")
    return value


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _stamp() -> tuple[str, str]:
    return __version__, datetime.now(timezone.utc).isoformat(timespec="seconds")
