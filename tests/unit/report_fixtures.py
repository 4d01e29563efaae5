"""A small report with every verdict, shared by the report tests."""

from __future__ import annotations

import datetime

from citerun.worker.pipeline import judge, report

XSS_CLAIM = 'Exercise <script>alert("x")</script> & "quotes" reduce anxiety.'


def sample_report() -> report.Report:
    trial = report.CitationSource(document_id="a" * 64, filename="smith2020.pdf", title="Exercise and anxiety")
    cohort = report.CitationSource(document_id="b" * 64, filename="lee2019.pdf", title=None)
    V = judge.Verdict
    citations = [
        report.CitationEntry(
            ordinal=1, key="1", marker="[1]", claim="Regular exercise reduces anxiety in adults.",
            page=4, locator=None, source=trial, verdict=V.SUPPORTED, confidence=0.91,
            rationale="The best sentence states the claim.",
            evidence=[report.EvidenceEntry(
                quote="Adults who exercised regularly reported fewer symptoms of anxiety.",
                page_start=7, page_end=7, score=0.93)],
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
        ),
        report.CitationEntry(
            ordinal=6, key="7", marker="[7]", claim="Another supported claim.", page=10, source=trial,
            verdict=V.SUPPORTED, confidence=0.8, rationale="Stated on page 2.",
            evidence=[report.EvidenceEntry(quote="Another supported claim indeed.", page_start=2, page_end=2,
                                           score=0.8)],
        ),
    ]
    sources = [
        report.SourceEntry(document_id="a" * 64, filename="smith2020.pdf", title="Exercise and anxiety",
                           status=report.SourceStatus.PARSED),
        report.SourceEntry(document_id="b" * 64, filename="lee2019.pdf", title=None,
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
