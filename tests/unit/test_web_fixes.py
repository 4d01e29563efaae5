"""The CSV of the citations to fix (citerun.web.fixes) and sizes in words (units)."""

from __future__ import annotations

import csv
import io
from typing import Any

from citerun.web.fixes import citations_to_fix_csv, to_fix
from citerun.web.units import human_bytes


def _citation(ordinal: int, verdict: str, **more: Any) -> dict[str, Any]:
    return {"ordinal": ordinal, "key": f"k{ordinal}", "marker": f"[{ordinal}]",
            "claim": f"Claim {ordinal}.", "page": ordinal + 2, "locator": None,
            "source": {"document_id": "d" * 64, "filename": f"s{ordinal}.pdf", "title": None},
            "verdict": verdict, "confidence": 0.5, "rationale": f"because {ordinal}",
            "evidence": [], "quotations": [], "page_check": None, **more}


def test_one_row_per_citation_not_plainly_supported_in_reading_order() -> None:
    report = {"name": "thesis", "citations": [
        _citation(3, "contradicted"),
        _citation(1, "supported"),
        _citation(2, "supported", locator="45",
                  page_check={"status": "mismatch", "found": ["1"],
                              "reason": "cited 45, found on 1"}),
        _citation(4, "supported", quotations=[{"quote": "x", "status": "altered",
                                               "pages": ["3"],
                                               "difference": 'changed "rose" to "fell"'}]),
        _citation(5, "unresolved_citation", source=None, reference="Smith 2020 (no PDF)"),
        _citation(6, "partially_supported"),
    ]}
    rows = to_fix(report)
    assert [r["cited_key"] for r in rows] == ["k2", "k3", "k4", "k5", "k6"]
    assert rows[0]["reason"] == "because 2; wrong page: cited 45, found on 1"
    assert rows[0]["page_cited"] == "45" and rows[0]["thesis_page"] == "4"
    assert rows[1]["verdict"] == "contradicted" and rows[1]["source"] == "s3.pdf"
    assert 'quotation altered: changed "rose" to "fell"' in rows[2]["reason"]
    assert rows[3]["source"] == "Smith 2020 (no PDF)"
    assert rows[4]["verdict"] == "partially supported"

    parsed = list(csv.reader(io.StringIO(citations_to_fix_csv(report))))
    assert parsed[0] == ["thesis_page", "marker", "cited_key", "page_cited", "claim",
                         "source", "verdict", "reason"]
    assert len(parsed) == 6


def test_a_cell_a_spreadsheet_would_run_is_defused() -> None:
    report = {"citations": [_citation(1, "unsupported", claim='=HYPERLINK("http://x")',
                                      rationale="-1 evidence\nsecond line")]}
    row = list(csv.DictReader(io.StringIO(citations_to_fix_csv(report))))[0]
    assert row["claim"] == "'=HYPERLINK(\"http://x\")"
    assert row["reason"] == "'-1 evidence second line"


def test_an_all_supported_report_has_only_the_header() -> None:
    report = {"citations": [_citation(1, "supported"), _citation(2, "supported")]}
    assert citations_to_fix_csv(report).splitlines() == [
        "thesis_page,marker,cited_key,page_cited,claim,source,verdict,reason"]


def test_sizes_in_words() -> None:
    assert human_bytes(0) == "0 bytes"
    assert human_bytes(1) == "1 byte"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(400_000) == "390 KiB"
    assert human_bytes(120_000_000) == "114 MiB"
    assert human_bytes(5 << 30) == "5 GiB"
