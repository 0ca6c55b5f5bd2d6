"""Fixtures of the reliability suite: the session's report, and a clean slate of warn_once per test."""
from __future__ import annotations

import time

import pytest

from miopy import log
from tests.reliability.faults import Report, report_path


@pytest.fixture(scope="session")
def report(handle):
    """The session's Report; written as JSON at the end where MIOPY_RELIABILITY_REPORT points."""
    started = time.monotonic()
    collected = Report()
    collected.device = f"{handle.info.name} ({handle.info.platform})"
    yield collected
    path = report_path()
    if path is not None:
        collected.write(path, time.monotonic() - started)


@pytest.fixture(autouse=True)
def first_warnings():
    """Each test sees miopy's warnings as a fresh process would: warn_once forgets what it said."""
    log._warned.clear()
    yield
    log._warned.clear()
