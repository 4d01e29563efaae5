"""Verdicts are listed once (citerun.core.verdicts); every copy that cannot import it is
checked against it here, so a verdict added in one place fails until it is everywhere."""

from __future__ import annotations

import typing
from pathlib import Path

import yaml

from citerun.core import verdicts
from citerun.pipeline import judge, report

REPO = Path(__file__).resolve().parents[2]
CRDS = [REPO / "crds" / "citationrun.yaml", REPO / "charts" / "citerun" / "crds" / "citationrun.yaml"]


def _version(path: Path) -> dict[str, typing.Any]:
    crd = yaml.safe_load(path.read_text(encoding="utf-8"))
    version: dict[str, typing.Any] = crd["spec"]["versions"][0]
    return version


def test_the_judge_answers_with_exactly_the_judged_verdicts() -> None:
    allowed = typing.get_args(judge.JudgeAnswer.model_fields["verdict"].annotation)
    assert set(allowed) == {v.value for v in verdicts.JUDGED}
    assert judge.Verdict is verdicts.Verdict


def test_the_report_counts_every_verdict_and_nothing_else() -> None:
    assert list(report.VerdictCounts.model_fields) == [v.value for v in verdicts.Verdict]


def test_status_counts_name_every_verdict_in_camel_case() -> None:
    counts = verdicts.status_counts(3, 2, {"supported": 1, "partially_supported": 1})
    assert counts == {"citations": 3, "judged": 2, "supported": 1, "partiallySupported": 1,
                      "unsupported": 0, "contradicted": 0, "sourceUnavailable": 0,
                      "unresolvedCitation": 0, "notChecked": 0,
                      "notInAbstract": 0}


def test_the_crd_status_counts_are_the_enum() -> None:
    for path in CRDS:
        status = _version(path)["schema"]["openAPIV3Schema"]["properties"]["status"]
        fields = list(status["properties"]["counts"]["properties"])
        assert fields == [*verdicts.TOTALS, *verdicts.count_fields().values()], path


def test_the_crd_printer_columns_show_only_counts_that_exist() -> None:
    known = {*verdicts.TOTALS, *verdicts.count_fields().values()}
    for path in CRDS:
        columns = _version(path)["additionalPrinterColumns"]
        shown = [c["jsonPath"].removeprefix(".status.counts.") for c in columns
                 if c["jsonPath"].startswith(".status.counts.")]
        assert shown and set(shown) <= known, path
