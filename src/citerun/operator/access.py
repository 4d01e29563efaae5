"""Whether a run was checked by the access policy (issue 27, the access-check race).

The chart's ValidatingAdmissionPolicy lets a CitationRun name only the Secrets and
ConfigMaps its creator may get. The operator reads them for a run only if that policy
checked the run when it was created, and the API server gives no sign on the run of
having checked it. Two facts together give it:

* **The policy is in force now, and since when.** The binding and the policy exist (read
  by name), and a server-side dry run of a probe CitationRun, marked with
  :data:`PROBE_ANNOTATION`, is refused with :data:`PROBE_MESSAGE` -- a validation of the
  policy itself that refuses only the probe. So the answer comes from the API server
  enforcing the policy, not from objects existing (enforcement reaches the API server
  some time after the objects are created, and a binding kept while its policy is
  deleted enforces nothing). The first refusal of a probe for one configuration of the
  two objects -- their uids and generations, which change on any edit, and on a
  deletion and re-creation -- is the time that configuration is known to be in force:
  ``access_policy_epochs`` keeps it in Postgres (not the operator's memory, so a
  restarted operator does not move it forward or lose it).
* **The run was created after that time.** Its ``creationTimestamp`` (set by the API
  server before admission) is at least one second after the refusal's ``Date`` (both the
  API server's clock, both truncated to seconds). A run created earlier -- while the
  policy was being installed, or before a policy that had been deleted came back -- may
  have been admitted unchecked: it fails at once with :class:`AccessUnchecked`, and is
  never retried, never waits until the policy appears.

A background loop probes every few seconds, so a configuration's epoch is recorded soon
after it is in force and a run created a little later passes.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import json
import logging
from dataclasses import dataclass
from typing import Any

import asyncpg
import kubernetes
from kubernetes.client.exceptions import ApiException

from citerun.core import db, errors, runspec
from citerun.kube import client as kube
from citerun.core import runspec as specs

logger = logging.getLogger(__name__)

#: The annotation that marks the operator's probe; the policy refuses any CitationRun
#: that carries it (templates/access-policy.yaml), so a refusal shows it is enforced.
PROBE_ANNOTATION = f"{runspec.GROUP}/access-policy-probe"
#: The policy's message for the probe, whose annotation names the policy asked about (the
#: chart writes the same words; a test checks), so another release's policy refusing it
#: does not answer for this one.
PROBE_MESSAGE = "citerun access policy probe: {policy} is in force"
#: The probe's name (a dry run: never stored, never seen by watches).
PROBE_NAME = "citerun-access-policy-probe"


#: What the probing loop waits out (the API server or the database away for a while).
_PASSING: tuple[type[BaseException], ...] = (kube.KubeError, *db.UNAVAILABLE)


class AccessUnchecked(errors.CiterunError):
    """The run may have been admitted without the access check: it is failed, not held."""


@dataclass(frozen=True)
class Configuration:
    """One configuration of the policy and its binding: any edit changes a generation,
    a deletion and re-creation a uid."""

    policy: str
    policy_uid: str
    policy_generation: int
    binding_uid: str
    binding_generation: int


async def configuration(binding: str) -> Configuration | None:
    """The binding (denying) and its policy as they are now; None if either is missing,
    or the binding does not deny, or the operator may not read them."""
    def read() -> Configuration | None:
        api = kubernetes.client.AdmissionregistrationV1Api(kube.api_client())
        try:
            bound = api.read_validating_admission_policy_binding(binding)
            if "Deny" not in (bound.spec.validation_actions or []):
                return None
            policy = api.read_validating_admission_policy(bound.spec.policy_name)
        except ApiException as err:
            if err.status in (403, 404):
                return None
            raise
        pm, bm = policy.metadata, bound.metadata
        if pm is None or bm is None:
            return None
        return Configuration(str(pm.name), str(pm.uid), int(pm.generation or 0),
                             str(bm.uid), int(bm.generation or 0))
    try:
        return await asyncio.to_thread(read)
    except ApiException as err:
        raise kube.KubeError("the API server could not be asked; trying again") from err


def probe_body(policy: str) -> dict[str, Any]:
    """A valid CitationRun that names nothing but carries the probe annotation."""
    return {"apiVersion": f"{specs.GROUP}/{specs.VERSION}", "kind": specs.KIND,
            "metadata": {"name": PROBE_NAME, "annotations": {PROBE_ANNOTATION: policy}},
            "spec": {"thesis": {"name": "probe.pdf", "digest": "0" * 64},
                     "sources": [{"name": "probe-source.pdf", "digest": "1" * 64}]}}


async def probe(namespace: str, policy: str) -> datetime.datetime | None:
    """The API server's time of a refusal of the probe by ``policy``, or None when the
    probe is admitted (the policy is not enforced) or refused for another reason."""
    expected = PROBE_MESSAGE.format(policy=policy)
    def create() -> datetime.datetime | None:
        try:
            kube.custom().create_namespaced_custom_object(
                specs.GROUP, specs.VERSION, namespace, specs.PLURAL, probe_body(policy),
                dry_run="All")
        except ApiException as err:
            if err.status is not None and err.status >= 500:
                raise
            try:
                message = str(json.loads(err.body or "{}").get("message", ""))
            except ValueError:
                message = ""
            if expected not in message:
                logger.warning("access policy probe refused otherwise: %s %s",
                               err.status, message[:300])
                return None
            date = (err.headers or {}).get("Date")
            return (email.utils.parsedate_to_datetime(date) if date
                    else datetime.datetime.now(datetime.UTC))
        return None
    try:
        return await asyncio.to_thread(create)
    except ApiException as err:
        raise kube.KubeError("the API server could not be asked; trying again") from err


_EPOCH = """
SELECT in_force_since FROM access_policy_epochs
WHERE policy_uid = $1 AND policy_generation = $2 AND binding_uid = $3
  AND binding_generation = $4
"""
_RECORD = """
INSERT INTO access_policy_epochs
    (policy_uid, policy_generation, binding_uid, binding_generation, in_force_since)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING
"""


class Guard:
    """The operator's answer to "was this run checked by the access policy?"."""

    def __init__(self, pool: asyncpg.Pool, binding: str, namespace: str, *,
                 probe_s: float = 5.0) -> None:
        self.pool, self.binding, self.namespace, self.probe_s = pool, binding, namespace, probe_s

    async def in_force_since(self) -> datetime.datetime | None:
        """Since when the current configuration is known to be enforced (None: it is
        not, or the policy is not installed). Probes once for a configuration not seen."""
        if not self.binding:
            return None
        current = await configuration(self.binding)
        if current is None:
            return None
        key = (current.policy_uid, current.policy_generation, current.binding_uid,
               current.binding_generation)
        since: datetime.datetime | None = await self.pool.fetchval(_EPOCH, *key)
        if since is not None:
            return since
        refused_at = await probe(self.namespace, current.policy)
        if refused_at is None:
            return None
        # Re-read: the configuration must not have changed around the probe.
        if await configuration(self.binding) != current:
            return None
        await self.pool.execute(_RECORD, *key, refused_at)
        recorded: datetime.datetime | None = await self.pool.fetchval(_EPOCH, *key)
        if recorded is not None:
            logger.info("access policy %s in force since %s", current.policy,
                        recorded.isoformat())
        return recorded

    async def check(self, created: datetime.datetime | None) -> None:
        """Raise :class:`AccessUnchecked` unless a run created at ``created`` was
        checked by the policy."""
        if not self.binding:
            raise AccessUnchecked("Secret and ConfigMap references are disabled: this "
                                  "installation has no access policy to check the run's creator")
        since = await self.in_force_since()
        if since is None:
            raise AccessUnchecked(
                f"the access policy {self.binding!r} that checks the run's creator is not in "
                "force, so the run was never checked: it is failed, not retried; create it "
                "again once the policy is in force")
        if created is None or created < since + datetime.timedelta(seconds=1):
            raise AccessUnchecked(
                "the run was created before the access policy that checks its creator was "
                f"in force (since {since.isoformat()}), so it may never have been checked: "
                "it is failed, not retried; delete it and create it again")

    async def run(self) -> None:
        """Record each configuration's epoch soon after it is enforced."""
        while True:
            try:
                await self.in_force_since()
            except _PASSING as err:
                logger.info("access policy probe: %s", err)
            await asyncio.sleep(self.probe_s)


def created_at(meta: Any) -> datetime.datetime | None:
    """A resource's ``creationTimestamp`` as an aware datetime (None if absent)."""
    value = meta.get("creationTimestamp") if meta is not None else None
    if not value:
        return None
    return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
