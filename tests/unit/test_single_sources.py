"""Facts written in two places where one cannot import the other: each pair is compared
here, so a change to one copy fails until the other follows (no "keep in sync" comment
without a test)."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from pydantic_settings import BaseSettings

from citerun.operator import settings as op_settings
from citerun.core.settings import Settings, is_setting
from citerun.pipeline import report
from citerun.pipeline.settings import PipelineSettings

REPO = Path(__file__).resolve().parents[2]
HELPERS = REPO / "charts" / "citerun" / "templates" / "_helpers.tpl"


def test_the_report_schema_version_constant_is_the_models() -> None:
    allowed = typing.get_args(report.Report.model_fields["schema_version"].annotation)
    assert allowed == (report.SCHEMA_VERSION,)


def test_every_setting_the_chart_sets_exists() -> None:
    # Settings are nested (CITERUN_GROUP__FIELD); CITERUN_JUDGE_API_KEY and
    # CITERUN_JUDGE_PROFILE_KEY_* hold secrets that settings name, not settings.
    names = sorted(set(re.findall(r"\b(CITERUN_[A-Z0-9]+__[A-Z0-9_]+)\b", HELPERS.read_text())))
    assert names, "the chart's helpers set no CITERUN_* variable"
    models: list[type[BaseSettings]] = [Settings, PipelineSettings, op_settings.OperatorSettings]
    unknown = [name for name in names if not is_setting(name, models)]
    assert unknown == []
