"""Rolling restarts and SIGKILLs of the worker Deployment in the middle of a run lose nothing.

The real operator autoscales a worker Deployment on a real API server;
:class:`tests.support.kubelet.Kubelet` runs one real ``citerun worker`` per replica and
replaces them on a rollout as ``maxSurge=1, maxUnavailable=0`` does (start the new pod,
SIGTERM the old once the new one is ready). During a run of 480 tasks every worker is
replaced twice and three are SIGKILLed; every task must then be done exactly once.
"""

from __future__ import annotations

import asyncio
import pathlib
import random
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import asyncpg
import pytest
from kubernetes import client as k8s

from citerun.core import queue
from tests.support import kubelet as kubelet_mod
from tests.support import tasks as test_tasks

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "cluster"))
import controlplane  # noqa: E402
import operator_support as ops  # noqa: E402

pytestmark = [pytest.mark.chaos, pytest.mark.cluster]

DEPLOYMENT = "citerun-worker"
TASKS = 480
LONG_EVERY = 20       # every 20th task sleeps LONG_S: longer than the drain timeout (3 s),
LONG_S = 8.0          # so a SIGTERM during one releases it (uncharged) for another worker
SHORT_S = 0.3


@pytest.fixture(scope="module")
def control_plane() -> Iterator[controlplane.ControlPlane]:
    """A control plane of this module's own (tests/cluster's fixtures live in its conftest)."""
    import os
    try:
        plane = controlplane.ControlPlane(bin_dir=controlplane.build())
        plane.start()
    except (controlplane.ControlPlaneError, OSError) as err:
        if os.environ.get("CI") == "true":
            pytest.fail(f"no test control plane: {err}", pytrace=False)
        pytest.skip(f"no test control plane: {err}")
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def namespace(control_plane: controlplane.ControlPlane) -> Iterator[str]:
    name = f"rolling-{uuid.uuid4().hex[:6]}"
    control_plane.create_namespace(name)
    yield name
    control_plane.delete_namespace(name)


@pytest.fixture
def api_client(control_plane: controlplane.ControlPlane) -> Iterator[k8s.ApiClient]:
    with control_plane.client() as api:
        yield api


async def _until(check: Callable[[], Any], timeout: float, what: str,
                 logs: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if isinstance(value, Awaitable):
            value = await value
        if value:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{logs()[-8000:]}")


async def test_two_rollouts_and_sigkills_mid_run_lose_and_duplicate_nothing(
        control_plane: controlplane.ControlPlane, namespace: str, api_client: k8s.ApiClient,
        database_url: str, pool: asyncpg.Pool, tmp_path: pathlib.Path) -> None:
    started = time.monotonic()
    control_plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ops.CRD))
    k8s.AppsV1Api(api_client).create_namespaced_deployment(
        namespace, kubelet_mod.worker_deployment(DEPLOYMENT))
    await pool.execute(test_tasks.SCHEMA)
    operator = ops.OperatorProcess(control_plane.kubeconfig, database_url, namespace, tmp_path,
                                   "operator", {
        "CITERUN_AUTOSCALER__ENABLED": "true",
        "CITERUN_OPERATOR__WORKER_DEPLOYMENT": DEPLOYMENT,
        "CITERUN_AUTOSCALER__MAX_WORKERS": "4",
        "CITERUN_AUTOSCALER__TASKS_PER_WORKER": "8",
        "CITERUN_AUTOSCALER__STABILIZATION_S": "2",
        "CITERUN_AUTOSCALER__COOLDOWN_S": "2",
        "CITERUN_AUTOSCALER__INTERVAL_S": "0.5",
        "POD_NAME": "operator"})
    rng = random.Random(6)
    env = {"CITERUN_WORKER__CONCURRENCY": "2"}
    kubelet = kubelet_mod.Kubelet(api_client, namespace, DEPLOYMENT, database_url, tmp_path,
                                  env=env)

    def logs() -> str:
        pods = sorted(tmp_path.glob(f"{DEPLOYMENT}-*.log"))[-6:]
        return "\n".join([f"--- operator\n{operator.log()[-3000:]}",
                          *(f"--- {p.name}\n{p.read_text(errors='replace')[-1500:]}"
                            for p in pods),
                          f"--- kubelet\n{kubelet.actions[-30:]}\n{kubelet.errors[-5:]}"])

    async def outstanding() -> int:
        return sum(await queue.outstanding(pool))

    async def rollout() -> int:
        before, left = kubelet.revision, await outstanding()
        await asyncio.to_thread(kubelet_mod.restart_deployment, api_client, namespace,
                                DEPLOYMENT)
        await _until(lambda: kubelet.revision != before and kubelet.rolled_out(), 60,
                     "the rollout to finish", logs)
        return left

    try:
        async with kubelet:
            await queue.enqueue(pool, [
                queue.NewTask("work", {"seconds": LONG_S if i % LONG_EVERY == 0 else SHORT_S})
                for i in range(TASKS)])
            await _until(lambda: kubelet.desired == 4 and kubelet.rolled_out(), 60,
                         "4 ready workers", logs)
            left_at_first = await rollout()
            killed = kubelet.kill(2, rng)
            await _until(lambda: kubelet.count("restart") == 2 and kubelet.rolled_out(), 30,
                         "the killed workers to restart", logs)
            left_at_second = await rollout()
            rolled_at = time.monotonic()
            killed += kubelet.kill(1, rng)
            await _until(lambda: pool.fetchval(
                "SELECT count(*) = $1 FROM tasks WHERE state = 'succeeded'", TASKS), 120,
                "every task to succeed", logs)
            done_at = time.monotonic()
            await _until(lambda: kubelet.desired == 0 and not kubelet.pods, 30,
                         "the scale to zero and the last workers to stop", logs)
    finally:
        operator.stop()

    # The disturbances happened mid-run, as asked.
    assert left_at_first > 0 and left_at_second > 0, (left_at_first, left_at_second)
    assert len(killed) == 3 and kubelet.count("restart") == 3
    starts = [a for a in kubelet.actions if a.what == "start"]
    revisions = {a.pod.split("-")[-2] for a in starts}
    assert len(revisions) == 3, starts           # every worker ran under 3 templates
    assert sum(1 for a in kubelet.actions if a.detail == "rollout") == 8
    assert kubelet.count("grace-kill") == 0
    assert set(kubelet.exit_codes.values()) == {0}, kubelet.exit_codes  # clean drains
    assert not kubelet.errors, kubelet.errors

    # Every task done exactly once.
    states = dict(await pool.fetch("SELECT state, count(*) FROM tasks GROUP BY state"))
    assert states == {"succeeded": TASKS}, states
    assert await pool.fetchval("SELECT count(*) FROM test_done") == TASKS
    assert await pool.fetchval("SELECT count(DISTINCT task_id) FROM test_done") == TASKS
    done_by_attempt = await pool.fetchval(
        "SELECT count(*) FROM test_done d JOIN tasks t ON t.id = d.task_id "
        "AND t.attempt = d.attempt AND t.worker_id = d.worker_id")
    assert done_by_attempt == TASKS  # the recorded success is the fenced, final attempt
    # Drains handed tasks back uncharged; kills cost an attempt but nothing ran out.
    released = await pool.fetchval("SELECT coalesce(sum(releases), 0) FROM tasks")
    assert released > 0
    reruns = await pool.fetchval("SELECT count(*) - count(DISTINCT task_id) FROM test_starts")
    print(f"{TASKS} tasks, {len(starts)} pods started, {released} releases on drain, "
          f"{reruns} re-runs, {time.monotonic() - started:.0f}s in all; second rollout done "
          f"{done_at - rolled_at:.0f}s before the last task, with {left_at_second} "
          "tasks left at its start")
