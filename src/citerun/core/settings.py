"""One settings object per process, read from ``CITERUN_*`` environment variables.

Groups are nested models so a field reads as ``settings.queue.lease_s``; a nested field is
set from the environment with a double underscore, e.g. ``CITERUN_QUEUE__LEASE_S=60``.
Every field says its unit and why its default is what it is.
"""

from __future__ import annotations

import difflib
import os
import re
import socket
import types
import typing
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from citerun.core import errors, retry


class QueueSettings(BaseModel):
    """How long leases last and how failed work is retried."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lease_s: float = Field(
        30.0, gt=0, description="Seconds a claim is valid without a heartbeat. Long enough "
        "to ride out a GC pause or a slow database, short enough that a killed pod's work "
        "restarts within a minute.")
    heartbeat_s: float = Field(
        10.0, gt=0, description="Seconds between lease renewals of a busy worker: a third "
        "of the lease, so two heartbeats may be lost before the lease expires.")
    max_attempts: int = Field(
        5, ge=1, description="Attempts before a task is dead-lettered (state 'failed'): "
        "enough to ride out a database restart or a flaky source server (with the "
        "backoff below, about 15 s of retries), few enough that a bug fails the run soon.")
    max_attempts_by_kind: dict[str, int] = Field(
        default_factory=dict, description="Attempts per task kind where they differ from "
        "max_attempts, e.g. CITERUN_QUEUE__MAX_ATTEMPTS_BY_KIND='{\"fetch_document\": 8}'.")
    backoff_base_s: float = Field(
        1.0, ge=0, description="Retry delay after the first failed attempt, in seconds; "
        "doubles with each attempt.")
    backoff_cap_s: float = Field(
        300.0, ge=0, description="Upper bound of the retry delay, in seconds.")
    tenant_caps: dict[str, int] = Field(
        default_factory=dict, description="Most tasks of one tenant (a namespace) running "
        "at once across all workers, by tenant, e.g. {\"thesis-dept\": 16}; enforced in the "
        "claim, so a department's deadline burst cannot hold every worker. Empty: no caps.")
    tenant_cap_default: int | None = Field(
        None, ge=1, description="The cap of every tenant not named in tenant_caps; None "
        "leaves them uncapped. Any cap makes capped claims take turns (one advisory lock), "
        "about 1 ms each, so leave both unset when one tenant owns the cluster.")

    @model_validator(mode="after")
    def _caps_positive(self) -> QueueSettings:
        if any(cap < 1 for cap in self.tenant_caps.values()):
            raise ValueError("queue.tenant_caps values must be at least 1")
        return self

    def attempts_for(self, kind: str) -> int:
        """Attempts a task of ``kind`` gets before it is dead-lettered."""
        return self.max_attempts_by_kind.get(kind, self.max_attempts)

    def retry_policy(self) -> retry.RetryPolicy:
        """The backoff between a failed task's attempts."""
        return retry.RetryPolicy(base_s=self.backoff_base_s, cap_s=self.backoff_cap_s)

    @model_validator(mode="after")
    def _heartbeat_within_lease(self) -> QueueSettings:
        if any(n < 1 for n in self.max_attempts_by_kind.values()):
            raise ValueError("queue.max_attempts_by_kind values must be at least 1")
        if self.heartbeat_s >= self.lease_s:
            raise ValueError("queue.heartbeat_s must be shorter than queue.lease_s")
        return self


def process_name() -> str:
    """This process's name: on Kubernetes its pod's (``POD_NAME``, from the downward API),
    else host and pid. A worker's id and the autoscaler's Lease holder."""
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"


class WorkerSettings(BaseModel):
    """The worker runtime: concurrency, wake-ups, maintenance and drain."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(
        default_factory=process_name,
        description="Worker id; on Kubernetes the pod name (downward API) so the autoscaler "
        "can map a workers row to its pod.")
    concurrency: int = Field(
        4, ge=1, le=256, description="Tasks one worker runs at once. CPU-bound handlers run "
        "in threads, so more than the core count only helps for I/O-bound judges.")
    poll_s: float = Field(
        60.0, gt=0, description="Seconds between polls for queued work when no NOTIFY "
        "arrived: the slow-but-correct path that bounds the delay of a lost NOTIFY (rare: "
        "a NOTIFY is only lost with its connection, and a reconnect rescans at once). An "
        "idle worker also sweeps (and stamps its workers row) at this pace, so it sends "
        "two statements per poll_s: 0.033/s at 60 s.")
    sweep_s: float = Field(
        15.0, gt=0, description="Seconds between stall sweeps (requeue expired leases) "
        "while the worker is busy. Every worker sweeps, so with N busy workers a stall is "
        "seen about sweep_s/N after its lease expired.")
    drain_timeout_s: float = Field(
        20.0, ge=0, description="Seconds a SIGTERMed worker lets in-flight tasks finish "
        "before releasing them. Keep below the pod's terminationGracePeriodSeconds.")
    listen_reconnect_s: float = Field(
        1.0, gt=0, description="Seconds before re-opening a lost LISTEN connection (doubles "
        "up to 5 s, citerun.core.db.RECONNECT, while the database stays away).")
    metrics_port: int | None = Field(
        None, ge=0, le=65535, description="Port of the Prometheus endpoint (/metrics, and "
        "/healthz for the pod's probes, which never touches the database); None disables it.")
    depth_interval_s: float = Field(
        15.0, gt=0, description="Seconds the queue depth read for /metrics is reused: the "
        "Prometheus scrape interval, so several scrapers cost one read per interval.")
    kinds: tuple[str, ...] | None = Field(
        None, description="Task kinds this worker claims; None means every registered kind.")
    run_id: uuid.UUID | None = Field(
        None, description="Claim only this run's tasks (a local worker serving its own run "
        "beside other runs in a shared database); None claims every run's.")


class MissingDatabaseUrl(errors.CiterunError):
    """CITERUN_DATABASE_URL is not set."""


class Settings(BaseSettings):
    """Everything a citerun process reads from its environment."""

    model_config = SettingsConfigDict(
        env_prefix="CITERUN_", env_nested_delimiter="__", frozen=True, extra="ignore")

    database_url: str | None = Field(
        None, description="postgresql:// URL. When unset, the CLI starts an embedded "
        "Postgres under data_dir and reuses it on the next call.")
    data_dir: Path = Field(
        default_factory=lambda: Path(platformdirs.user_data_dir("citerun")),
        description="Where the embedded Postgres keeps its files.")
    pool_min: int = Field(1, ge=0, description="Connections a pool keeps open.")
    pool_max: int = Field(8, ge=1, description="Connections a pool may open.")
    queue: QueueSettings = Field(default_factory=QueueSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)

    def cluster_database_url(self, command: str) -> str:
        """The cluster's database for ``command`` (submit, upload): never a local one,
        whose documents the cluster's operator would never see."""
        if not self.database_url:
            raise MissingDatabaseUrl(
                f"{command} needs CITERUN_DATABASE_URL: the postgresql:// URL of the "
                "cluster's database (the one the operator uses). Without it the documents "
                "would go to a local database the cluster cannot read.")
        return self.database_url

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with some fields replaced (validated like the original)."""
        return type(self).model_validate({**self.model_dump(), **changes})


# -- the environment: every CITERUN_* variable is a setting or a known other one ----------

#: The prefix of every variable citerun reads, and the separator of a nested field.
ENV_PREFIX = "CITERUN_"
ENV_NESTED = "__"

#: ``CITERUN_*`` variables that are no settings field but are read all the same, with who
#: reads them; a name ending in ``_`` stands for every name it begins. pydantic-settings
#: ignores an unknown ``CITERUN_*`` variable, so :func:`unknown_variables` (run by the CLI
#: before anything else) lets exactly these and the settings' own pass.
NOT_SETTINGS: dict[str, str] = {
    "CITERUN_LOG_FORMAT": "the CLI's --log-format default, needed before any settings",
    "CITERUN_VERIFY_PID": "citerun.local.workers.VERIFY_PID_ENV: the `citerun verify` that "
    "started this worker (it lives and dies with it)",
    "CITERUN_JUDGE_PROFILES": "citerun.core.runspec.JUDGE_PROFILES_ENV: the judge profiles "
    "runs may choose (JSON, from the chart's judgeProfiles)",
    "CITERUN_JUDGE_API_KEY": "the chart's key of the default openai judge, the variable "
    "CITERUN_JUDGE__OPENAI__API_KEY_ENV names",
    "CITERUN_JUDGE_PROFILE_KEY_": "the chart's keys of the judge profiles, the variables "
    "their apiKeyEnv names",
    # Switches of the tests, benches and test scripts: the `citerun` processes the tests
    # start inherit them.
    "CITERUN_EVALDATA": "tests/unit/test_realpdf.py and bench/: the evaluation data",
    "CITERUN_HELDOUT_PDFS": "bench/quality/heldout.py: the held-out PDFs",
    "CITERUN_UPDATE_SCHEMA": "tests/db/test_migrations.py: rewrite the expected schema",
    "CITERUN_UPDATE_SCREENSHOTS": "tests/e2e/test_web_browser.py: rewrite docs/screenshots",
    "CITERUN_NODE_TESTS": "scripts/test: run the real-node cluster tests",
    "CITERUN_K8S_CACHE": "tests/cluster and bench/cluster/node.py: the Kubernetes build cache",
    "CITERUN_BUILD_JOBS": "tests/cluster/build.sh: parallel compile jobs",
    "CITERUN_BUILDAH_DRIVER": "tests/cluster/node/images.sh: buildah's storage driver",
    "CITERUN_NODE_SNAPSHOTTER": "tests/cluster/node: containerd's snapshotter",
    "CITERUN_KEEP_CONTROL_PLANE": "tests/cluster: keep the control plane's files",
    "CITERUN_TEST_JUDGE_KEY": "tests/unit/test_judge.py: a key named by api_key_env",
}


def _submodels(annotation: Any) -> Iterator[Any]:
    """The types a field may hold (``A | None`` holds ``A`` and ``None``)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            yield from _submodels(arg)
    else:
        yield annotation


def _is_group(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _resolves(model: type[BaseModel], path: Sequence[str]) -> bool:
    """Whether the upper-case field path names a field of ``model`` (or an entry of one
    of its mappings: ``QUEUE__TENANT_CAPS__THESIS_DEPT``), the way pydantic-settings
    reads nested variables (case-insensitively)."""
    fields = {name.upper(): info for name, info in model.model_fields.items()}
    info = fields.get(path[0])
    if info is None:
        return False
    if len(path) == 1:
        return True
    kinds = list(_submodels(info.annotation))
    return any(_is_group(k) and _resolves(k, path[1:]) for k in kinds) or any(
        typing.get_origin(k) is dict for k in kinds)


def _names(model: type[BaseModel], prefix: str) -> Iterator[str]:
    """Every variable that sets a field (or a whole group) of ``model``."""
    for name, info in model.model_fields.items():
        full = prefix + name.upper()
        yield full
        for kind in _submodels(info.annotation):
            if _is_group(kind):
                yield from _names(kind, full + ENV_NESTED)


def is_setting(name: str, models: Sequence[type[BaseModel]]) -> bool:
    """Whether the variable ``name`` sets a field of one of ``models``."""
    upper = name.upper()
    return upper.startswith(ENV_PREFIX) and any(
        _resolves(m, upper.removeprefix(ENV_PREFIX).split(ENV_NESTED)) for m in models)


#: What Kubernetes puts in a pod's environment for each Service of its namespace (unless
#: the pod sets ``enableServiceLinks: false``, as the chart's do): a Service named
#: ``citerun-postgresql`` gives ``CITERUN_POSTGRESQL_SERVICE_HOST``, ``..._PORT``,
#: ``..._PORT_5432_TCP_ADDR`` and the like. Settings always have ``__`` after the group;
#: these never do, so a mistyped setting is not mistaken for one.
_SERVICE_LINK = re.compile(
    r"^[A-Z0-9_]+?_(?:SERVICE_HOST|SERVICE_PORT(?:_[A-Z0-9_]+)?|PORT(?:_\d+_(?:TCP|UDP|SCTP)"
    r"(?:_(?:PROTO|PORT|ADDR))?)?)$")


def _known(name: str, models: Sequence[type[BaseModel]]) -> bool:
    upper = name.upper()
    return is_setting(upper, models) or any(
        upper == other or (other.endswith("_") and upper.startswith(other))
        for other in NOT_SETTINGS) or (
        ENV_NESTED not in upper and _SERVICE_LINK.match(upper) is not None)


def unknown_variables(environ: Mapping[str, str],
                      models: Sequence[type[BaseModel]]) -> str | None:
    """One line naming each ``CITERUN_*`` variable of ``environ`` that is neither a
    field of ``models`` (the settings a process reads) nor one of :data:`NOT_SETTINGS`,
    with the closest valid name; None when there is none. pydantic-settings would ignore
    such a variable silently, so a typo would leave a default in force."""
    unknown = sorted(name for name in environ
                     if name.upper().startswith(ENV_PREFIX) and not _known(name, models))
    if not unknown:
        return None
    valid = [name for m in models for name in _names(m, ENV_PREFIX)] + list(NOT_SETTINGS)
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name.upper(), valid, n=1)
        parts.append(f"unknown setting {name}"
                     + (f" (did you mean {close[0]}?)" if close else ""))
    return "; ".join(parts)
