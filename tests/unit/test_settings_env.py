"""A mistyped ``CITERUN_*`` variable is a one-line error at start, not a default that
silently stays in force (pydantic-settings ignores unknown variables of its prefix).

The command line is run as the console script, as a user or a pod runs it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pydantic
import pytest
from pydantic_settings import BaseSettings

from citerun.cli import main as cli
from citerun.core import settings
from citerun.operator.settings import OperatorSettings
from citerun.pipeline.settings import PipelineSettings
from citerun.core.settings import Settings
from citerun.web.settings import ServeSettings
from tests.conftest import citerun_command

REPO = Path(__file__).resolve().parents[2]
TREES: list[type[BaseSettings]] = [Settings, OperatorSettings, PipelineSettings, ServeSettings]

#: One typo per settings group, and the name the error must suggest.
TYPOS = {
    "CITERUN_POOL_MAXIMUM": "CITERUN_POOL_MAX",
    "CITERUN_QUEUE__LEASE_SECONDS": "CITERUN_QUEUE__LEASE_S",
    "CITERUN_WORKER__CONCURENCY": "CITERUN_WORKER__CONCURRENCY",
    "CITERUN_OPERATOR__RESYNC": "CITERUN_OPERATOR__RESYNC_S",
    "CITERUN_AUTOSCALER__MAXWORKERS": "CITERUN_AUTOSCALER__MAX_WORKERS",
    "CITERUN_RETENTION__MAXAGE_S": "CITERUN_RETENTION__MAX_AGE_S",
    "CITERUN_DOCUMENTS__MAX_BYTE": "CITERUN_DOCUMENTS__MAX_BYTES",
    "CITERUN_LIMITS__PARSE__CPU": "CITERUN_LIMITS__PARSE__CPU_S",
    "CITERUN_EMBEDDING__PROVIDR": "CITERUN_EMBEDDING__PROVIDER",
    "CITERUN_WEB__TRUSTED_PROXY": "CITERUN_WEB__TRUSTED_PROXIES",
    "CITERUN_RETRIEVAL__TOPK": "CITERUN_RETRIEVAL__TOP_K",
    "CITERUN_MATCH__TRESHOLD": "CITERUN_MATCH__THRESHOLD",
    "CITERUN_JUDGE__KIN": "CITERUN_JUDGE__KIND",
    "CITERUN_JUDGE__OPENAI__MODLE": "CITERUN_JUDGE__OPENAI__MODEL",
}

#: A correct variable of each group (values the settings accept).
CORRECT = {
    "CITERUN_POOL_MAX": "4",
    "CITERUN_QUEUE__LEASE_S": "60",
    "CITERUN_QUEUE__TENANT_CAPS__THESIS_DEPT": "3",
    "CITERUN_WORKER__CONCURRENCY": "2",
    "CITERUN_OPERATOR__RESYNC_S": "20",
    "CITERUN_AUTOSCALER__MAX_WORKERS": "3",
    "CITERUN_RETENTION__MAX_AGE_S": "60",
    "CITERUN_DOCUMENTS__MAX_BYTES": "1000",
    "CITERUN_LIMITS__PARSE__CPU_S": "10",
    "CITERUN_EMBEDDING__PROVIDER": "wordllama",
    "CITERUN_RETRIEVAL__TOP_K": "4",
    "CITERUN_JUDGE__KIND": "embedded",
    "CITERUN_JUDGE__OPENAI__MODEL": "m",
    "CITERUN_JUDGE_PROFILE_KEY_DEFAULT": "sk-x",
    "CITERUN_LOG_FORMAT": "text",
}


def _env(**extra: str) -> dict[str, str]:
    """This process's environment without its CITERUN_* variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("CITERUN_")}
    return {**env, **extra}


def _citerun(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*citerun_command(), *args], env=env, cwd=REPO, text=True,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize("typo", ["CITERUN_QUEUE__LEASE_SECONDS", "CITERUN_RETENTION__MAXAGE_S",
                                  "CITERUN_LIMITS__PARSE__CPU"])
def test_a_typo_is_one_line_and_exit_2(typo: str) -> None:
    # A core, an operator and a (nested) pipeline setting; every group's below.
    result = _citerun(_env(**{typo: "60"}), "migrate")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.splitlines() == [
        f"citerun: error: unknown setting {typo} (did you mean {TYPOS[typo]}?)"]
    assert result.stdout == ""


def test_a_typo_in_every_group_at_once_is_still_one_line() -> None:
    result = _citerun(_env(**dict.fromkeys(TYPOS, "1")), "status", "some-run")
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    for typo, meant in TYPOS.items():
        assert f"unknown setting {typo} (did you mean {meant}?)" in line


def test_correct_variables_pass_and_are_read(database_url: str) -> None:
    env = _env(CITERUN_DATABASE_URL=database_url, **CORRECT)
    result = _citerun(env, "migrate")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("applied 0 migration(s)")
    # The variable is read: a value the settings refuse is their error, not "unknown".
    result = _citerun({**env, "CITERUN_QUEUE__HEARTBEAT_S": "600"}, "migrate")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "citerun: error: invalid settings: queue: Value error, queue.heartbeat_s must be "
        "shorter than queue.lease_s"]


def test_a_lower_case_variable_is_checked_like_pydantic_reads_it() -> None:
    assert settings.is_setting("citerun_queue__lease_s", TREES)
    assert settings.unknown_variables({"citerun_queue__lease_sec": "1"}, TREES) == (
        "unknown setting citerun_queue__lease_sec (did you mean CITERUN_QUEUE__LEASE_S?)")


def test_a_scalar_has_no_fields_and_a_mapping_any_key() -> None:
    assert not settings.is_setting("CITERUN_QUEUE__LEASE_S__X", TREES)
    assert settings.is_setting("CITERUN_QUEUE__MAX_ATTEMPTS_BY_KIND__FETCH_DOCUMENT", TREES)
    assert settings.is_setting("CITERUN_QUEUE", TREES)  # a whole group as JSON
    assert not settings.is_setting("CITERUN_", TREES)
    assert not settings.is_setting("OTHER_QUEUE__LEASE_S", TREES)


def _groups(model: type[pydantic.BaseModel]) -> Iterator[type[pydantic.BaseModel]]:
    for info in model.model_fields.values():
        for kind in settings._submodels(info.annotation):
            if isinstance(kind, type) and issubclass(kind, pydantic.BaseModel):
                yield kind
                yield from _groups(kind)


@pytest.mark.parametrize("tree", TREES, ids=lambda t: t.__name__)
def test_every_group_forbids_unknown_fields(tree: type[BaseSettings]) -> None:
    # The three trees share the CITERUN_ prefix, so each must ignore the others' groups;
    # within a group an unknown field (a typo in a JSON value too) is an error.
    assert tree.model_config.get("extra") == "ignore"
    lax = sorted({g.__name__ for g in _groups(tree) if g.model_config.get("extra") != "forbid"})
    assert lax == []


# Placeholders in prose and the README's example of a typo (fragments such as
# ``startswith("CITERUN_JUDGE")`` pass as the start of a known name).
_PLACEHOLDERS = {"CITERUN_GROUP__FIELD", "CITERUN_X", "CITERUN_QUEUE__LEASE_SECONDS"}
_SCANNED = ("src", "tests", "charts", "scripts", "bench", "docs", "README.md", "Dockerfile")


def _mentioned_names() -> dict[str, str]:
    names: dict[str, str] = {}
    for top in _SCANNED:
        root = REPO / top
        files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()
                                                and "egg-info" not in str(p)]
        for path in files:
            if path == Path(__file__):  # the typos above
                continue
            try:
                text = path.read_text()
            except (UnicodeDecodeError, OSError):
                continue
            for name in re.findall(r"\bCITERUN_[A-Z0-9_]*[A-Z0-9]\b", text):
                names.setdefault(name, str(path.relative_to(REPO)))
    return names


def test_every_citerun_variable_the_repository_names_is_known() -> None:
    # A setting renamed or removed leaves its old name in a test, the chart or the docs:
    # there it would now stop the process at start, so it must go everywhere at once.
    known = [n for m in TREES for n in settings._names(m, settings.ENV_PREFIX)]
    known += list(settings.NOT_SETTINGS)
    stale = {name: where for name, where in _mentioned_names().items()
             if name not in _PLACEHOLDERS
             and settings.unknown_variables({name: ""}, TREES) is not None
             and not any(k.startswith(name) for k in known)}
    assert stale == {}


def test_kubernetes_service_links_are_not_settings_but_a_typo_beside_them_is() -> None:
    # A pod in a namespace with a Service named citerun-postgresql gets these (unless it
    # sets enableServiceLinks: false); a worker refusing them would never start.
    links = {"CITERUN_POSTGRESQL_SERVICE_HOST": "10.0.0.9",
             "CITERUN_POSTGRESQL_SERVICE_PORT": "5432",
             "CITERUN_POSTGRESQL_SERVICE_PORT_POSTGRES": "5432",
             "CITERUN_POSTGRESQL_PORT": "tcp://10.0.0.9:5432",
             "CITERUN_POSTGRESQL_PORT_5432_TCP": "tcp://10.0.0.9:5432",
             "CITERUN_POSTGRESQL_PORT_5432_TCP_PROTO": "tcp",
             "CITERUN_POSTGRESQL_PORT_5432_TCP_PORT": "5432",
             "CITERUN_POSTGRESQL_PORT_5432_TCP_ADDR": "10.0.0.9"}
    assert cli.unknown_environment(links) is None
    result = _citerun(_env(**links, CITERUN_WORKER__METRIX_PORT="9"), "status", "some-run")
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["citerun: error: unknown setting "
                                          "CITERUN_WORKER__METRIX_PORT (did you mean "
                                          "CITERUN_WORKER__METRICS_PORT?)"]
