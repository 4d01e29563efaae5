"""Scaling the worker Deployment by queue depth.

desired = clamp(ceil(outstanding / tasks_per_worker), min, max), but never below the
number of workers busy right now. Scaling up happens as soon as work arrives: the
autoscaler LISTENs on ``citerun_tasks`` and re-evaluates on every NOTIFY (coalesced), not
on a 30 s poll. Scaling down takes the highest recommendation of the last
``stabilization_s`` (as the HPA does), and scaling to ``min_workers`` waits until the
queue has been empty for ``cooldown_s``. Before lowering replicas, every worker pod gets
a ``controller.kubernetes.io/pod-deletion-cost`` from its ``workers`` row, so the
ReplicaSet deletes idle pods first and busy ones last.

Only one operator replica scales: the holder of a coordination.k8s.io Lease. A Lease
rather than kopf peering because peering pauses *all* handlers of the other replicas,
while status sync and admission are safe to run twice (idempotent); only scaling needs a
single actor.

:func:`decide` is pure: the run loop feeds it observations and applies its decisions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import math
import time
import typing
from collections import deque
from typing import Any

import asyncpg
import kubernetes
from kubernetes.client.exceptions import ApiException

from citerun.core import listener, queue
from citerun.kube import client as kube
from citerun.operator import metrics as operator_metrics
from citerun.operator.settings import AutoscalerConfig, OperatorConfig
from citerun.core.settings import QueueSettings

logger = logging.getLogger(__name__)

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


@dataclasses.dataclass(frozen=True)
class Observation:
    now: float          # monotonic seconds
    due: int            # queued tasks that are due
    running: int        # tasks held by workers
    busy_workers: int   # workers holding at least one task
    current: int        # the Deployment's replicas now


@dataclasses.dataclass(frozen=True)
class Decision:
    replicas: int
    reason: str

    @property
    def label(self) -> str:
        return self.reason.split(":", 1)[0]


@dataclasses.dataclass
class State:
    """What :func:`decide` remembers between observations."""

    recommendations: deque[tuple[float, int]] = dataclasses.field(default_factory=deque)
    idle_since: float | None = None


def decide(obs: Observation, state: State, config: AutoscalerConfig) -> Decision:
    """The replicas the worker Deployment should have now, and why."""
    outstanding = obs.due + obs.running
    # A worker cannot be busy without a running task; a busy count above ``running`` is
    # a workers row whose last heartbeat predates its going idle.
    busy = min(obs.busy_workers, obs.running)
    floor = max(config.min_workers, min(busy, config.max_workers))
    if outstanding > 0:
        state.idle_since = None
        need = math.ceil(outstanding / config.tasks_per_worker)
    else:
        if state.idle_since is None:
            state.idle_since = obs.now
        need = config.min_workers
    target = min(max(need, floor), config.max_workers)
    # The window holds what the load needed, not what was kept: a cooldown that held the
    # old count must not stretch the window past its end.
    window = state.recommendations
    if not window:
        # No history (a new Lease holder, a restart): what runs now counts as a
        # recommendation, so the first scale-down still waits a whole window.
        window.append((obs.now, obs.current))
    window.append((obs.now, target))
    while window and window[0][0] < obs.now - config.stabilization_s:
        window.popleft()
    if target > obs.current:
        return Decision(target, f"scale-up: {outstanding} outstanding task(s), "
                                f"{config.tasks_per_worker} per worker")
    if target == obs.current:
        return Decision(obs.current, "steady")
    stabilized = max(t for _, t in window)
    cooling = state.idle_since is not None and obs.now - state.idle_since < config.cooldown_s
    if cooling:
        # Idle but not for cooldown_s yet: keep what runs (only trim above max_workers).
        stabilized = max(stabilized, min(obs.current, config.max_workers))
    if stabilized >= obs.current:
        return Decision(obs.current, "cooldown" if cooling else "stabilizing")
    if outstanding == 0 and stabilized == config.min_workers:
        return Decision(stabilized, f"scale-to-min: idle for {config.cooldown_s:.0f}s")
    return Decision(stabilized, f"scale-down: {outstanding} outstanding task(s), stable "
                                f"for {config.stabilization_s:.0f}s")


class Autoscaler:
    def __init__(self, pool: asyncpg.Pool, operator: OperatorConfig,
                 config: AutoscalerConfig, queue_settings: QueueSettings, *, identity: str,
                 metrics: operator_metrics.OperatorMetrics | None = None) -> None:
        """``identity`` names this replica in the Lease (the pod's name on Kubernetes)."""
        self.pool = pool
        self.queue = queue_settings
        self.metrics = metrics
        self.operator = operator
        self.config = config
        self.state = State()
        self.identity = identity
        self._wake = asyncio.Event()
        self._renewed_at: float | None = None  # monotonic time of our last renewal
        self.decisions: list[tuple[float, Decision]] = []

    def _on_notify(self, _source: str, _payload: str | None) -> None:
        self._wake.set()

    def leading(self) -> bool:
        """Whether this replica held the Lease at its last renewal, within the Lease's
        duration (the leader's maintenance services, e.g. the cleaner, ask this)."""
        return (self._renewed_at is not None
                and time.monotonic() - self._renewed_at < self.config.lease_duration_s)

    async def run(self, url: str) -> None:
        follow = listener.Listener(url, self._on_notify, channel=queue.TASKS_CHANNEL)
        task = asyncio.create_task(follow.run())
        try:
            while True:
                try:
                    if await self.hold_lease():
                        await self.run_once()
                    else:
                        # What another replica saw while it scaled is not ours to judge
                        # by: start afresh if the Lease comes back.
                        self.state = State()
                except Exception as err:  # noqa: BLE001 - try again next round
                    logger.warning("autoscaler round failed: %s", err)
                try:
                    await asyncio.wait_for(self._wake.wait(), self.config.interval_s)
                except asyncio.TimeoutError:
                    follow.check()
                self._wake.clear()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await self.release_lease()

    async def release_lease(self) -> None:
        """Give the Lease up on the way out (a rolling restart of the operator), so the
        next replica scales at once instead of waiting out ``lease_duration_s`` (seen on
        the real node: a scale-up 16 s late after the operator's restart). Best effort:
        a failed release only costs that wait."""
        if self._renewed_at is None:
            return
        self._renewed_at = None
        try:
            await asyncio.wait_for(asyncio.to_thread(self._release_lease_sync), 5)
        except Exception as err:  # noqa: BLE001 - the Lease then expires on its own
            logger.warning("could not release the autoscaler Lease: %s", err)

    def _release_lease_sync(self) -> None:
        api = kube.coordination()
        name, ns = self.config.lease_name, self.operator.namespace
        lease = api.read_namespaced_lease(name, ns)
        spec = lease.spec or kubernetes.client.V1LeaseSpec()
        if spec.holder_identity != self.identity:
            return
        # As client-go's ReleaseOnCancel: no holder, a 1 s duration, renewed now.
        stamp = _micro_time(dt.datetime.now(dt.timezone.utc))
        body: dict[str, Any] = {
            "metadata": {"name": name, "resourceVersion": (
                lease.metadata or kubernetes.client.V1ObjectMeta()).resource_version},
            "spec": {"leaseDurationSeconds": 1, "acquireTime": stamp, "renewTime": stamp,
                     "leaseTransitions": spec.lease_transitions or 0}}
        try:
            api.replace_namespaced_lease(name, ns, body)  # type: ignore[arg-type]
        except ApiException as err:
            if err.status != 409:  # 409: someone else has it already
                raise
        logger.info("released the autoscaler Lease", extra={"action": "lease"})

    async def observe(self) -> Observation:
        # The leader also requeues expired leases on every evaluation, so a SIGKILLed or
        # vanished worker's tasks come back within about a lease even when every other
        # worker is idle (idle workers sweep only every poll_s).
        swept = await queue.sweep_stalled(
            self.pool, backoff=self.queue.retry_policy(), requeue_only=True)
        if swept.requeued:
            logger.info("requeued %d task(s) whose lease expired", len(swept.requeued),
                        extra={"action": "sweep"})
        due, running = await queue.outstanding(self.pool)
        busy = await queue.busy_workers(self.pool, fresh_s=120)
        scale = _plain(await asyncio.to_thread(
            kube.apps().read_namespaced_deployment_scale, self.operator.worker_deployment,
            self.operator.namespace))
        return Observation(time.monotonic(), due, running,
                           sum(1 for n in busy.values() if n > 0),
                           int((scale.get("spec") or {}).get("replicas") or 0))

    async def run_once(self) -> Decision:
        """Observe, decide, and apply; return the decision."""
        obs = await self.observe()
        decision = decide(obs, self.state, self.config)
        if self.metrics is not None:
            m = self.metrics
            m.desired.set(decision.replicas)
            m.current.set(obs.current)
            m.outstanding.labels("due").set(obs.due)
            m.outstanding.labels("running").set(obs.running)
            m.busy_workers.set(obs.busy_workers)
            m.decisions.labels(decision.label).inc()
            if decision.replicas != obs.current:
                m.scalings.labels("up" if decision.replicas > obs.current else "down").inc()
        if decision.replicas != obs.current:
            if decision.replicas < obs.current:
                await self.mark_deletion_costs()
            await self.scale(obs.current, decision)
        self.decisions.append((obs.now, decision))
        del self.decisions[:-100]
        return decision

    async def scale(self, current: int, decision: Decision) -> None:
        name, ns = self.operator.worker_deployment, self.operator.namespace
        await asyncio.to_thread(kube.apps().patch_namespaced_deployment_scale, name, ns,
                                {"spec": {"replicas": decision.replicas}})
        logger.info("scaled %s/%s from %d to %d (%s)", ns, name, current, decision.replicas,
                    decision.reason, extra={"action": "scale", "reason": decision.label})
        deployment = await asyncio.to_thread(kube.apps().read_namespaced_deployment, name, ns)
        await kube.post_event(_plain(deployment) | {
            "apiVersion": "apps/v1", "kind": "Deployment"}, type_="Normal", reason="Scaled",
            message=f"{current} -> {decision.replicas}: {decision.reason}")

    async def mark_deletion_costs(self) -> dict[str, int]:
        """Annotate worker pods so the idle ones are deleted first; return the costs."""
        name, ns = self.operator.worker_deployment, self.operator.namespace
        deployment = _plain(await asyncio.to_thread(kube.apps().read_namespaced_deployment,
                                                    name, ns))
        labels = deployment["spec"]["selector"].get("matchLabels") or {}
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        pods = _plain(await asyncio.to_thread(kube.core().list_namespaced_pod, ns,
                                              label_selector=selector))
        busy = await queue.busy_workers(self.pool, fresh_s=120)
        costs: dict[str, int] = {}
        for pod in pods.get("items") or []:
            meta = pod["metadata"]
            held = busy.get(meta["name"], 0)
            cost = held * 1000 if held else -1000
            costs[meta["name"]] = cost
            if (meta.get("annotations") or {}).get(DELETION_COST) == str(cost):
                continue
            await asyncio.to_thread(kube.core().patch_namespaced_pod, meta["name"], ns,
                                    {"metadata": {"annotations": {DELETION_COST: str(cost)}}})
        return costs

    async def hold_lease(self) -> bool:
        """Acquire or renew the autoscaler Lease; True if this replica holds it.

        A Lease renewed less than a third of its duration ago is held without asking the
        API server again, so a burst of NOTIFYs costs no Lease round trips (the margin
        is client-go's: renew well before another replica may take over).
        """
        if (self._renewed_at is not None
                and time.monotonic() - self._renewed_at < self.config.lease_duration_s / 3):
            return True
        started = time.monotonic()
        try:
            held = await asyncio.to_thread(self._hold_lease_sync)
        except BaseException:
            self._renewed_at = None
            raise
        self._renewed_at = started if held else None
        if self.metrics is not None:
            self.metrics.leader.set(1 if held else 0)
        return held

    def _hold_lease_sync(self) -> bool:
        api = kube.coordination()
        name, ns = self.config.lease_name, self.operator.namespace
        now = dt.datetime.now(dt.timezone.utc)
        stamp = _micro_time(now)
        duration = int(math.ceil(self.config.lease_duration_s))
        body: dict[str, Any] = {"metadata": {"name": name}, "spec": {
            "holderIdentity": self.identity, "leaseDurationSeconds": duration,
            "acquireTime": stamp, "renewTime": stamp}}
        try:
            lease = api.read_namespaced_lease(name, ns)
        except ApiException as err:
            if err.status != 404:
                raise
            try:
                api.create_namespaced_lease(ns, body)  # type: ignore[arg-type]  # see below
                return True
            except ApiException as create_err:
                if create_err.status == 409:
                    return False
                raise
        spec = lease.spec or kubernetes.client.V1LeaseSpec()
        renewed = spec.renew_time or spec.acquire_time
        expired = (not spec.holder_identity  # released by its last holder
                   or renewed is None or (now - renewed).total_seconds() > (
                       spec.lease_duration_seconds or duration))
        if spec.holder_identity != self.identity and not expired:
            return False
        if spec.holder_identity == self.identity:
            body["spec"]["acquireTime"] = _micro_time(spec.acquire_time or now)
            body["spec"]["leaseTransitions"] = spec.lease_transitions or 0
        else:
            body["spec"]["leaseTransitions"] = (spec.lease_transitions or 0) + 1
        body["metadata"]["resourceVersion"] = (lease.metadata or
                                               kubernetes.client.V1ObjectMeta()).resource_version
        try:
            # A dict body, not a V1Lease: the models serialize datetimes with isoformat(),
            # which drops the fraction at zero microseconds, and MicroTime requires it.
            api.replace_namespaced_lease(name, ns, body)  # type: ignore[arg-type]
        except ApiException as err:
            if err.status == 409:
                return False
            raise
        return True


def _plain(obj: object) -> dict[str, Any]:
    """A kubernetes client model as the JSON the API server sent (camelCase keys)."""
    plain = kube.api_client().sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]
    return typing.cast(dict[str, Any], plain)


def _micro_time(moment: dt.datetime) -> str:
    """A MicroTime as the API server parses it: always six fractional digits (isoformat
    drops them when the microseconds are zero, which the server rejects)."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
