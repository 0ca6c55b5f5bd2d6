"""The results pages cannot drift from their data: docs/results/ is what `python -m benchmarks.report` writes from
the committed results, and the catalog names every kept result file."""
from __future__ import annotations

import re

import pytest

from benchmarks import harness, report


@pytest.fixture(scope="module")
def catalog():
    return report.load_catalog()


def test_every_page_is_what_its_results_give(catalog):
    problems = report.check(list(report.PAGES), catalog)
    assert not problems, "docs/results/ differs from the results: run python -m benchmarks.report\n" + \
        "\n".join(problems[:60])


def test_the_catalog_names_every_kept_result_file_and_every_page(catalog):
    kept = {p.name for p in harness.RESULTS.glob("*.json")} - {report.CATALOG.name}
    assert set(catalog["files"]) == kept
    assert set(catalog["pages"]) == set(report.PAGES) == set(report.DESCRIPTIONS)
    for page, files in catalog["pages"].items():
        for name in files:
            assert catalog["files"][name]["page"] == page, name
    for name, entry in catalog["files"].items():
        assert entry.get("page") is None or name in catalog["pages"][entry["page"]], name
        assert not re.search(r"stop\d|round\d|-run\d", name), f"{name}: say what it is, not when it was made"
        assert entry.get("what") and entry.get("commit"), name


def test_the_index_lists_every_page_and_file(catalog):
    text = report.index(catalog)
    assert all(f"]({page}.md)" in text for page in report.PAGES)
    assert all(f"`{name}`" in text for name in catalog["files"])
