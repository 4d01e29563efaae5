"""The chart repeats some settings' defaults in values.yaml (and their bounds in
values.schema.json), so that `helm show values` documents them and helm refuses a bad
value before a pod would: each repeat is compared with the pydantic model here, without
rendering the chart.

The pairs come from the templates themselves: every ``- name: CITERUN_X`` whose value is
``{{ .Values.a.b ... }}`` ties the value ``a.b`` to the setting ``CITERUN_X``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from citerun.core import settings
from citerun.operator.settings import OperatorSettings
from citerun.pipeline.settings import PipelineSettings
from citerun.core.settings import Settings
from citerun.web.settings import ServeSettings

CHART = Path(__file__).resolve().parents[2] / "charts" / "citerun"
TREES: list[type[BaseSettings]] = [Settings, OperatorSettings, PipelineSettings, ServeSettings]
_ENV_FROM_VALUE = re.compile(
    r"- name: (CITERUN_[A-Z0-9_]+)\s*\n\s*value: \{\{\s*\.Values\.([A-Za-z0-9_.]+)")


def _pairs() -> dict[str, str]:
    """Variable -> the values.yaml key the templates set it from."""
    pairs: dict[str, str] = {}
    for template in sorted((CHART / "templates").iterdir()):
        for name, key in _ENV_FROM_VALUE.findall(template.read_text()):
            assert pairs.setdefault(name, key) == key, f"{name} is set from two values"
    return pairs


def _field(name: str) -> FieldInfo:
    path = name.removeprefix(settings.ENV_PREFIX).lower().split(settings.ENV_NESTED)
    for tree in TREES:
        model: type[pydantic.BaseModel] = tree
        for part in path[:-1]:
            inner = model.model_fields[part].annotation if part in model.model_fields else None
            if not (isinstance(inner, type) and issubclass(inner, pydantic.BaseModel)):
                break
            model = inner
        else:
            if path[-1] in model.model_fields:
                return model.model_fields[path[-1]]
    raise AssertionError(f"{name} is no setting")


def _lookup(tree: dict[str, Any], key: str, *, schema: bool = False) -> Any:
    node: Any = tree
    for part in key.split("."):
        node = node["properties"][part] if schema else node[part]
    return node


SETTINGS = {name: key for name, key in _pairs().items()
            if settings.is_setting(name, TREES)}


def test_the_templates_set_settings_from_values() -> None:
    # The pairing found what it should: a regex that matched nothing would pass below.
    assert {"CITERUN_WORKER__CONCURRENCY", "CITERUN_AUTOSCALER__COOLDOWN_S",
            "CITERUN_OPERATOR__MAX_STAGED_BYTES_PER_TENANT"} <= set(SETTINGS)
    # Besides settings, only variables of the known others (the log format).
    assert set(_pairs()) - set(SETTINGS) <= set(settings.NOT_SETTINGS)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_the_values_default_is_the_models(name: str) -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    info = _field(name)
    raw = _lookup(values, SETTINGS[name])
    default = info.get_default(call_default_factory=True)
    if raw == "" and default is None:
        # An empty value is the template's "leave it unset" ({{- if ... }} around the
        # variable): the setting keeps its default, None.
        assert _guarded(name), f"{name} is set even when {SETTINGS[name]} is empty"
        return
    chart = pydantic.TypeAdapter(info.annotation).validate_python(raw)
    assert chart == default, (
        f"values.yaml {SETTINGS[name]} is not the default of {name}")


def _guarded(name: str) -> bool:
    """Whether every template that sets ``name`` does so inside an ``{{- if .Values...}}``
    (an empty value then renders no variable)."""
    found = False
    for template in (CHART / "templates").glob("*.yaml"):
        lines = template.read_text().splitlines()
        for number, line in enumerate(lines):
            if line.strip() != f"- name: {name}":
                continue
            found = True
            depth = 0
            for before in reversed(lines[:number]):
                if re.search(r"\{\{-? end", before):
                    depth += 1
                elif re.search(r"\{\{-? (if|with) \.Values\.", before):
                    if depth == 0:
                        break
                    depth -= 1
            else:
                return False
    return found


def _model_bounds(info: FieldInfo) -> dict[str, float]:
    bounds: dict[str, float] = {}
    for meta in info.metadata:
        for attr, key in (("ge", "minimum"), ("le", "maximum"), ("gt", "exclusiveMinimum"),
                          ("lt", "exclusiveMaximum")):
            if getattr(meta, attr, None) is not None:
                bounds[key] = getattr(meta, attr)
    return bounds


def _lower_upper(bounds: dict[str, float], integer: bool) -> tuple[float | None, float | None]:
    """The bounds as inclusive ones (an integer's ``> 0`` is ``>= 1``)."""
    step = 1 if integer else 0
    low = bounds.get("minimum", None)
    if low is None and "exclusiveMinimum" in bounds:
        low = bounds["exclusiveMinimum"] + step if integer else bounds["exclusiveMinimum"]
    high = bounds.get("maximum", None)
    if high is None and "exclusiveMaximum" in bounds:
        high = bounds["exclusiveMaximum"] - step if integer else bounds["exclusiveMaximum"]
    return low, high


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_the_schemas_bounds_are_the_models(name: str) -> None:
    # Every bound of the model is the schema's too, so helm refuses what the settings
    # would (a pod that crashes at start); the schema may add one of its own, such as
    # the drain timeout's hour, which the pod's grace period needs.
    schema = json.loads((CHART / "values.schema.json").read_text())
    node = _lookup(schema, SETTINGS[name], schema=True)
    types = node.get("type", [])
    integer = "integer" in (types if isinstance(types, list) else [types])
    chart = _lower_upper({k: node[k] for k in ("minimum", "maximum", "exclusiveMinimum",
                                               "exclusiveMaximum") if k in node}, integer)
    model = _lower_upper(_model_bounds(_field(name)), integer)
    for side, ours, theirs in zip(("lower", "upper"), chart, model, strict=True):
        if theirs is not None:
            assert ours == theirs, (f"values.schema.json {SETTINGS[name]}: the {side} bound "
                                    f"is {ours}, {name}'s is {theirs}")
