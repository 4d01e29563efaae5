"""A small report with every verdict, shared by the report tests."""

from __future__ import annotations

import datetime
import functools

from citerun.pipeline import judge, pdf, report
from citerun.pipeline import layout as pdf_layout
from tests.unit import pdf_fixtures

XSS_CLAIM = 'Exercise <script>alert("x")</script> & "quotes" reduce anxiety.'


EVIDENCE_QUOTE = "Adults who exercised regularly reported fewer symptoms of anxiety."


@functools.cache
def _source_page() -> pdf.Page:
    """Page 7 of smith2020.pdf, parsed and rendered by the real pipeline."""
    filler = [f"Filler page {n}." for n in range(1, 7)]
    page_seven = [
        "Results", "", "We followed 212 adults for two years in a cohort study.",
        "Adults who exercised regularly reported fewer", "symptoms of anxiety.",
        "", "The effect held after adjusting for age and income.",
    ]
    data = pdf_fixtures.text_pdf([[line] for line in filler] + [page_seven])
    return pdf.parse_pdf(data, max_bytes=10 * 1024 * 1024).pages[6]


def page_images() -> dict[tuple[str, int], bytes]:
    """The rendered page that the first citation's evidence is located on."""
    image = _source_page().image
    assert image is not None
    return {("a" * 64, 7): image}


def _located(quote: str, page_start: int, score: float) -> report.EvidenceEntry:
    page = _source_page()
    boxes = pdf_layout.find_boxes(pdf_layout.line_rows(page.lines), quote, tight=True)
    return report.EvidenceEntry(
        quote=quote, page_start=page_start, page_end=page_start, score=score, page=page.number,
        page_width=page.width, page_height=page.height,
        boxes=[report.Box(x0=b[0], y0=b[1], x1=b[2], y1=b[3]) for b in boxes],
    )


# The order the HTML lists sample_report()'s citations in, written out by hand: the
# contradiction (3), the unsupported claim (4), the support with a wrong cited page (6),
# the part-support (2), the unresolved citation (5), then the clean support (1).
SAMPLE_RISK_ORDER = [3, 4, 6, 2, 5, 1]


def sample_report() -> report.Report:
    trial = report.CitationSource(document_id="a" * 64, filename="smith2020.pdf", title="Exercise and anxiety")
    cohort = report.CitationSource(document_id="b" * 64, filename="lee2019.pdf", title=None)
    V = judge.Verdict
    citations = [
        report.CitationEntry(
            ordinal=1, key="1", marker="[1]", claim="Regular exercise reduces anxiety in adults.",
            page=4, locator=None, source=trial, verdict=V.SUPPORTED, confidence=0.91,
            rationale="The best sentence states the claim.",
            evidence=[_located(EVIDENCE_QUOTE, 7, 0.93)],
            reference="Smith, J. (2020). Exercise and anxiety. Journal of Trials, 3, 1-10.",
            match=report.MatchInfo(method="reference", score=96.0, reason="title 100, first author, year"),
        ),
        report.CitationEntry(
            ordinal=2, key="1", marker="[1, p. 8]", claim=XSS_CLAIM, page=5, locator="8",
            source=trial, verdict=V.PARTIALLY_SUPPORTED, confidence=0.55,
            rationale="Covers only part <b>of</b> the claim.",
            evidence=[report.EvidenceEntry(quote="Anxiety fell </q><img src=x>.", page_start=8, page_end=9, score=0.6)],
        ),
        report.CitationEntry(
            ordinal=3, key="lee2019", marker="(Lee, 2019)", claim="Coffee is associated with liver cancer.",
            page=6, source=cohort, verdict=V.CONTRADICTED, confidence=0.88,
            rationale="The source says it is not associated.",
            evidence=[report.EvidenceEntry(
                quote="Coffee consumption was not associated with liver cancer.", page_start=3, page_end=3,
                score=0.9)],
        ),
        report.CitationEntry(
            ordinal=4, key="lee2019", marker="(Lee, 2019)", claim="Tea prevents all disease.", page=6,
            source=cohort, verdict=V.UNSUPPORTED, confidence=0.8, rationale="Nothing like it in the source.",
        ),
        report.CitationEntry(
            ordinal=5, key="mueller2018", marker="(Müller 2018: 12)", claim="Die Löhne sanken.", page=9,
            locator="12", source=None, verdict=V.UNRESOLVED_CITATION, confidence=1.0,
            rationale="No source matches this citation.",
            reference="Müller, H. (2018). Inflation und Löhne. Berlin: Springer.",
            match=report.MatchInfo(method=None, score=None, reason="no source matches the reference entry"),
        ),
        report.CitationEntry(
            ordinal=6, key="7", marker="[7, p. 45]", claim="Another supported claim.", page=10,
            locator="45", source=trial, verdict=V.SUPPORTED, confidence=0.8,
            rationale="Stated on page 2.",
            page_check=report.PageCheck(status="mismatch", found=["2"], reason="cited 45, found on 2"),
            evidence=[report.EvidenceEntry(quote="Another supported claim indeed.", page_start=2, page_end=2,
                                           score=0.8)],
        ),
    ]
    sources = [
        report.SourceEntry(document_id="a" * 64, filename="smith2020.pdf", title="Exercise and anxiety",
                           status=report.SourceStatus.PARSED, cited_by=3),
        report.SourceEntry(document_id="b" * 64, filename="lee2019.pdf", title=None,
                           status=report.SourceStatus.PARSED, cited_by=2),
        report.SourceEntry(document_id="d" * 64, filename="never_cited.pdf", title="Unrelated",
                           status=report.SourceStatus.PARSED),
        report.SourceEntry(document_id="c" * 64, filename="scan.pdf", title=None,
                           status=report.SourceStatus.FAILED, error="the PDF has no text layer"),
    ]
    return report.Report.build(
        run_id="0b7c6a4e-1111-2222-3333-444455556666",
        name="thesis-check",
        thesis=report.ThesisInfo(filename="thesis.pdf", title="Exercise <and> Mood", pages=42),
        sources=sources,
        citations=citations,
        created_at=datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
    )
