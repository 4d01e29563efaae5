"""kopf handlers: CitationRun resources in, Postgres runs and queue rows out.

* create / resume: validate the spec (pydantic; a clear Failed condition, no crash
  loop), resolve its documents, admit the run against the tenant's caps and insert it
  with its first tasks in one transaction keyed by the resource uid. Re-running this
  (operator restart, a second replica during a rollout) finds the run and changes
  nothing.
* update of the spec mid-run: the run of the old generation is cancelled and a new run
  starts under the new generation (its id derives from the uid and the generation), so
  a report never mixes two specs.
* delete: the finalizer cancels the run's tasks and drops its staged bytes; with the
  database down it retries a bounded number of times, then lets go with a Warning event
  (the orphan sweep of :mod:`citerun.operator.sync` cancels the tasks later).
* status: :mod:`citerun.operator.sync` follows ``citerun_runs`` notifications and a
  periodic resync; the operator keeps no state of its own outside Postgres and the
  resources.

Settings are read once per process: the operator's (:data:`CONFIG`) when this module is
imported, since kopf's decorators take its resync interval and finalizer retries; the core
:class:`~citerun.core.settings.Settings` by ``citerun operator``, which hands them to
:func:`startup` in kopf's memo (``memo.settings``); the judge profiles by :func:`startup`.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import uuid
from dataclasses import dataclass
from typing import Any

import kopf
import pydantic

from citerun.core import db, flow, pdfmagic, retry, runs, runspec
from citerun.kube import client as kube
from citerun.operator import access, autoscaler, cleaner, status, sync
from citerun.operator import metrics as operator_metrics
from citerun.operator import settings as op_settings
from citerun.core import runspec as specs
from citerun.core import settings as core_settings
from citerun.core.settings import Settings
from citerun.core.states import RunState

logger = logging.getLogger(__name__)

CONFIG = op_settings.OperatorSettings()
FINALIZER = f"{runspec.GROUP}/finalizer"
DB_ERRORS = db.UNAVAILABLE
# The finalizer's waits while the database is down (kopf counts the attempts).
FINALIZER_RETRY = retry.RetryPolicy(base_s=1.0, cap_s=30.0)


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=runspec.GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=runspec.GROUP, key="last-handled-configuration")
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 30
    settings.posting.level = logging.INFO
    core: Settings = memo.settings  # read once by `citerun operator`
    memo.judge_profiles = runspec.judge_profiles()
    if not core.database_url:
        raise kopf.PermanentError("CITERUN_DATABASE_URL must be set for the operator")
    await db.migrate(core.database_url)
    memo.pool = await db.create_pool(core.database_url, min_size=1, max_size=6)
    memo.syncer = sync.StatusSyncer(memo.pool, CONFIG.operator)
    memo.background = [asyncio.create_task(memo.syncer.run(core.database_url), name="status")]
    memo.access = access.Guard(memo.pool, CONFIG.operator.access_policy_binding,
                               CONFIG.operator.namespace, probe_s=CONFIG.operator.access_probe_s)
    if CONFIG.operator.access_policy_binding:
        memo.background.append(asyncio.create_task(memo.access.run(), name="access-probe"))
    memo.metrics = operator_metrics.OperatorMetrics()
    if CONFIG.operator.metrics_port is not None:
        memo.metrics.serve(CONFIG.operator.metrics_port)
    leading = None  # without the autoscaler's Lease every replica cleans (idempotent)
    if CONFIG.autoscaler.enabled:
        scaler = autoscaler.Autoscaler(memo.pool, CONFIG.operator, CONFIG.autoscaler,
                                       core.queue, identity=core_settings.process_name(),
                                       metrics=memo.metrics)
        memo.background.append(asyncio.create_task(scaler.run(core.database_url),
                                                   name="autoscaler"))
        leading = scaler.leading
    memo.background.append(asyncio.create_task(cleaner.Cleaner(
        memo.pool, CONFIG.retention, resource_exists=cleaner.citation_run_shows,
        is_leader=leading).run(), name="cleaner"))


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    for task in getattr(memo, "background", []):
        task.cancel()
    await asyncio.gather(*getattr(memo, "background", []), return_exceptions=True)
    if getattr(memo, "pool", None) is not None:
        await memo.pool.close()


@kopf.on.resume(specs.GROUP, specs.VERSION, specs.PLURAL)
@kopf.on.create(specs.GROUP, specs.VERSION, specs.PLURAL)
async def admit(body: kopf.Body, meta: kopf.Meta, uid: str, name: str, namespace: str | None,
                memo: kopf.Memo, **_: Any) -> None:
    """Validate, admit and start the run of the resource's current generation."""
    assert namespace is not None  # CitationRun is namespaced
    await _start(body, meta, uid, name, namespace, memo)


@kopf.on.update(specs.GROUP, specs.VERSION, specs.PLURAL, field="spec")
async def respec(body: kopf.Body, meta: kopf.Meta, uid: str, name: str,
                 namespace: str | None, memo: kopf.Memo, **_: Any) -> None:
    """The spec changed: cancel the old generation's run, start one for the new spec."""
    assert namespace is not None
    current = runs.run_id_for(uid, int(meta.get("generation", 1)))
    for run_id in await runs.active_of_resource(memo.pool, uuid.UUID(uid)):
        if run_id != current:
            await runs.cancel(memo.pool, run_id, "the CitationRun's spec changed",
                              drop_bytes=False)
    kopf.info(body, reason="Restarted",
              message=f"spec changed (generation {meta.get('generation')}): restarting the run")
    await _start(body, meta, uid, name, namespace, memo)


async def _start(body: kopf.Body, meta: kopf.Meta, uid: str, name: str, namespace: str,
                 memo: kopf.Memo) -> None:
    generation = int(meta.get("generation", 1))
    previous = dict(body.get("status") or {})
    try:
        spec = specs.RunSpec.model_validate(dict(body.get("spec") or {}))
        _check_judge_profile(spec, namespace, memo.judge_profiles)
    except (pydantic.ValidationError, InvalidRun) as err:
        message = (specs.validation_message(err) if isinstance(err, pydantic.ValidationError)
                   else str(err))
        await _fail(body, namespace, name, previous, generation, "InvalidSpec", message)
        return  # a bad spec is not retried: the user must change it (which is an update)
    run_id = runs.run_id_for(uid, generation)
    if await runs.get(memo.pool, run_id) is None:
        try:
            request = await _request(spec, run_id, uid, name, namespace, generation,
                                     _AccessCheck(memo.access, access.created_at(meta)))
        except access.AccessUnchecked as err:
            # Never retried: waiting for the policy would admit a run it never checked.
            await _fail(body, namespace, name, previous, generation, "AccessUnchecked",
                        str(err))
            return
        except InvalidRun as err:
            # Unreadable or not a PDF: the user must change the spec or the object; the
            # message names the reference, never what the object holds or whether it exists.
            await _hold(body, namespace, name, previous, generation, "DocumentUnreadable",
                        str(err))
            return  # unreachable: _hold raises
        admission = await flow.create(
            memo.pool, request, settings=memo.settings,
            caps=runs.Caps(CONFIG.operator.max_active_runs_per_tenant,
                           CONFIG.operator.max_staged_bytes_per_tenant))
        if admission.missing:
            await _hold(body, namespace, name, previous, generation, "DocumentMissing",
                        "this namespace has no document stored under digest "
                        + ", ".join(admission.missing) + "; upload it with `citerun upload`")
        if admission.over_capacity is not None:
            await _hold(body, namespace, name, previous, generation, "OverCapacity",
                        admission.over_capacity)
        if admission.created:
            kopf.info(body, reason="Admitted",
                      message=f"run {run_id} admitted")
    await memo.syncer.sync_run(run_id)


class InvalidRun(Exception):
    """The spec cannot be run as it is (a message for the user, safe to show)."""


def _check_judge_profile(spec: specs.RunSpec, namespace: str,
                         profiles: dict[str, specs.JudgeProfile]) -> None:
    judge = spec.judge_spec
    if judge.kind != "openai":
        return
    name = (judge.openai or specs.OpenAISpec()).profile
    profile = profiles.get(name)
    # Same words for a profile that does not exist and one this namespace may not use.
    if profile is None or not profile.allows(namespace):
        raise InvalidRun(f"spec.judge.openai.profile: {name!r} is not a judge profile of "
                         "this installation for this namespace (the chart's judgeProfiles)")


@dataclass
class _AccessCheck:
    """The access check of one run, asked once however many keys the run names."""

    guard: access.Guard
    created: datetime.datetime | None
    passed: bool = False

    async def ensure(self) -> None:
        if not self.passed:
            await self.guard.check(self.created)
            self.passed = True


async def _fail(body: kopf.Body, namespace: str, name: str, previous: dict[str, Any],
                generation: int, reason: str, message: str) -> None:
    """The run fails for good with ``reason``: the user must change the spec or create the
    run again."""
    await _write_status(namespace, name, {
        "phase": status.PHASES[RunState.FAILED], "observedGeneration": generation,
        "message": message,
        "conditions": status.merge_conditions(previous.get("conditions") or [], [
            status.condition("Admitted", False, reason, message, generation,
                             previous.get("conditions")),
            status.condition("Failed", True, reason, message, generation,
                             previous.get("conditions"))])})
    kopf.warn(body, reason=reason, message=message)


async def _read_for_run(namespace: str, kind: str, ref: specs.KeyRef,
                        checked: _AccessCheck) -> bytes:
    """A Secret/ConfigMap key named by a run, read only if the chart's access policy
    checked the run (the apiserver then checked that the run's creator may get it)."""
    try:
        await checked.ensure()
        return await kube.read_key_bytes(namespace, kind, ref.name, ref.key)
    except kube.Unreadable as err:
        raise InvalidRun(str(err)) from err
    except kube.KubeError as err:
        raise kopf.TemporaryError(str(err), delay=30) from err


def _not_a_document(name: str, kind: str, role: str) -> str:
    return (f"document {name!r}: the {kind} key is not a PDF"
            + (", a .docx or a zip bundle" if role == "thesis" else ""))


async def _request(spec: specs.RunSpec, run_id: uuid.UUID, uid: str, name: str,
                   namespace: str, generation: int, checked: _AccessCheck) -> runs.RunRequest:
    """Resolve the spec's documents into what ``runs.create`` needs.

    The tenant is the namespace; the priority is the namespace's policy.
    """
    payloads: list[tuple[bytes, str]] = []
    fetches: list[runs.FetchRequest] = []
    required: list[str] = []  # digests the spec names: this namespace must own them
    # Each (kind, object, key) is read once and its bytes held once, however many
    # sources name it: 500 sources naming one 1 MB key once cost the operator 588 MiB.
    read: dict[tuple[str, str, str], tuple[str, bool]] = {}  # -> (digest, is a PDF)
    held = 0

    async def resolve(ref: specs.DocumentRef, role: str,
                      keys: tuple[str, ...]) -> runs.StagedDocument | None:
        if ref.url is not None:
            fetches.append(runs.FetchRequest(ref.url, ref.name, role, keys))
            return None
        if ref.digest is not None:
            required.append(ref.digest)
            return runs.StagedDocument(ref.digest, ref.name, keys)
        nonlocal held
        [(kind, key_ref)] = ref.key_refs()
        seen = (kind, key_ref.name, key_ref.key)
        if seen not in read:
            data = await _read_for_run(namespace, kind, key_ref, checked)
            # Rejected before hashing or storing; a thesis may be a writer's file (a zip).
            if not pdfmagic.is_thesis(data):
                raise InvalidRun(_not_a_document(ref.name, kind, role))
            held += len(data)
            if held > CONFIG.operator.max_run_read_bytes:
                raise InvalidRun(
                    f"the run's documents from Secrets and ConfigMaps exceed "
                    f"{CONFIG.operator.max_run_read_bytes:,} bytes (at {ref.name!r}); bring "
                    "large documents by upload (`citerun upload`) or URL")
            read[seen] = (runs.digest_of(data), pdfmagic.is_pdf(data))
            payloads.append((data, ref.name))
        digest, is_pdf = read[seen]
        if role != "thesis" and not is_pdf:
            raise InvalidRun(_not_a_document(ref.name, kind, role))
        return runs.StagedDocument(digest, ref.name, keys)

    thesis = await resolve(spec.thesis, "thesis", ())
    sources = []
    for source in spec.sources:
        doc = await resolve(source, "source", source.keys)
        if doc is not None:
            sources.append(doc)
    judge_key: str | None = None
    openai = spec.judge_spec.openai
    if spec.judge_spec.kind == "openai" and openai and openai.api_key_secret_ref is not None:
        raw = await _read_for_run(namespace, "secret", openai.api_key_secret_ref, checked)
        judge_key = raw.decode("utf-8", "replace").strip()
    priority = op_settings.priority_of(CONFIG.operator, namespace)
    return runs.RunRequest(
        id=run_id, name=name, namespace=namespace, resource_uid=uuid.UUID(uid),
        generation=generation, tenant=namespace, priority=-priority,
        thesis=thesis or runs.StagedDocument("", spec.thesis.name),
        sources=tuple(sources), spec=spec.to_json(), fetches=tuple(fetches),
        payloads=tuple(payloads), required_digests=tuple(required), judge_api_key=judge_key)


async def _hold(body: kopf.Body, namespace: str, name: str, previous: dict[str, Any],
                generation: int, reason: str, message: str) -> None:
    """Keep a run waiting (Admitted=False) and try again later."""
    waiting_already = any(c.get("type") == "Admitted" and c.get("reason") == reason
                          for c in previous.get("conditions") or [])
    if not waiting_already:
        kopf.info(body, reason="Waiting", message=message)
    await _write_status(namespace, name, {
        "phase": status.PENDING, "observedGeneration": generation, "message": message,
        "conditions": status.merge_conditions(previous.get("conditions") or [], [
            status.condition("Admitted", False, reason, message, generation,
                             previous.get("conditions"))])})
    raise kopf.TemporaryError(message, delay=CONFIG.operator.admission_retry_s)


async def _write_status(namespace: str, name: str, new: dict[str, Any]) -> None:
    obj = await kube.get_run(namespace, name)
    if obj is not None:
        await kube.patch_status(namespace, name, new,
                                resource_version=obj["metadata"]["resourceVersion"])


@kopf.timer(specs.GROUP, specs.VERSION, specs.PLURAL, interval=CONFIG.operator.resync_s,
            initial_delay=CONFIG.operator.resync_s)
async def resync(meta: kopf.Meta, uid: str, memo: kopf.Memo, **_: Any) -> None:
    """The slow path: bring the status in line with the database now and then."""
    await memo.syncer.sync_run(runs.run_id_for(uid, int(meta.get("generation", 1))))


@kopf.on.delete(specs.GROUP, specs.VERSION, specs.PLURAL,
                retries=CONFIG.operator.finalizer_retries, backoff=2)
async def delete(body: kopf.Body, uid: str, name: str, namespace: str | None,
                 memo: kopf.Memo, retry: int, **_: Any) -> None:
    """Cancel the run's tasks and drop its staged bytes; never block deletion forever."""
    try:
        cancelled = 0
        for run_id in await runs.active_of_resource(memo.pool, uuid.UUID(uid)):
            cancelled += len(await runs.cancel(memo.pool, run_id,
                                               f"CitationRun {namespace}/{name} was deleted"))
    except DB_ERRORS as err:
        if retry + 1 >= CONFIG.operator.finalizer_retries:
            kopf.warn(body, reason="CleanupFailed", message=(
                f"could not cancel the run's tasks after {retry + 1} attempts (database: "
                f"{err}); letting the deletion proceed, the operator's orphan sweep will "
                "cancel them once the database is back"))
            return
        raise kopf.TemporaryError(f"database unreachable: {err}",
                                  delay=FINALIZER_RETRY.delay_s(retry + 1))
    logger.info("cancelled %d task(s) of deleted CitationRun %s/%s", cancelled, namespace, name)
