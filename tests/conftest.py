import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _isolated_stores(tmp_path_factory):
    """Every test session gets its own kernel cache and user DB, so nothing leaks in from the machine."""
    root = tmp_path_factory.mktemp("miopy-stores")
    os.environ["MIOPY_CACHE_DIR"] = str(root / "cache")
    os.environ["MIOPY_USER_DB_PATH"] = str(root / "user.db")
    for var in ("MIOPY_FIND_ONLY_SOLVER", "MIOPY_DISABLE_SOLVERS", "MIOPY_FIND_MODE", "MIOPY_FIND_ENFORCE",
                "MIOPY_DISABLE_CACHE", "MIOPY_MATH_MODE", "MIOPY_FIND_VERIFY", "MIOPY_FIND_JOBS", "MIOPY_FIND_COMPILE",
                "MIOPY_FIND_CHECK_DEVICE",
                "MIOPY_HEURISTIC_MODEL"):
        os.environ.pop(var, None)
    # Find compiles in threads in the tests on every device: NVIDIA's default (helper processes, each holding
    # a context on the GPU) would start a pool in each of 16 test processes, and tests that count compiles
    # would count adopted binaries instead. tests/test_compile_pool.py asks for processes explicitly.
    os.environ["MIOPY_FIND_COMPILE"] = "threads"
    yield


@pytest.fixture(autouse=True)
def _own_user_db(tmp_path_factory, monkeypatch):
    """Each test its own user DB (outside its tmp_path, which some tests make read-only): a find record one
    test stores never serves another test's find."""
    monkeypatch.setenv("MIOPY_USER_DB_PATH", str(tmp_path_factory.mktemp("db") / "user.db"))


@pytest.fixture(scope="session")
def handle():
    import miopy
    return miopy.Handle()


@pytest.fixture
def cpu_handle(handle):
    """The session's handle, for tests that run a CPU-only solver's kernels (ConvCpuDirect, ConvCpuGemm):
    skipped on a GPU, where those solvers do not apply (their refusal there is tested on any device)."""
    if "CPU" not in handle.info.device_type:
        pytest.skip(f"a CPU solver's kernels; this device is {handle.info.device_type}")
    return handle


@pytest.fixture
def fresh_dbs(tmp_path, monkeypatch):
    """A new, empty user DB and no system DB, for tests that count what the DBs hold; returns its path."""
    path = tmp_path / "user.db"
    monkeypatch.setenv("MIOPY_USER_DB_PATH", str(path))
    monkeypatch.setenv("MIOPY_SYSTEM_DB_PATH", str(tmp_path / "no-system.db"))
    return path
