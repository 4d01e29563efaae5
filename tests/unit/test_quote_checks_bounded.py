"""Issue 41 (Low): quotation checks had no per-run bound and no reuse -- a sentence cited
K times was searched for K times, in the worker's process, outside any sandbox. The
report's checker (real quotation search over a real source's pages) searches a (claim,
source) pair once, and at most checks.MAX_QUOTE_CHECKS pairs per report; the rest are
counted and the report lists them under "Not taken"."""

from __future__ import annotations

import time

from citerun.pipeline.report import checks
from tests.support.hostile_claims import words

PAGES = [(str(n), words(700) + " ") for n in range(2000)]  # about 9.5 MB of text


def test_a_pair_is_searched_once_however_often_it_is_cited() -> None:
    checker = checks.Checker({"src": PAGES})
    slow = "As they put it, “" + "kakaka livivi torune " * 60 + "”."  # not found: slow
    started = time.process_time()
    first = checker.check_quotes(slow, "src")
    once = time.process_time() - started
    assert [q.status for q in first[0]] == ["not_found"]
    started = time.process_time()
    for _ in range(300):
        assert checker.check_quotes(slow, "src")[0] == first[0]
    assert time.process_time() - started < max(once, 0.01) * 5, once  # 300 for fewer than 5


def test_a_report_searches_a_bounded_number_of_pairs() -> None:
    checker = checks.Checker({"src": [("1", "The heat island was strongest at night.")]})
    claims = [f"Claim {n} says “the heat island was strongest at night”." for n in
              range(checks.MAX_QUOTE_CHECKS + 3)]
    results = [checker.check_quotes(claim, "src")[0] for claim in claims]
    assert all(r and r[0].status == "exact" for r in results[:checks.MAX_QUOTE_CHECKS])
    assert results[checks.MAX_QUOTE_CHECKS:] == [[], [], []]
    assert checker.unchecked == 3
    checker.check_quotes(claims[-1], "src")  # cited again: one more citation unchecked
    assert checker.unchecked == 4
