"""The test counts per directory in docs/architecture.md are pytest's collection, not a
number remembered (issue 42: the docs said 576 tests when there were 1,022)."""

from __future__ import annotations

import collections

from bench import tests_by_dir


def test_the_documented_counts_are_what_pytest_collects() -> None:
    collected = tests_by_dir.collect()
    assert sum(collected.values()) > 500 and "tests/unit" in collected
    stated = tests_by_dir.documented(tests_by_dir.ARCHITECTURE.read_text(encoding="utf-8"))
    assert stated == dict(collected), (
        "docs/architecture.md's test counts are stale: run `python -m bench.tests_by_dir "
        "--junit FILE --write` (or without --junit for counts alone)")


def test_a_junit_file_gives_times_and_outcomes_per_directory(tmp_path) -> None:
    xml = tmp_path / "r.xml"
    xml.write_text(
        '<testsuites><testsuite>'
        '<testcase classname="tests.unit.test_a" name="t1" file="tests/unit/test_a.py" time="1.5"/>'
        '<testcase classname="tests.unit.test_a" name="t2" file="tests/unit/test_a.py" time="0.5">'
        '<failure message="x"/></testcase>'
        '<testcase classname="tests.db.test_b" name="t3" time="60"><skipped/></testcase>'
        '</testsuite></testsuites>')
    times = tests_by_dir.junit_times(xml)
    assert times["tests/unit"][0] == 2.0 and times["tests/unit"][1] == {"passed": 1, "failed": 1}
    assert times["tests/db"][0] == 60.0 and times["tests/db"][1] == {"skipped": 1}
    table = tests_by_dir.table(collections.Counter({"tests/unit": 2, "tests/db": 1}), times)
    assert "| `tests/db` | 1 | 0 / 0 / 1 | 1.0 min |" in table
    assert tests_by_dir.documented(f"{tests_by_dir.SECTION}\n\n{table}\n") == {
        "tests/db": 1, "tests/unit": 2}


def test_a_parametrized_test_counts_once() -> None:
    """Some cases depend on the data at hand ($CITERUN_EVALDATA's PDFs): the count may not."""
    ids = ["tests/unit/test_a.py::test_x[one]", "tests/unit/test_a.py::test_x[two]",
           "tests/unit/test_a.py::test_y", "tests/db/test_b.py::TestC::test_z[1]"]
    assert tests_by_dir.functions_per_directory(ids) == {"tests/unit": 2, "tests/db": 1}
