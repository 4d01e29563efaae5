"""The report's JSON schema and its HTML page (without a browser)."""

from __future__ import annotations

import datetime
import json
import pathlib
import re

import pydantic
import pytest

from citerun.pipeline import judge, report
from tests.unit import report_fixtures

_SCHEMA_FILE = pathlib.Path(__file__).parents[2] / "docs" / "report.schema.json"


def test_summary_counts_every_verdict() -> None:
    summary = report_fixtures.sample_report().summary
    assert summary.total == 6
    assert summary.by_verdict.model_dump() == {
        "supported": 2,
        "partially_supported": 1,
        "unsupported": 1,
        "contradicted": 1,
        "source_unavailable": 0,
        "unresolved_citation": 1,
        "not_checked": 0,
        "not_in_abstract": 0,
    }


def test_json_round_trip() -> None:
    original = report_fixtures.sample_report()
    text = original.model_dump_json()
    again = report.Report.model_validate_json(text)
    assert again == original
    data = json.loads(text)
    assert data["schema_version"] == 1
    assert data["citations"][4]["source"] is None
    assert data["citations"][0]["verdict"] == "supported"
    evidence = data["citations"][0]["evidence"][0]
    boxes = evidence.pop("boxes")
    assert len(boxes) == 2 and all(0 < b["x0"] < b["x1"] and 0 < b["y0"] < b["y1"] for b in boxes)
    assert data["citations"][0]["match"]["reason"] == "title 100, first author, year"
    assert data["citations"][4]["reference"].startswith("Müller, H. (2018).")
    assert data["unused_sources"] == ["never_cited.pdf", "scan.pdf"]
    assert evidence == {
        "quote": "Adults who exercised regularly reported fewer symptoms of anxiety.",
        "page_start": 7,
        "page_end": 7,
        "score": 0.93,
        "page": 7,
        "page_width": 595.0,
        "page_height": 842.0,
    }


def test_schema_file_is_current() -> None:
    assert _SCHEMA_FILE.read_text(encoding="utf-8") == report.schema_json(), (
        "docs/report.schema.json is stale: "
        "python -m citerun.pipeline.report docs/report.schema.json"
    )


def test_schema_describes_the_documented_fields() -> None:
    schema = report.Report.model_json_schema()
    assert set(schema["required"]) >= {"run_id", "name", "created_at", "thesis", "sources", "summary", "citations"}
    citation = schema["$defs"]["CitationEntry"]["properties"]
    assert {"ordinal", "key", "marker", "claim", "page", "locator", "source", "verdict", "confidence",
            "rationale", "evidence"} <= set(citation)
    assert schema["$defs"]["Verdict"]["enum"] == [v.value for v in judge.Verdict]


def test_inconsistent_summary_is_rejected() -> None:
    data = json.loads(report_fixtures.sample_report().model_dump_json())
    data["summary"]["total"] = 99
    with pytest.raises(pydantic.ValidationError, match="summary does not match"):
        report.Report.model_validate(data)


def test_naive_created_at_and_unknown_fields_are_rejected() -> None:
    data = json.loads(report_fixtures.sample_report().model_dump_json())
    with pytest.raises(pydantic.ValidationError):
        report.Report.model_validate({**data, "created_at": "2025-01-02T03:04:05"})
    with pytest.raises(pydantic.ValidationError):
        report.Report.model_validate({**data, "surprise": 1})
    with pytest.raises(pydantic.ValidationError):
        report.Report.model_validate({**data, "schema_version": 2})


def test_html_escapes_everything_user_derived() -> None:
    page = report.render_html(report_fixtures.sample_report())
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;quotes&quot;" in page
    assert "<img src=x>" not in page and "&lt;/q&gt;&lt;img src=x&gt;" in page
    assert "<b>of</b>" not in page
    assert "Exercise &lt;and&gt; Mood" in page
    # The only script is the page's own filter code.
    assert page.count("<script>") == 1


def test_html_is_self_contained() -> None:
    page = report.render_html(report_fixtures.sample_report())
    assert not re.search(r"(?:https?:)?//[\w.-]+\.\w", page)
    assert not re.search(r"<(?:link|img|iframe)\b|\bsrc=\"|@import|url\(", page)


def test_html_of_an_empty_report() -> None:
    empty = report.Report.build(
        run_id="r", name="empty", thesis=report.ThesisInfo(filename="t.pdf", title=None, pages=1),
        sources=[], citations=[],
        created_at=datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc),
    )
    assert "No citations were found." in report.render_html(empty)


def test_main_writes_the_schema(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "schema.json"
    assert report.main([str(target)]) == 0
    assert json.loads(target.read_text())["title"] == "Report"
