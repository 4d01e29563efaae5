"""The operator's settings (``CITERUN_OPERATOR__*`` and ``CITERUN_AUTOSCALER__*``)."""

from __future__ import annotations

import pydantic
from pydantic_settings import BaseSettings, SettingsConfigDict

from citerun.operator.cleaner import CleanerConfig


class OperatorConfig(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    namespace: str = pydantic.Field(
        "default", description="Namespace of the worker Deployment (the release namespace).")
    worker_deployment: str = pydantic.Field(
        "citerun-worker", description="Name of the worker Deployment the autoscaler scales.")
    max_active_runs_per_tenant: int | None = pydantic.Field(
        20, ge=1, description="Runs of one tenant admitted at once; more wait as "
        "Admitted=False. None: no cap.")
    max_staged_bytes_per_tenant: int | None = pydantic.Field(
        5 * 1024**3, ge=1, description="Bytes of documents one tenant (namespace) may hold "
        "at once: every byte its runs bring (ConfigMap, Secret, URL, upload) counts until "
        "no run of the tenant needs the document, so one tenant cannot fill the database.")
    max_run_read_bytes: int = pydantic.Field(
        96 * 1024**2, ge=1, description="Bytes of distinct documents the operator reads "
        "from Secrets and ConfigMaps for one run's admission, all held in memory until the "
        "run is stored: half the chart's 256 Mi memory limit, so that one run cannot get the "
        "operator OOM-killed for every tenant (issue 27). Each object key is read once "
        "however many sources name it; a run over the budget waits as DocumentUnreadable "
        "with the sizes named (larger runs bring their documents by upload or URL).")
    namespace_priorities: dict[str, int] = pydantic.Field(
        default_factory=dict, description="Queue priority of the runs of each namespace "
        "(higher runs first; -100..100), the policy the chart's tenancy.priorities sets; "
        "a CitationRun cannot choose its own.")
    default_priority: int = pydantic.Field(
        0, ge=-100, le=100, description="Priority of namespaces not in namespace_priorities.")
    access_policy_binding: str = pydantic.Field(
        "citerun-run-access", description="Name of the ValidatingAdmissionPolicyBinding "
        "(shipped by the chart) that lets a CitationRun name only Secrets/ConfigMaps its "
        "creator may get. The operator reads no Secret or ConfigMap for a run unless this "
        "binding is in force; empty: never read them at all.")
    access_probe_s: float = pydantic.Field(
        5.0, gt=0, description="Seconds between the operator's probes of the access "
        "policy (a dry-run CitationRun in its namespace that the policy refuses), which "
        "record when the policy came into force; runs created before that are failed.")
    admission_retry_s: float = pydantic.Field(
        10.0, gt=0, description="Seconds before a run held back by a cap is tried again.")
    resync_s: float = pydantic.Field(
        30.0, gt=0, description="Seconds between full status resyncs of each CitationRun, "
        "the slow path behind the citerun_runs notifications.")
    status_min_interval_s: float = pydantic.Field(
        1.0, ge=0, description="Least seconds between two status writes of one resource, so "
        "a run judging hundreds of citations a second does not flood the API server.")
    finalizer_retries: int = pydantic.Field(
        5, ge=1, description="Attempts to cancel a deleted run's tasks while the database is "
        "unreachable before the finalizer lets go (with a Warning event).")
    staged_bytes_ttl_s: float = pydantic.Field(
        7 * 24 * 3600.0, gt=0, description="Seconds staged PDF bytes may wait for a run "
        "(an upload never used, a run replaced and never restarted) before they are "
        "dropped: a safety net, since every terminal transition drops them anyway.")
    liveness_port: int = pydantic.Field(8080, description="Port of kopf's /healthz endpoint.")
    metrics_port: int | None = pydantic.Field(
        9101, ge=0, le=65535, description="Port of the operator's Prometheus endpoint "
        "(autoscaler decisions, desired and current replicas, queue depth); None: off.")


class AutoscalerConfig(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    enabled: bool = pydantic.Field(True, description="Scale the worker Deployment by queue depth.")
    min_workers: int = pydantic.Field(0, ge=0, description="Fewest workers, even when idle.")
    max_workers: int = pydantic.Field(10, ge=1, description="Most workers.")
    tasks_per_worker: int = pydantic.Field(
        8, ge=1, description="Outstanding tasks one worker is expected to keep up with.")
    stabilization_s: float = pydantic.Field(
        60.0, ge=0, description="A lower desired count must hold this long before scaling "
        "down (scaling up is immediate), so a brief lull does not kill warm workers.")
    cooldown_s: float = pydantic.Field(
        300.0, ge=0, description="Seconds with no outstanding task before scaling to "
        "min_workers (zero by default).")
    interval_s: float = pydantic.Field(
        5.0, gt=0, description="Seconds between evaluations when no NOTIFY arrives.")
    lease_name: str = pydantic.Field(
        "citerun-autoscaler", description="coordination.k8s.io Lease that elects the one "
        "operator replica allowed to scale.")
    lease_duration_s: float = pydantic.Field(15.0, gt=0, description="Lease validity.")

    @pydantic.model_validator(mode="after")
    def _bounds(self) -> AutoscalerConfig:
        if self.min_workers > self.max_workers:
            raise ValueError("autoscaler.min_workers must not exceed max_workers")
        return self


class OperatorSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CITERUN_", env_nested_delimiter="__",
                                      frozen=True, extra="ignore")

    operator: OperatorConfig = pydantic.Field(default_factory=OperatorConfig)
    autoscaler: AutoscalerConfig = pydantic.Field(default_factory=AutoscalerConfig)
    retention: CleanerConfig = pydantic.Field(default_factory=CleanerConfig)


def priority_of(config: OperatorConfig, namespace: str) -> int:
    """The queue priority of a namespace's runs (policy, never the spec)."""
    value = config.namespace_priorities.get(namespace, config.default_priority)
    return max(-100, min(100, value))
