"""benchmarks.gpu_tests without a device: the counts of a finished part, and of one its timeout cut short."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def gpu_tests():
    from benchmarks import gpu_tests
    return gpu_tests


def test_a_finished_part_counts_from_the_closing_line(gpu_tests):
    log = "tests/a.py::t PASSED [ 50%]\n== 1 failed, 1700 passed, 84 skipped, 3 deselected in 339.2s =="
    counts, complete = gpu_tests.counts_of(log)
    assert complete
    assert (counts["passed"], counts["failed"], counts["skipped"], counts["deselected"]) == (1700, 1, 84, 3)


def test_a_part_cut_short_counts_the_results_that_reported(gpu_tests):
    log = "\n".join(["[gw0] [  1%] PASSED tests/a.py::t1", "[gw1] [  2%] SKIPPED tests/a.py::t2",
                     "[gw1] [  3%] FAILED tests/b.py::t3[x-1]", "tests/c.py::t4 PASSED [ 4%]",
                     "tests/c.py::t5 ERROR [ 5%]", "tests/b.py::t6 ", "[gw0] [  6%] PASSED tests/d.py::t[a b]",
                     "[gw0] [  7%] PASSED tests/d.py::t[a c]", "timed out after 420 s"])
    counts, complete = gpu_tests.counts_of(log)
    assert not complete
    assert (counts["passed"], counts["skipped"], counts["failed"], counts["errors"]) == (4, 1, 1, 1)   # ids with spaces


def test_timed_out_output_is_decoded_text(gpu_tests):
    assert gpu_tests._text(b"[gw0] [ 1%] PASSED tests/a.py::t\n") == "[gw0] [ 1%] PASSED tests/a.py::t\n"
    assert gpu_tests._text(None) == "" and gpu_tests._text("x") == "x"


def test_the_two_suite_parts_split_the_suite_at_the_tensor_core_tests(gpu_tests):
    from pathlib import Path
    mma_args, _ = gpu_tests.PARTS["suite-mma"]
    rest_args, _ = gpu_tests.PARTS["suite-rest"]
    whole, _ = gpu_tests.PARTS["suite"]
    assert mma_args[:2] == rest_args[:2] == whole[:2]           # the same markers as the whole suite
    assert (Path(gpu_tests.ROOT) / gpu_tests.MMA_TESTS).is_file()
    assert mma_args[-1] == gpu_tests.MMA_TESTS and f"--ignore={gpu_tests.MMA_TESTS}" in rest_args


def test_gpu_tests_runs_pytest_as_a_subprocess_and_imports_no_tests():
    """benchmarks never import tests/: the suite runs in pytest subprocesses, the fault table through
    benchmarks.reliability."""
    import ast
    from pathlib import Path
    for path in Path(__file__).resolve().parents[1].rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n == "tests" or n.startswith("tests.") for n in names), f"{path} imports {names}"
