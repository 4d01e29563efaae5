"""The CitationRun status carries the tokens the run's LLM judge spent."""

from __future__ import annotations

import pathlib

import yaml

from citerun.operator import status

REPO = pathlib.Path(__file__).resolve().parents[2]


def _row(tokens: int) -> dict[str, object]:
    return {"state": "running", "error": None, "generation": 1, "tokens_spent": tokens,
            "citations": 4, "judged": 2, "verdicts": {"supported": 2}, "tasks_open": 2,
            "documents_done": 1, "documents": 1}


def test_judge_tokens_are_in_the_status() -> None:
    built = status.from_progress(_row(1234), name="r", namespace="ns", run_id="id",
                                 generation=1, previous={})
    assert built["judgeTokens"] == 1234
    assert status.from_progress(_row(0), name="r", namespace="ns", run_id="id", generation=1,
                                previous={})["judgeTokens"] == 0


def test_the_crd_declares_judge_tokens() -> None:
    crd = yaml.safe_load((REPO / "crds" / "citationrun.yaml").read_text(encoding="utf-8"))
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]
    properties = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert properties["judgeTokens"]["type"] == "integer"


def test_the_report_shows_the_judge_tokens() -> None:
    from citerun.pipeline import report

    from tests.unit import report_fixtures

    built = report_fixtures.sample_report().model_copy(update={"judge_tokens": 12345})
    assert report.Report.model_validate_json(built.model_dump_json()).judge_tokens == 12345
    assert "LLM judge: 12,345 tokens" in report.render_html(built)
    assert "LLM judge" not in report.render_html(report_fixtures.sample_report())
