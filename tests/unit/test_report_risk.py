"""The HTML report lists the most doubtful citations first (the JSON keeps reading order).

The expected orders are written out by hand from the rule, not computed with
``report.risk``: a contradiction, then a claim the source does not make, then
part-support, then what could not be judged (no reference entry matched, then the
source unreadable), then support; within a positive verdict the less sure first, within
a negative verdict the surer first; ties in reading order.
"""

from __future__ import annotations

from citerun.pipeline import judge, report

from tests.unit import report_fixtures

V = judge.Verdict


def _html_order(built: report.Report) -> list[int]:
    """The ordinals of the citations in the order the HTML page shows them."""
    page = report.render_html(built)
    return sorted((c.ordinal for c in built.citations),
                  key=lambda ordinal: page.index(f'id="citation-{ordinal}"'))


def _citations(*specs: tuple[V, float]) -> report.Report:
    """A report whose citations have the given verdicts and confidences, ordinals 1.."""
    built = report_fixtures.sample_report()
    first = built.citations[0]
    citations = [first.model_copy(update={"ordinal": n, "verdict": verdict, "confidence": sure})
                 for n, (verdict, sure) in enumerate(specs, 1)]
    return built.model_copy(update={"citations": citations,
                                    "summary": report.summarize(citations)})


def test_the_html_lists_the_riskiest_citations_first() -> None:
    built = report_fixtures.sample_report()
    assert _html_order(built) == report_fixtures.SAMPLE_RISK_ORDER
    assert [c.ordinal for c in built.citations] == [1, 2, 3, 4, 5, 6]  # the JSON: reading order


def test_verdicts_are_ranked_contradiction_first_support_last() -> None:
    built = _citations((V.SUPPORTED, 0.5), (V.SOURCE_UNAVAILABLE, 1.0),
                       (V.UNRESOLVED_CITATION, 1.0), (V.PARTIALLY_SUPPORTED, 0.5),
                       (V.UNSUPPORTED, 0.5), (V.CONTRADICTED, 0.5))
    assert _html_order(built) == [6, 5, 4, 3, 2, 1]


def test_a_less_sure_support_comes_before_a_sure_one() -> None:
    built = _citations((V.SUPPORTED, 0.95), (V.SUPPORTED, 0.55), (V.CONTRADICTED, 0.9),
                       (V.PARTIALLY_SUPPORTED, 0.9), (V.PARTIALLY_SUPPORTED, 0.6))
    assert _html_order(built) == [3, 5, 4, 2, 1]


def test_a_sure_contradiction_comes_before_an_unsure_one_then_reading_order() -> None:
    built = _citations((V.CONTRADICTED, 0.6), (V.UNSUPPORTED, 0.7), (V.CONTRADICTED, 0.9),
                       (V.UNSUPPORTED, 0.95), (V.SUPPORTED, 0.8), (V.SUPPORTED, 0.8))
    assert _html_order(built) == [3, 1, 4, 2, 5, 6]
