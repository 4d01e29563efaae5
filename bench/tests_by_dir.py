"""The tests per directory: how many there are, and how long each directory took.

Usage (from the repository root)::

    python -m bench.tests_by_dir                          # counts, from pytest's collection
    python -m bench.tests_by_dir --junit .test-results.xml   # and times (scripts/test's)
    python -m bench.tests_by_dir --junit .test-results.xml --write   # the section of
                                                                     # docs/architecture.md

The counts are collected (``pytest --collect-only``), never written from memory;
``tests/unit/test_tests_by_dir.py`` fails when the section's counts differ from a fresh
collection. A parametrized test counts once (its cases are in the outcomes). The times come from a run's JUnit XML (``scripts/test`` writes
``.test-results.xml``; ``--junit`` again for each file of a run made in parts):
the sum of each test's own time (set-up and tear-down included), so they add up to the
run's pytest time, not to the wall time of the installs before it.
"""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

from bench.common import REPO
from bench.machine import basics, write_section

ARCHITECTURE = REPO / "docs" / "architecture.md"
SECTION = "## The tests, per directory"
_ROW = re.compile(r"^\| `([^`]+)` \| ([\d,]+) \|", re.M)


def directory_of(nodeid: str) -> str:
    """``tests/unit/test_x.py::test_y[a]`` -> ``tests/unit``."""
    return nodeid.split("::", 1)[0].rsplit("/", 1)[0]


def collect() -> collections.Counter[str]:
    """The number of test functions pytest collects, per directory of their file: a
    parametrized test counts once, since the cases of some depend on the data at hand
    (``$CITERUN_EVALDATA``'s real PDFs), and the count must not."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "CITERUN_NODE_TESTS": "1"})
    ids = [line for line in result.stdout.splitlines() if "::" in line]
    if result.returncode != 0 or not ids:
        raise RuntimeError(f"pytest --collect-only failed:\n{result.stdout[-2000:]}"
                           f"{result.stderr[-2000:]}")
    return functions_per_directory(ids)


def functions_per_directory(ids: list[str]) -> collections.Counter[str]:
    """Test node ids -> test functions per directory (a parametrized test once)."""
    return collections.Counter(directory_of(nodeid) for nodeid in
                               dict.fromkeys(nodeid.split("[", 1)[0] for nodeid in ids))


def junit_times(path: pathlib.Path) -> dict[str, tuple[float, collections.Counter[str]]]:
    """Per directory: the seconds its tests took, and how many passed, failed, skipped."""
    out: dict[str, tuple[float, collections.Counter[str]]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        file = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        directory = file.rsplit("/", 1)[0]
        seconds, outcomes = out.get(directory, (0.0, collections.Counter()))
        tags = {child.tag for child in case}
        outcome = ("failed" if tags & {"failure", "error"} else
                   "skipped" if "skipped" in tags else "passed")
        outcomes[outcome] += 1
        out[directory] = (seconds + float(case.get("time", 0)), outcomes)
    return out


def table(counts: collections.Counter[str],
          times: dict[str, tuple[float, collections.Counter[str]]] | None) -> str:
    head = "| directory | test functions | cases passed / failed / skipped | time |"
    rows = [head, "|---|---:|---|---:|"]
    for directory in sorted(counts):
        seconds, outcomes = (times or {}).get(directory, (None, collections.Counter()))
        ran = ("–" if not times else "not run" if directory not in times else
               f"{outcomes['passed']} / {outcomes['failed']} / {outcomes['skipped']}")
        took = "–" if seconds is None else f"{seconds / 60:.1f} min"
        rows.append(f"| `{directory}` | {counts[directory]:,} | {ran} | {took} |")
    total = sum(seconds for seconds, _ in (times or {}).values())
    cases: collections.Counter[str] = sum((o for _, o in (times or {}).values()),
                                          collections.Counter())
    ran_all = (f"{cases['passed']:,} / {cases['failed']} / {cases['skipped']}"
               if times else "")
    rows.append(f"| **all** | {sum(counts.values()):,} | {ran_all} | "
                f"{f'{total / 60:.1f} min' if times else '–'} |")
    return "\n".join(rows)


def documented(text: str) -> dict[str, int]:
    """The counts the section states, per directory."""
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0] if SECTION in text else ""
    return {d: int(n.replace(",", "")) for d, n in _ROW.findall(section)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--junit", type=pathlib.Path, action="append", default=[],
                        help="a run's JUnit XML, for times (again for each part of a run)")
    parser.add_argument("--write", action="store_true",
                        help=f"replace the section of {ARCHITECTURE.relative_to(REPO)}")
    args = parser.parse_args(argv)
    counts = collect()
    times: dict[str, tuple[float, collections.Counter[str]]] | None = None
    for path in args.junit:  # a run in parts (one file each): their directories add up
        for directory, (seconds, outcomes) in junit_times(path).items():
            before_s, before = (times or {}).get(directory, (0.0, collections.Counter()))
            times = {**(times or {}), directory: (before_s + seconds, before + outcomes)}
    text = table(counts, times)
    print(text)
    if args.write:
        machine = ", ".join(f"{k} {v}" for k, v in basics().items())
        how = ("Times: each test's own time from the JUnit XML of "
               f"{'one run' if len(args.junit) == 1 else f'a run in {len(args.junit)} parts'} "
               "(`scripts/test` writes `.test-results.xml`; then `python -m bench.tests_by_dir "
               "--junit .test-results.xml --write`), on " + machine + "."
               if times else "Times: not measured in this write (no `--junit`).")
        write_section(SECTION, f"{SECTION}\n\nCounted by `python -m bench.tests_by_dir` "
                      f"from pytest's collection (`tests/unit/test_tests_by_dir.py` fails "
                      f"when they are stale). {how}\n\n{text}\n", docs=ARCHITECTURE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
