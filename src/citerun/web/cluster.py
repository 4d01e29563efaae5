"""The cluster backend of ``citerun serve``: an upload becomes a CitationRun.

The service does what a user with ``citerun upload`` and ``kubectl apply`` would, with its
own ServiceAccount (which may only create, get and delete CitationRuns): it stages the
bytes in Postgres owned by the target namespace, records the user's submission and checks
their caps in that one transaction, then creates a CitationRun naming the documents by
digest. The operator admits it as any other (the namespace's caps, the run id is the
resource's uid for generation 1: :func:`citerun.core.runs.run_id_for`) and the workers run it;
status and report are read from Postgres as for a local run.

Order, and what a failure leaves: staging comes first (so the operator never sees a
CitationRun whose documents are not there yet, which it would hold for its admission
retry), under a placeholder id and the resource name the service chose; the create
follows; the row then takes the uid. A failed create drops the row and the namespace's
ownership of the bytes the upload brought first (:func:`store.drop_submission`). A
service that stops between the two leaves a row that names its resource: the owner's next
upload or status read settles it by a get (the uid adopted; a resource still missing
after :data:`SETTLE_AFTER_S` closes the row and lets its bytes go).

The namespace is the configured one (the department's), or the user's own from a template
(:func:`namespace_for`).
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import re
import uuid
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

import asyncpg
from kubernetes.client.exceptions import ApiException

from citerun.core import runs, runspec
from citerun.kube import client as kube_client
from citerun.core.states import RunState
from citerun.web import store
from citerun.web.backend import Upload
from citerun.web.settings import SYSTEM_NAMESPACES, WebSettings

logger = logging.getLogger(__name__)

#: A submission without its CitationRun is closed only when it is older than this: a
#: create in flight (another request of the same user) takes at most a few API timeouts.
SETTLE_AFTER_S = 120.0
#: Who made a CitationRun, and which submission it is (checked before adopting one).
SUBMISSION_ANNOTATION = f"{runspec.GROUP}/web-submission"
OWNER_ANNOTATION = f"{runspec.GROUP}/web-owner"
WAITING = "waiting for the operator to admit the run"

_NOT_LABEL = re.compile(r"[^a-z0-9-]+")


class ClusterRefused(store.OverCap):
    """The CitationRun could not be created (the API server refused or did not answer);
    nothing of the upload stays. Answered like a cap's refusal, with 503."""

    def __init__(self, message: str) -> None:
        super().__init__(503, message)


#: A label that ends as a changed name's does (its hash suffix): never kept as it is.
_SUFFIXED = re.compile(r"(?:^|-)[0-9a-f]{16}$")
#: Hex digits of the sha256 a changed name carries: 64 bits, so no one can choose a name
#: that lands on another's namespace (a 32-bit suffix fell to a second preimage search).
SUFFIX_HEX = 16


def namespace_for(user: str, settings: WebSettings) -> str:
    """The namespace of ``user``'s runs: ``web.namespace``, else ``web.namespace_template``
    with the user name made a DNS label. The mapping is one-to-one (issue 41): a name is
    kept as it is only when it is a DNS label already, fits, and does not end as a changed
    name does; any other name gets 16 hex digits of its sha256 (of the exact name), so
    'Alice' and 'alice', or 'alice@uni.edu' and the label it became, never share one."""
    if settings.namespace is not None:
        return settings.namespace
    template = settings.namespace_template
    assert template is not None, "WebSettings requires one of the two"
    room = 63 - len(template.replace("{user}", ""))
    label = _NOT_LABEL.sub("-", user.lower()).strip("-")
    if label != user or len(label) > room or _SUFFIXED.search(label):
        suffix = hashlib.sha256(user.encode()).hexdigest()[:SUFFIX_HEX]
        label = f"{label[:room - SUFFIX_HEX - 1].strip('-')}-{suffix}".lstrip("-")
    return template.replace("{user}", label)


#: Where a pod's ServiceAccount token is mounted, with the pod's namespace beside it.
SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def own_namespace() -> str | None:
    """The namespace the service runs in (its ServiceAccount's), None outside a pod."""
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as file:
            return file.read().strip() or None
    except OSError:
        return None


class NamespaceRefused(store.OverCap):
    """A user whose runs' namespace is one no user's runs may go to (issue 48)."""

    def __init__(self, message: str) -> None:
        super().__init__(403, message)


def refused_namespace(namespace: str, settings: WebSettings, *,
                      own: str | None) -> NamespaceRefused | None:
    """Why a user's runs may not go to ``namespace`` (one of Kubernetes' own, or the
    service's own, ``own``, where the operator and the database run), else None. The
    settings refuse a template that can name one of Kubernetes' at start; the service's
    own is known only in its pod."""
    if settings.namespace is not None:
        return None  # the installer's choice, for every user alike
    if namespace in SYSTEM_NAMESPACES or namespace == own:
        return NamespaceRefused(
            f"your runs would go to the namespace {namespace!r}, which no user's runs may "
            "use (the service's own or Kubernetes'); ask the administrator to change "
            "web.namespace_template")
    return None


def _waiting_message(obj: dict[str, Any]) -> tuple[str, str | None]:
    """What the page says of a CitationRun not yet a run, and the error when it will never
    be one (the operator failed it for good: an invalid spec, an unchecked access)."""
    status = obj.get("status") or {}
    if status.get("phase") == "Failed":
        return "failed", str(status.get("message") or "the operator refused the run")
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Admitted" and cond.get("status") == "False":
            return f"{WAITING}: {cond.get('reason')}: {cond.get('message')}", None
    return WAITING, None


class KubeBackend:
    """Runs created as CitationRuns by the service's ServiceAccount."""

    def __init__(self, pool: asyncpg.Pool, settings: WebSettings) -> None:
        self.pool = pool
        self.settings = settings
        self.caps = store.UserCaps(settings.max_active_runs, settings.max_staged_bytes)
        self.own_namespace = own_namespace()

    # -- the API server (citerun.kube.client, each call in a thread) -----------------------

    async def _create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return await kube_client.create_run(namespace, body,
                                            timeout_s=self.settings.resource_timeout_s)

    async def _get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return await kube_client.get_run(namespace, name,
                                         timeout_s=self.settings.resource_timeout_s)

    async def _delete(self, namespace: str, name: str) -> None:
        await kube_client.delete_run(namespace, name,
                                     timeout_s=self.settings.resource_timeout_s)

    # -- the backend -----------------------------------------------------------------------

    async def submit(self, user: str, thesis: Upload, sources: Sequence[Upload], *,
                     fetch_sources: bool = False) -> uuid.UUID:
        await self.settle(user)
        namespace = namespace_for(user, self.settings)
        refusal = refused_namespace(namespace, self.settings, own=self.own_namespace)
        if refusal is not None:
            logger.warning("user %r maps to the reserved namespace %s: refused", user,
                           namespace)
            raise refusal
        placeholder = uuid.uuid4()
        resource = f"web-{placeholder.hex[:16]}"
        unique: dict[str, Upload] = {}
        for source in sources:  # one document per digest; the thesis is not its own source
            if source.digest != thesis.digest:
                unique.setdefault(source.digest, source)
        title = PurePath(thesis.filename).stem or "thesis"
        async with self.pool.acquire() as conn, conn.transaction():
            await store.stage_submission(
                conn, user, placeholder, namespace, resource, title,
                [(thesis.data, thesis.filename), *((s.data, s.filename) for s in unique.values())],
                self.caps)
        body = {
            "apiVersion": f"{runspec.GROUP}/{runspec.VERSION}", "kind": runspec.KIND,
            "metadata": {"name": resource, "labels": {
                "app.kubernetes.io/managed-by": "citerun-web"},
                "annotations": {SUBMISSION_ANNOTATION: str(placeholder),
                                OWNER_ANNOTATION: user}},
            "spec": {"thesis": {"name": thesis.filename, "digest": thesis.digest},
                     "sources": [{"name": s.filename, "digest": d}
                                 for d, s in unique.items()],
                     **({runspec.FETCH_SOURCES: True} if fetch_sources else {})}}
        try:
            created = await self._create(namespace, body)
        except Exception as err:  # the API server's refusal or no answer: compensate
            await store.drop_submission(self.pool, placeholder, namespace)
            logger.warning("creating CitationRun %s/%s for %s failed: %s", namespace,
                           resource, user, _describe(err))
            raise ClusterRefused(_refusal(namespace, err)) from None
        run_id = runs.run_id_for(created["metadata"]["uid"], 1)
        await store.submission_created(self.pool, placeholder, run_id)
        logger.info("CitationRun %s/%s (run %s) created for %s", namespace, resource, run_id,
                    user)
        return run_id

    async def cancel(self, run_id: uuid.UUID) -> None:
        """Delete the CitationRun: its finalizer (the operator) cancels the run; one the
        operator never admitted is closed here."""
        where = await store.resource_of(self.pool, run_id)
        if where is None:  # a run of this database's own (the local backend's)
            await runs.cancel(self.pool, run_id, "cancelled by its owner on the web page")
            return
        await self._delete(where["namespace"], where["resource_name"])
        await store.close_submission(self.pool, run_id, RunState.CANCELLED,
                                     "cancelled by its owner on the web page")

    async def delete(self, run_id: uuid.UUID) -> None:
        """Delete the ended run's CitationRun (one already gone is no error), so that
        neither the operator nor the cleaner keeps it for the resource."""
        where = await store.resource_of(self.pool, run_id)
        if where is not None:
            await self._delete(where["namespace"], where["resource_name"])

    async def waiting(self, run: asyncpg.Record) -> str | None:
        """What to say of a run the operator has not created yet (None: it exists). Reads
        the CitationRun's status; one failed for good, or gone, closes the submission."""
        if not run["pending"] or run["namespace"] is None:
            return None
        if run["state"] != RunState.RUNNING:
            return None  # closed already: its error says why
        try:
            obj = await self._get(run["namespace"], run["resource_name"])
        except Exception as err:
            logger.info("reading CitationRun %s/%s: %s", run["namespace"],
                        run["resource_name"], _describe(err))
            return f"{WAITING} (the cluster could not be asked just now)"
        if obj is None:
            age = (datetime.datetime.now(datetime.UTC) - run["created_at"]).total_seconds()
            if age < SETTLE_AFTER_S:
                return WAITING
            await store.close_submission(self.pool, run["id"], RunState.FAILED,
                                         "the CitationRun no longer exists")
            return "the CitationRun no longer exists"
        message, failed = _waiting_message(obj)
        if failed is not None:
            await store.close_submission(self.pool, run["id"], RunState.FAILED, failed)
            return failed
        return message

    async def settle(self, user: str) -> None:
        """Bring ``user``'s submissions without a run in line with the cluster: a resource
        created by a service that stopped before recording its uid is adopted; one failed
        for good or missing (after SETTLE_AFTER_S) is closed, so it counts no more."""
        for pending in await store.pending_of(self.pool, user):
            try:
                obj = await self._get(pending.namespace, pending.resource_name)
            except Exception as err:
                logger.info("settling %s: %s", pending.resource_name, _describe(err))
                continue
            if obj is None:
                if pending.age_s >= SETTLE_AFTER_S:
                    await store.close_submission(
                        self.pool, pending.run_id, RunState.FAILED,
                        "the CitationRun was never created or no longer exists")
                continue
            notes = (obj.get("metadata") or {}).get("annotations") or {}
            run_id = runs.run_id_for(obj["metadata"]["uid"], 1)
            if run_id != pending.run_id and notes.get(SUBMISSION_ANNOTATION) == str(
                    pending.run_id):
                await store.submission_created(self.pool, pending.run_id, run_id)
                continue
            _, failed = _waiting_message(obj)
            if failed is not None:
                await store.close_submission(self.pool, pending.run_id, RunState.FAILED,
                                             failed)


def _describe(err: BaseException) -> str:
    if isinstance(err, ApiException):
        return f"{err.status} {err.reason}"
    return f"{type(err).__name__}: {err}"


def _refusal(namespace: str, err: BaseException) -> str:
    """The user's words for a create the API server refused (its body is not shown)."""
    status = err.status if isinstance(err, ApiException) else None
    if status == 403:
        return (f"this service may not create runs in namespace {namespace!r}; ask the "
                "administrators to grant it there")
    if status == 404:
        return f"namespace {namespace!r} does not exist (or has no CitationRuns)"
    return "the cluster did not accept the run just now; try again in a minute"
