"""The HTML report lists the most doubtful citations first (the JSON keeps reading order)."""

from __future__ import annotations

from citerun.pipeline import judge, report

from tests.unit import report_fixtures


def test_the_html_lists_the_riskiest_citations_first() -> None:
    built = report_fixtures.sample_report()
    html = report.render_html(built)
    ordered = sorted(built.citations, key=report.risk)
    positions = [html.index(f'id="citation-{c.ordinal}"') for c in ordered]
    assert positions == sorted(positions)
    ranks = [report.risk(c)[0] for c in ordered]
    assert ranks == sorted(ranks)
    verdicts = [c.verdict for c in ordered]
    if judge.Verdict.CONTRADICTED in verdicts and judge.Verdict.SUPPORTED in verdicts:
        assert verdicts.index(judge.Verdict.CONTRADICTED) < verdicts.index(judge.Verdict.SUPPORTED)
    assert [c.ordinal for c in built.citations] == sorted(c.ordinal for c in built.citations)


def test_a_less_sure_support_comes_before_a_sure_one() -> None:
    built = report_fixtures.sample_report()
    (first, *_) = built.citations
    sure = first.model_copy(update={"verdict": judge.Verdict.SUPPORTED, "confidence": 0.95, "ordinal": 1})
    unsure = first.model_copy(update={"verdict": judge.Verdict.SUPPORTED, "confidence": 0.55, "ordinal": 2})
    contradicted = first.model_copy(update={"verdict": judge.Verdict.CONTRADICTED, "confidence": 0.9,
                                            "ordinal": 3})
    assert sorted([sure, unsure, contradicted], key=report.risk) == [contradicted, unsure, sure]
