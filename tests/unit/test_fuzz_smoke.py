"""A smoke run of the fuzz bench (issue 48, item 4): ``python -m bench.fuzz`` for a few
seconds per target from its ten smallest seeds (the whole corpus is replayed, without the
fuzzer's instrumentation, by tests/unit/test_fuzz_corpus.py), as CI runs it: every target starts under atheris, executes inputs,
reports its coverage, and finds nothing (a finding fails the run with its file named).
The long runs are by hand: docs/benchmarks.md.

atheris has wheels for Linux on x86_64 only (the test extra installs it there); elsewhere
the test skips, except under ``CI=true``.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

from fuzz import targets

ROOT = pathlib.Path(__file__).resolve().parents[2]
SECONDS = 3


def _needs_atheris() -> None:
    if importlib.util.find_spec("atheris") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("atheris is not installed (pip install -e '.[test]')")
        pytest.skip("atheris is not installed")


def test_every_target_fuzzes_for_a_few_seconds_and_finds_nothing(tmp_path: pathlib.Path) -> None:
    _needs_atheris()
    done = subprocess.run(
        [sys.executable, "-m", "bench.fuzz", "--seconds", str(SECONDS), "--max-seeds", "10",
         "--findings", str(tmp_path / "findings")],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    rows = {m.group(1): m for m in re.finditer(
        r"^\| (\w+) \| \d+ \(\d+\) \| ([\d,]+) \| [\d,]+ \([\d,]+\) \| ([\d,]+) / ([\d,]+) \|"
        r".*\| none \|$",
        done.stdout, re.MULTILINE)}
    assert set(rows) == set(targets.TARGETS), done.stdout
    for target, row in rows.items():
        assert int(row.group(2).replace(",", "")) > 0, (target, done.stdout)
        assert int(row.group(3).replace(",", "")) > 0, (target, done.stdout)  # edges reached


def test_a_grown_corpus_merges_in_only_what_adds_coverage(tmp_path: pathlib.Path) -> None:
    """``bench.fuzz --merge``, as a long run's grown corpus is merged into the repository's:
    the corpus keeps its own inputs, an input it already has is not added again, and one
    that reaches more of the reader is."""
    _needs_atheris()
    corpus, offered = tmp_path / "corpus" / "csl", tmp_path / "grown" / "csl"
    corpus.mkdir(parents=True)
    offered.mkdir(parents=True)
    (corpus / "empty-list").write_bytes(b"[]")
    (offered / "the-same").write_bytes(b"[]")
    item = (b'[{"id": "keller2019", "type": "article-journal", "title": "Map matching", '
            b'"author": [{"family": "Keller", "given": "A."}], "issued": {"date-parts": '
            b'[[2019]]}, "DOI": "10.1000/x", "page": "12-19"}]')
    (offered / "an-item").write_bytes(item)
    done = subprocess.run(
        [sys.executable, "-m", "bench.fuzz", "--merge", str(tmp_path / "grown"), "--corpus",
         str(tmp_path / "corpus"), "--target", "csl"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    assert "| csl | 1 | 2 | 1 |" in done.stdout, done.stdout
    kept = sorted(p.read_bytes() for p in corpus.iterdir())
    assert kept == sorted([b"[]", item])
