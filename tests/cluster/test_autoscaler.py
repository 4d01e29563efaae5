"""The autoscaler of the real operator against a real kube-apiserver and Postgres.

The API server runs no controllers, so the worker pods are played by
:class:`tests.support.kubelet.Kubelet`: one Pod object and one real ``citerun worker``
(its id the pod name) per replica, and scale-downs that honour the deletion costs.
"""

from __future__ import annotations

import asyncio
import pathlib
import signal
import time
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest
from kubernetes import client as k8s

import operator_support as ops
from citerun.core import queue
from tests.support import kubelet as kubelet_mod
from tests.support import tasks as test_tasks

pytestmark = pytest.mark.cluster

DEPLOYMENT = "citerun-worker"
LEASE = "citerun-autoscaler"


def scaler_env(pod_name: str, **overrides: str) -> dict[str, str]:
    env = {"CITERUN_AUTOSCALER__ENABLED": "true",
           "CITERUN_OPERATOR__WORKER_DEPLOYMENT": DEPLOYMENT,
           "CITERUN_AUTOSCALER__MIN_WORKERS": "0",
           "CITERUN_AUTOSCALER__MAX_WORKERS": "4",
           "CITERUN_AUTOSCALER__TASKS_PER_WORKER": "2",
           "CITERUN_AUTOSCALER__STABILIZATION_S": "3",
           "CITERUN_AUTOSCALER__COOLDOWN_S": "3",
           "CITERUN_AUTOSCALER__INTERVAL_S": "0.5",
           "CITERUN_AUTOSCALER__LEASE_DURATION_S": "3",
           "POD_NAME": pod_name}
    env.update({f"CITERUN_AUTOSCALER__{k.upper()}": v for k, v in overrides.items()})
    return env


@pytest.fixture
def deployment(api_client: k8s.ApiClient, namespace: str) -> str:
    k8s.AppsV1Api(api_client).create_namespaced_deployment(
        namespace, kubelet_mod.worker_deployment(DEPLOYMENT))
    return DEPLOYMENT


@pytest.fixture
def operators(control_plane: Any, namespace: str, database_url: str, tmp_path: pathlib.Path,
              api_client: k8s.ApiClient, crd: None, deployment: str) -> Iterator[Any]:
    started: list[ops.OperatorProcess] = []

    def start(name: str, env: dict[str, str]) -> ops.OperatorProcess:
        op = ops.OperatorProcess(control_plane.kubeconfig, database_url, namespace, tmp_path,
                                 name, env)
        started.append(op)
        return op

    yield start
    for op in started:
        op.stop()


def replicas(api: k8s.ApiClient, namespace: str) -> int:
    scale = k8s.AppsV1Api(api).read_namespaced_deployment_scale(DEPLOYMENT, namespace)
    return int(scale.spec.replicas or 0)


def lease_holder(api: k8s.ApiClient, namespace: str) -> str | None:
    try:
        lease = k8s.CoordinationV1Api(api).read_namespaced_lease(LEASE, namespace)
    except k8s.ApiException as err:
        if err.status == 404:
            return None
        raise
    return str(lease.spec.holder_identity)


def scaled_events(api: k8s.ApiClient, namespace: str) -> list[str]:
    events = k8s.CoreV1Api(api).list_namespaced_event(namespace).items
    return [e.message for e in sorted(events, key=lambda e: int(e.metadata.resource_version))
            if e.reason == "Scaled" and e.involved_object.kind == "Deployment"
            and e.involved_object.name == DEPLOYMENT]


async def wait_replicas(api: k8s.ApiClient, namespace: str, expected: int, timeout: float,
                        logs: Any) -> float:
    """Poll the scale subresource every 20 ms; return when it showed ``expected``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await asyncio.to_thread(replicas, api, namespace) == expected:
            return time.monotonic()
        await asyncio.sleep(0.02)
    raise AssertionError(f"replicas never became {expected} within {timeout}s "
                         f"(now {replicas(api, namespace)})\n{logs()[-5000:]}")


def _logs(*procs: Any) -> Any:
    return lambda: "\n".join(f"--- {p.name}\n{p.log()[-2500:]}" for p in procs)


async def test_scale_up_follows_notify_not_the_interval(
        operators: Any, api_client: k8s.ApiClient, namespace: str, pool: asyncpg.Pool) -> None:
    # With a 60 s interval only the NOTIFY of the enqueue can make it scale within seconds.
    op = operators("op", scaler_env("op", interval_s="60"))
    await ops.wait_for(lambda: lease_holder(api_client, namespace) == "op", 60,
                       "the operator to take the Lease", op.log)
    await asyncio.sleep(1)  # the first round (at startup) is over; now it waits 60 s
    reactions = []
    for batch, expected in ((3, 2), (4, 4)):   # 3 tasks -> 2 workers, 7 -> 4 (max)
        await queue.enqueue(pool, [queue.NewTask("work") for _ in range(batch)])
        enqueued = time.monotonic()
        reactions.append(await wait_replicas(api_client, namespace, expected, 10, op.log)
                         - enqueued)
    print(f"scale-up reaction (enqueue -> spec.replicas): {reactions}")
    assert max(reactions) < 3, reactions
    await ops.wait_for(lambda: len(scaled_events(api_client, namespace)) >= 2, 10,
                       "two Scaled events", op.log)
    assert scaled_events(api_client, namespace) == [
        "0 -> 2: scale-up: 3 outstanding task(s), 2 per worker",
        "2 -> 4: scale-up: 7 outstanding task(s), 2 per worker"]


async def test_scales_up_marks_idle_pods_cheapest_scales_down_and_to_zero(
        operators: Any, api_client: k8s.ApiClient, namespace: str, database_url: str,
        pool: asyncpg.Pool, tmp_path: pathlib.Path) -> None:
    await pool.execute(test_tasks.SCHEMA)
    op = operators("op", scaler_env("op"))
    await ops.wait_for(lambda: lease_holder(api_client, namespace) == "op", 60,
                       "the operator to take the Lease", op.log)
    # One long task (first, so the first worker up claims it) and five quick ones.
    ids = await queue.enqueue(pool, [queue.NewTask("work", {"seconds": 15}),
                                     *(queue.NewTask("work") for _ in range(5))])
    long_id = ids[0]
    enqueued = time.monotonic()
    up = await wait_replicas(api_client, namespace, 3, 10, op.log) - enqueued
    print(f"scale-up reaction (enqueue -> spec.replicas 3): {up:.3f}s")
    assert up < 3

    async with kubelet_mod.Kubelet(api_client, namespace, DEPLOYMENT, database_url,
                                   tmp_path) as kubelet:
        logs = _logs(op, *[p.worker for p in kubelet.pods.values()])
        await ops.wait_for(lambda: pool.fetchval(
            "SELECT worker_id FROM tasks WHERE id = $1 AND state = 'running'", long_id),
            60, "the long task to be claimed", logs)
        await ops.wait_for(lambda: pool.fetchval(
            "SELECT count(*) = 5 FROM test_done WHERE task_id <> $1", long_id),
            60, "the quick tasks to finish", logs)
        busy_pod = await pool.fetchval("SELECT worker_id FROM tasks WHERE id = $1", long_id)
        await wait_replicas(api_client, namespace, 1, 30, op.log)
        # The one left is the busy one, marked expensive; the idle ones went first.
        annotation = await asyncio.to_thread(
            lambda: k8s.CoreV1Api(api_client).read_namespaced_pod(busy_pod, namespace)
            .metadata.annotations or {})
        assert annotation.get(kubelet_mod.DELETION_COST) == "1000", annotation
        await ops.wait_for(lambda: [p.name for p in kubelet.live()] == [busy_pod], 30,
                           "the kubelet to keep only the busy pod", logs)
        terminated = [a for a in kubelet.actions if a.what == "terminate"]
        assert terminated and all(a.cost == -1000 for a in terminated), terminated
        assert await pool.fetchval("SELECT state FROM tasks WHERE id = $1", long_id) == "running"

        # Once the long task is done, the queue is empty: zero after the cooldown.
        await ops.wait_for(lambda: pool.fetchval(
            "SELECT finished_at FROM tasks WHERE id = $1 AND state = 'succeeded'", long_id),
            60, "the long task to finish", logs)
        finished = time.monotonic()
        down = await wait_replicas(api_client, namespace, 0, 30, op.log) - finished
        print(f"idle -> zero replicas: {down:.3f}s (cooldown 3 s)")
        assert 2.5 <= down < 10, down
        await ops.wait_for(lambda: not kubelet.pods, 30, "the last worker to stop", logs)
        assert set(kubelet.exit_codes.values()) == {0}, kubelet.exit_codes
        assert kubelet.count("restart") == 0 and not kubelet.errors, kubelet.errors

    await ops.wait_for(lambda: scaled_events(api_client, namespace)[-1:] == [
        "1 -> 0: scale-to-min: idle for 3s"], 10, "the Scaled event of the scale to zero",
        op.log)
    events = scaled_events(api_client, namespace)
    assert events[0] == "0 -> 3: scale-up: 6 outstanding task(s), 2 per worker", events
    assert events[-1] == "1 -> 0: scale-to-min: idle for 3s", events
    assert any(": scale-down: " in m for m in events), events
    assert await pool.fetchval("SELECT count(*) FROM test_done") == 6


async def test_a_stopping_leader_hands_the_lease_over_at_once(
        operators: Any, api_client: k8s.ApiClient, namespace: str, pool: asyncpg.Pool) -> None:
    # A rolling restart of the operator: the old replica is SIGTERMed. It gives the Lease
    # up, so the new one scales without waiting out the Lease (60 s here).
    a = operators("op-a", scaler_env("op-a", lease_duration_s="60"))
    await ops.wait_for(lambda: lease_holder(api_client, namespace) == "op-a", 60,
                       "op-a to take the Lease", a.log)
    b = operators("op-b", scaler_env("op-b", lease_duration_s="60"))
    await asyncio.sleep(5)  # b is up and finds the Lease held
    assert b.proc.poll() is None, b.log()
    a.stop(signal.SIGTERM)
    stopped = time.monotonic()
    assert "released the autoscaler Lease" in a.log(), a.log()[-3000:]
    await queue.enqueue(pool, [queue.NewTask("work") for _ in range(4)])
    await wait_replicas(api_client, namespace, 2, 30, _logs(a, b))
    took_over = time.monotonic() - stopped
    assert took_over < 30, took_over
    assert lease_holder(api_client, namespace) == "op-b"


async def test_only_the_lease_holder_scales(
        operators: Any, api_client: k8s.ApiClient, namespace: str, pool: asyncpg.Pool) -> None:
    # The two replicas disagree on purpose: a would run 1 worker for 8 tasks, b 8. The
    # replicas show whose decisions are applied.
    a = operators("op-a", scaler_env("op-a", tasks_per_worker="8", max_workers="8"))
    await ops.wait_for(lambda: lease_holder(api_client, namespace) == "op-a", 60,
                       "op-a to take the Lease", a.log)
    b = operators("op-b", scaler_env("op-b", tasks_per_worker="1", max_workers="8"))
    await asyncio.sleep(10)  # b is up and evaluating (every 0.5 s) by now
    assert b.proc.poll() is None, b.log()
    await queue.enqueue(pool, [queue.NewTask("work") for _ in range(8)])
    await wait_replicas(api_client, namespace, 1, 10, _logs(a, b))
    for _ in range(20):  # 4 s of b evaluating (and being woken by NOTIFYs)
        await pool.execute("SELECT pg_notify('citerun_tasks', 'work')")
        assert replicas(api_client, namespace) == 1
        assert lease_holder(api_client, namespace) == "op-a"
        await asyncio.sleep(0.2)
    a.stop(signal.SIGKILL)
    killed = time.monotonic()
    await wait_replicas(api_client, namespace, 8, 20, _logs(a, b))
    took_over = time.monotonic() - killed
    print(f"op-b scaled {took_over:.1f}s after op-a was killed (Lease of 3 s)")
    lease = k8s.CoordinationV1Api(api_client).read_namespaced_lease(LEASE, namespace)
    assert lease.spec.holder_identity == "op-b"
    assert lease.spec.lease_transitions == 1
    expected = ["0 -> 1: scale-up: 8 outstanding task(s), 8 per worker",
                "1 -> 8: scale-up: 8 outstanding task(s), 1 per worker"]
    await ops.wait_for(lambda: len(scaled_events(api_client, namespace)) >= 2, 10,
                       "the second Scaled event", b.log)
    assert scaled_events(api_client, namespace) == expected
