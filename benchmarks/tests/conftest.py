"""Fixtures of the benchmarks' tests (which run in CI with the library's: pyproject's testpaths): a private kernel
cache and user DB for the session, and the default OpenCL device's handle."""
import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _isolated_stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench-stores")
    os.environ["MIOPY_CACHE_DIR"] = str(root / "cache")
    os.environ["MIOPY_USER_DB_PATH"] = str(root / "user.db")
    yield


@pytest.fixture(scope="session")
def handle():
    import miopy
    return miopy.Handle()
