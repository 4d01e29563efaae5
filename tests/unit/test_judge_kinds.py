"""The judge kinds have one owner, ``citerun.core.runspec.RunJudgeKind`` (what a run may
choose); each other place that lists them is generated from it or checked here."""

from __future__ import annotations

import json
import pathlib
import typing

import yaml

from citerun.core import runspec
from citerun.pipeline import judge
from citerun.pipeline.judging import factory

REPO = pathlib.Path(__file__).resolve().parents[2]
RUN_KINDS = list(typing.get_args(runspec.RunJudgeKind))


def test_a_run_chooses_among_the_embedded_and_the_openai_judge() -> None:
    assert RUN_KINDS == ["embedded", "openai"]
    assert runspec.JudgeSpec().kind == RUN_KINDS[0]


def test_the_workers_know_a_runs_judges_and_the_rule_baseline() -> None:
    assert list(typing.get_args(factory.JudgeKind)) == [*RUN_KINDS, "rules"]
    assert judge.JudgeConfig().kind == runspec.JudgeSpec().kind


def test_the_crd_and_the_chart_list_a_runs_judges() -> None:
    for path in ("crds/citationrun.yaml", "charts/citerun/crds/citationrun.yaml"):
        crd = yaml.safe_load((REPO / path).read_text(encoding="utf-8"))
        spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        assert spec["properties"]["judge"]["properties"]["kind"]["enum"] == RUN_KINDS, path
    values = json.loads((REPO / "charts/citerun/values.schema.json").read_text(encoding="utf-8"))
    kind = values["properties"]["pipeline"]["properties"]["judge"]["properties"]["kind"]
    assert kind["enum"] == RUN_KINDS

