"""The quality benches on a handful of items, as commands, so that a changed query or
signature breaks a test here rather than the next measurement (issue 38: the SciFact bench
crashed on a fresh database after two queries gained a parameter).

The data come from ``CITERUN_EVALDATA`` (default ``<repo>/../shared/evaldata``); without
them the tests skip, except under ``CI=true``, where missing evaluation data is a failure.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

from evalsets import claims

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(os.environ.get("CITERUN_EVALDATA", ROOT.parent / "shared" / "evaldata"))


def _need(path: pathlib.Path) -> None:
    if not path.exists():
        message = f"evaluation data not found at {path} (set CITERUN_EVALDATA)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


def _bench(*args: str, timeout: float = 600) -> str:
    done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "CITERUN_EVALDATA": str(DATA)})
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


def test_scifact_bench_runs_on_a_fresh_database(tmp_path: pathlib.Path) -> None:
    """Five dev claims against the abstracts they cite and 20 others, stored with the
    worker's own queries in a new embedded Postgres: retrieval and judge tables come out."""
    _need(DATA / "scifact" / "corpus.jsonl")
    out = _bench("bench.quality.scifact", "--limit", "5", "--corpus-limit", "20",
                 "--data-dir", str(tmp_path / "pg"))
    assert re.search(r"nDCG@10", out), out
    assert re.search(r"macro-F1 \d\.\d{3}", out), out


def test_out_of_domain_bench_scores_every_set() -> None:
    """Five pairs of each set through the shipped judge: one row per set with its macro-F1."""
    _need(DATA / "claims")
    out = _bench("bench.quality.out_of_domain", "--limit", "5")
    for name in ("scifact", *claims.SETS):
        assert re.search(rf"^\| {re.escape(name)}\b.*\| \d\.\d{{3}} ", out, re.M), (name, out)


def test_contradiction_funnel_bench_counts_every_step() -> None:
    """Five pairs of two sets through the judge step by step (issue 50): one row per set,
    a right/said count and F1 for each step from the whole passage to the verdict."""
    _need(DATA / "claims")
    out = _bench("bench.quality.contradiction_funnel", "--limit", "5", "--sets", "scifact,healthver")
    for name in ("scifact", "healthver"):
        row = re.search(rf"^\| {name} \| \d+ \|(.*)$", out, re.M)
        assert row and len(re.findall(r"\d+/\d+ F1 \d\.\d\d", row.group(1))) == 7, out


def test_realpdf_bench_reads_one_paper_against_its_truth() -> None:
    """One real paper through the real-PDF bench's own evaluation (what ``--write`` tables)."""
    _need(DATA / "realpdf" / "pdfs" / "cermine_test2.pdf")
    out = _bench("bench.quality.realpdf", "--misses", "cermine_test2.pdf")
    assert "## entries wrong" in out and "## markers missed" in out, out


def test_judge_throughput_bench_runs_on_five_pairs() -> None:
    """The worker-like judge bench (speed and memory) on five SciFact pairs: its table."""
    _need(DATA / "scifact" / "corpus.jsonl")
    out = _bench("bench.pipeline.judge", "--limit", "5")
    assert "trained judge loaded" in out and re.search(r"\| \d+ \|", out), out
