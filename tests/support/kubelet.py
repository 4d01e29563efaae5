"""A stand-in for the kubelet and the Deployment controllers, for one worker Deployment.

The test control plane runs no controllers and no kubelet, so a Deployment's replicas
never become pods. :class:`Kubelet` follows the worker Deployment on the real API server
and keeps one local ``citerun worker`` process per replica, each behind a Pod object it
creates (labelled with the Deployment's selector, named like a ReplicaSet's pods), so the
autoscaler sees pods and annotates them as it would in a cluster:

* scale-up: a new pod and worker process;
* scale-down: SIGTERM to the pod the ReplicaSet controller would delete first: not yet
  ready, then the lowest ``controller.kubernetes.io/pod-deletion-cost``, then the newest;
* a changed pod template (``kubectl rollout restart`` sets an annotation) is a rollout,
  done like ``maxSurge=1, maxUnavailable=0``: start a pod of the new template, and only
  once it is ready (its worker registered) SIGTERM one of the old template;
* a worker process that exits without being asked (SIGKILL, crash) is restarted in the
  same pod, under the same worker id, as ``restartPolicy: Always`` does;
* a SIGTERMed worker that has not exited after ``grace_s`` is SIGKILLed
  (``terminationGracePeriodSeconds``), and its Pod object is deleted once it exited.

One action per round, re-reading the Deployment every round, as a controller would.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
import logging
import pathlib
import random
import signal
import time
from typing import Any

import asyncpg
from kubernetes import client as k8s

from tests.conftest import WorkerProcess

logger = logging.getLogger(__name__)

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"


@dataclasses.dataclass
class LocalPod:
    name: str
    revision: str
    worker: WorkerProcess
    started_wall: dt.datetime
    restarts: int = 0
    ready: bool = False
    terminating_since: float | None = None
    deletion_cost: int = 0


@dataclasses.dataclass(frozen=True)
class Action:
    at: float        # monotonic
    what: str        # start | terminate | exited | restart | kill | grace-kill
    pod: str
    detail: str = ""
    cost: int | None = None  # the pod's deletion cost when it was terminated


def template_revision(template: dict[str, Any]) -> str:
    """A short hash of the pod template, as the pod-template-hash label is."""
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:8]


def restart_deployment(api: k8s.ApiClient, namespace: str, name: str) -> None:
    """What ``kubectl rollout restart`` does: stamp the pod template."""
    stamp = dt.datetime.now(dt.timezone.utc).isoformat()
    k8s.AppsV1Api(api).patch_namespaced_deployment(name, namespace, {
        "spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: stamp}}}}})


def worker_deployment(name: str, *, replicas: int = 0) -> dict[str, Any]:
    """A worker Deployment the API server accepts (nothing ever runs its image)."""
    labels = {"app.kubernetes.io/name": "citerun", "app.kubernetes.io/component": "worker"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "strategy": {"type": "RollingUpdate",
                                  "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "terminationGracePeriodSeconds": 30,
                         "containers": [{"name": "worker", "image": "citerun:test",
                                         "args": ["worker"]}]}}}}


class Kubelet:
    """Keeps local worker processes in line with a Deployment; see the module docstring."""

    def __init__(self, api: k8s.ApiClient, namespace: str, deployment: str, database_url: str,
                 log_dir: pathlib.Path, *, env: dict[str, str] | None = None,
                 tasks: str = "tests.support.tasks:registry", poll_s: float = 0.1,
                 grace_s: float = 30.0) -> None:
        self.api = api
        self.namespace = namespace
        self.deployment = deployment
        self.url = database_url
        self.log_dir = log_dir
        self.env = env or {}
        self.tasks = tasks
        self.poll_s = poll_s
        self.grace_s = grace_s
        self.pods: dict[str, LocalPod] = {}
        self.actions: list[Action] = []
        self.exit_codes: dict[str, int] = {}    # terminated pod -> its worker's exit code
        self.desired = 0
        self.revision = ""
        self._serial = 0
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._pool: asyncpg.Pool | None = None
        self._template: dict[str, Any] = {}
        self.rounds = 0
        self.errors: list[str] = []

    # -- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> Kubelet:
        self._pool = await asyncpg.create_pool(self.url, min_size=1, max_size=2)
        self._task = asyncio.create_task(self._run(), name="kubelet")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def stop(self) -> None:
        """Stop following the Deployment; SIGTERM what still runs and wait for it."""
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        for pod in self.pods.values():
            if pod.worker.proc.poll() is None:
                pod.worker.signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        for pod in list(self.pods.values()):
            while pod.worker.proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            pod.worker.stop()
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    # -- what tests ask -------------------------------------------------------------------

    def live(self) -> list[LocalPod]:
        return [p for p in self.pods.values() if p.terminating_since is None]

    def rolled_out(self) -> bool:
        """Every replica runs the current template, ready, and nothing old is left."""
        return (len(self.pods) == self.desired
                and all(p.revision == self.revision and p.ready
                        and p.terminating_since is None for p in self.pods.values()))

    def kill(self, count: int, rng: random.Random | None = None) -> list[str]:
        """SIGKILL ``count`` running workers (their pods restart them); return the pods."""
        candidates = [p for p in self.live() if p.worker.proc.poll() is None]
        victims = (rng or random).sample(candidates, min(count, len(candidates)))
        for pod in victims:
            pod.worker.signal(signal.SIGKILL)
            self._record("kill", pod.name)
        return [p.name for p in victims]

    def count(self, what: str) -> int:
        return sum(1 for a in self.actions if a.what == what)

    # -- the control loop -----------------------------------------------------------------

    async def _run(self) -> None:
        while not self._stopping:
            try:
                await self._round()
            except Exception as err:  # noqa: BLE001 - a kubelet keeps going; tests see errors
                self.errors.append(repr(err))
                logger.warning("kubelet round failed: %r", err)
            self.rounds += 1
            await asyncio.sleep(self.poll_s)

    async def _round(self) -> None:
        apps, core = k8s.AppsV1Api(self.api), k8s.CoreV1Api(self.api)
        deployment = await asyncio.to_thread(
            apps.read_namespaced_deployment, self.deployment, self.namespace)
        raw = self.api.sanitize_for_serialization(deployment)
        self.desired = int(raw["spec"].get("replicas") or 0)
        self._template = raw["spec"]["template"]
        self.revision = template_revision(self._template)
        await self._observe(core)
        if self._reap():
            return
        live = self.live()
        old = [p for p in live if p.revision != self.revision]
        new = [p for p in live if p.revision == self.revision]
        ready = [p for p in live if p.ready]
        if len(live) > self.desired + (1 if old else 0):
            await self._terminate(self._pick_victim(live, old), "scale-down")
        elif old and len(ready) > self.desired and all(p.ready for p in new):
            await self._terminate(self._pick_victim(old, old), "rollout")
        elif old and len(live) < self.desired + 1 and len(new) < self.desired \
                and all(p.ready for p in new):
            await self._start()
        elif not old and len(live) < self.desired:
            await self._start()
        await self._enforce_grace()

    async def _observe(self, core: k8s.CoreV1Api) -> None:
        """Readiness from the workers table; deletion costs from the Pod objects."""
        assert self._pool is not None
        rows = await self._pool.fetch("SELECT id, state, started_at FROM workers")
        registered = {r["id"]: r for r in rows}
        for pod in self.pods.values():
            row = registered.get(pod.name)
            pod.ready = (pod.worker.proc.poll() is None and row is not None
                         and row["state"] == "active" and row["started_at"] >= pod.started_wall)
        selector = ",".join(f"{k}={v}" for k, v in self._template["metadata"]["labels"].items())
        objs = await asyncio.to_thread(core.list_namespaced_pod, self.namespace,
                                       label_selector=selector)
        for obj in objs.items:
            pod = self.pods.get(obj.metadata.name)
            if pod is not None:
                cost = (obj.metadata.annotations or {}).get(DELETION_COST)
                pod.deletion_cost = int(cost) if cost is not None else 0

    def _reap(self) -> bool:
        """Handle exited workers: a terminated pod goes, any other restarts in place."""
        acted = False
        for pod in list(self.pods.values()):
            code = pod.worker.proc.poll()
            if code is None:
                continue
            pod.worker.stop()
            if pod.terminating_since is not None:
                del self.pods[pod.name]
                self.exit_codes[pod.name] = code
                self._record("exited", pod.name, f"exit {code}")
                self._delete_pod_object(pod.name)
            else:
                pod.restarts += 1
                pod.started_wall = dt.datetime.now(dt.timezone.utc)
                pod.ready = False
                pod.worker = self._spawn(pod.name, pod.restarts)
                self._record("restart", pod.name, f"exit {code}, restart {pod.restarts}")
            acted = True
        return acted

    def _pick_victim(self, among: list[LocalPod], old: list[LocalPod]) -> LocalPod:
        """The ReplicaSet controller's order: not ready, old template, lowest cost, newest."""
        return min(among, key=lambda p: (p.ready, p not in old, p.deletion_cost,
                                         -p.started_wall.timestamp()))

    async def _start(self) -> None:
        self._serial += 1
        name = f"{self.deployment}-{self.revision}-{self._serial:03d}"
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "labels": {**self._template["metadata"]["labels"],
                                     "pod-template-hash": self.revision},
            "annotations": dict(self._template["metadata"].get("annotations") or {})},
            "spec": self._template["spec"]}
        await asyncio.to_thread(k8s.CoreV1Api(self.api).create_namespaced_pod,
                                self.namespace, body)
        self.pods[name] = LocalPod(name, self.revision, self._spawn(name, 0),
                                   dt.datetime.now(dt.timezone.utc))
        self._record("start", name)

    async def _terminate(self, pod: LocalPod, why: str) -> None:
        pod.terminating_since = time.monotonic()
        pod.worker.signal(signal.SIGTERM)
        self._record("terminate", pod.name, why, cost=pod.deletion_cost)

    async def _enforce_grace(self) -> None:
        for pod in self.pods.values():
            if (pod.terminating_since is not None and pod.worker.proc.poll() is None
                    and time.monotonic() - pod.terminating_since > self.grace_s):
                pod.worker.signal(signal.SIGKILL)
                self._record("grace-kill", pod.name)

    def _spawn(self, pod: str, restarts: int) -> WorkerProcess:
        return WorkerProcess(self.url, self.log_dir, f"{pod}.{restarts}",
                             {**self.env, "CITERUN_WORKER__ID": pod}, tasks=self.tasks)

    def _delete_pod_object(self, name: str) -> None:
        # An unscheduled pod (no nodeName) is deleted at once, grace period or not.
        with contextlib.suppress(k8s.ApiException):
            k8s.CoreV1Api(self.api).delete_namespaced_pod(name, self.namespace)

    def _record(self, what: str, pod: str, detail: str = "", cost: int | None = None) -> None:
        self.actions.append(Action(time.monotonic(), what, pod, detail, cost))
        logger.info("kubelet: %s %s %s", what, pod, detail)
