"""Logging helpers: the library logs under 'miopy.*' and warns once per distinct message."""
from __future__ import annotations

import logging
import threading

_warned: set[str] = set()
_lock = threading.Lock()


def warn_once(logger: logging.Logger, message: str) -> None:
    """Log message at WARNING the first time it is seen in this process, at DEBUG after that."""
    with _lock:
        first = message not in _warned
        _warned.add(message)
    logger.log(logging.WARNING if first else logging.DEBUG, message)
