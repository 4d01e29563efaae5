"""The operator against a real kube-apiserver and a real Postgres, end to end."""

from __future__ import annotations

import asyncio
import pathlib
import signal
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest
import yaml
from kubernetes import client as k8s

import operator_support as ops

pytestmark = pytest.mark.cluster

PIPELINE = "citerun.worker.tasks:registry"


@pytest.fixture
def crd(control_plane: Any) -> None:
    control_plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ops.CRD))
    control_plane.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                          "crd/citationruns.citerun.dev")


@pytest.fixture
def operators(control_plane: Any, namespace: str, database_url: str, tmp_path: pathlib.Path,
              api_client: k8s.ApiClient, crd: None) -> Iterator[Any]:
    started: list[ops.OperatorProcess] = []

    def start(name: str = "operator", env: dict[str, str] | None = None) -> ops.OperatorProcess:
        op = ops.OperatorProcess(control_plane.kubeconfig, database_url, namespace, tmp_path,
                                 f"{name}-{len(started)}", env)
        started.append(op)
        return op

    yield start
    for op in started:
        op.stop()
    ops.drop_finalizers(api_client, namespace)


def _logs(*procs: Any) -> Any:
    return lambda: "\n".join(f"--- {p.name}\n{p.log()[-3000:]}" for p in procs)


async def test_a_citationrun_runs_to_succeeded_with_the_right_counts(
        operators: Any, spawn_worker: Any, api_client: k8s.ApiClient, namespace: str,
        database_url: str, pool: asyncpg.Pool) -> None:
    digests = await ops.stage_demo(database_url)
    op = operators()
    obj = ops.create(api_client, namespace, ops.demo_body("demo", digests))
    uid = obj["metadata"]["uid"]
    await ops.wait_for(lambda: pool.fetchval("SELECT count(*) FROM tasks WHERE run_id = $1",
                                             __import__("uuid").UUID(uid)),
                       30, "the run's first tasks", _logs(op))
    workers = [spawn_worker(f"w{i}", tasks=PIPELINE) for i in range(2)]
    done = await ops.wait_for(
        lambda: (o := ops.get(api_client, namespace, "demo")) and
        (o.get("status") or {}).get("phase") == "Succeeded" and o,
        120, "phase Succeeded", _logs(op, *workers))
    status = done["status"]
    verdicts = dict(await pool.fetch("SELECT verdict, count(*) FROM verdicts GROUP BY verdict"))
    assert status["runId"] == uid
    assert status["counts"]["citations"] == 11 == status["counts"]["judged"]
    assert status["counts"]["supported"] == verdicts.get("supported", 0)
    assert status["counts"]["unresolvedCitation"] == verdicts.get("unresolved_citation", 0) == 1
    assert status["progress"] == "11/11"
    assert ops.condition(done, "Ready")["status"] == "True"
    assert ops.condition(done, "Admitted")["status"] == "True"
    assert status["report"]["command"] == f"citerun report demo -n {namespace}"
    assert await pool.fetchval("SELECT count(*) FROM reports") == 1

    def reasons() -> set[str]:
        events = k8s.CoreV1Api(api_client).list_namespaced_event(namespace).items
        return {e.reason for e in events if e.involved_object.name == "demo"}

    await ops.wait_for(lambda: {"Admitted", "Succeeded"} <= reasons(), 15,
                       "Admitted and Succeeded events", lambda: str(reasons()))


async def test_invalid_specs_are_rejected_by_the_server_and_by_the_handler(
        operators: Any, api_client: k8s.ApiClient, namespace: str, control_plane: Any,
        database_url: str, tmp_path: pathlib.Path) -> None:
    digests = await ops.stage_demo(database_url)
    bad = ops.demo_body("bad", digests)
    bad["spec"]["thesis"]["digest"] = "not-a-digest"
    with pytest.raises(k8s.ApiException) as err:
        ops.create(api_client, namespace, bad)
    assert err.value.status == 422 and "spec.thesis.digest" in err.value.body
    # The handler validates too: with a CRD that accepts anything in spec (an operator
    # must not trust that the installed CRD is the one it expects), it still refuses.
    crd = yaml.safe_load(ops.CRD.read_text())
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True}
    path = tmp_path / "loose-crd.yaml"
    path.write_text(yaml.safe_dump(crd))
    control_plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(path))
    op = operators()
    body = ops.demo_body("sneaky", digests)
    body["spec"]["sources"].append(dict(body["spec"]["sources"][0]))  # a duplicate name
    body["spec"]["priority"] = 500
    body["spec"]["thesis"] = {"name": "t.pdf"}  # no document source
    try:
        ops.create(api_client, namespace, body)
    finally:
        control_plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ops.CRD))
    failed = await ops.wait_for(
        lambda: (c := ops.condition(ops.get(api_client, namespace, "sneaky"), "Failed"))
        and c["status"] == "True" and c, 30, "a Failed condition", _logs(op))
    assert failed["reason"] == "InvalidSpec"
    assert "spec.thesis" in failed["message"] and "exactly one of" in failed["message"]
    assert "spec.priority" in failed["message"]
    obj = ops.get(api_client, namespace, "sneaky")
    assert obj["status"]["phase"] == "Failed"
    # No crash loop: the operator lives on and still admits a valid run.
    ops.create(api_client, namespace, ops.demo_body("fine", digests))
    await ops.wait_for(lambda: ops.condition(ops.get(api_client, namespace, "fine"), "Admitted"),
                       30, "the valid run to be admitted", _logs(op))
    assert op.proc.poll() is None


async def test_delete_mid_run_cancels_the_tasks(
        operators: Any, api_client: k8s.ApiClient, namespace: str, database_url: str,
        pool: asyncpg.Pool) -> None:
    digests = await ops.stage_demo(database_url)
    op = operators()
    ops.create(api_client, namespace, ops.demo_body("doomed", digests))
    await ops.wait_for(lambda: pool.fetchval("SELECT count(*) FROM tasks WHERE state = 'queued'"),
                       30, "queued tasks", _logs(op))
    k8s.CustomObjectsApi(api_client).delete_namespaced_custom_object(
        ops.GROUP, ops.VERSION, namespace, ops.PLURAL, "doomed")
    await ops.wait_for(lambda: ops.get(api_client, namespace, "doomed") is None, 30,
                       "the CitationRun to be gone (finalizer released)", _logs(op))
    states = dict(await pool.fetch("SELECT state, count(*) FROM tasks GROUP BY state"))
    assert set(states) == {"cancelled"}, states
    assert await pool.fetchval("SELECT state FROM runs") == "cancelled"
    assert await pool.fetchval("SELECT count(*) FROM documents WHERE raw IS NOT NULL") == 0


async def test_operator_restart_mid_run_resumes_without_duplicating_tasks(
        operators: Any, spawn_worker: Any, api_client: k8s.ApiClient, namespace: str,
        database_url: str, pool: asyncpg.Pool) -> None:
    digests = await ops.stage_demo(database_url)
    first = operators()
    ops.create(api_client, namespace, ops.demo_body("survivor", digests))
    await ops.wait_for(lambda: pool.fetchval("SELECT count(*) FROM tasks"), 30, "tasks",
                       _logs(first))
    before = await ops.counts(pool)
    first.stop(signal.SIGKILL)
    second = operators()
    await asyncio.sleep(3)  # the new operator resumes the existing resource
    assert await ops.counts(pool) == before
    workers = [spawn_worker(f"w{i}", tasks=PIPELINE) for i in range(2)]
    await ops.wait_for(
        lambda: ((ops.get(api_client, namespace, "survivor") or {}).get("status") or {})
        .get("phase") == "Succeeded", 120, "Succeeded after the restart", _logs(second, *workers))
    after = await ops.counts(pool)
    assert after["runs"] == 1 and after["duplicate_keys"] == 0 and after["citations"] == 11


async def test_caps_hold_runs_back_and_release_them(
        operators: Any, spawn_worker: Any, api_client: k8s.ApiClient, namespace: str,
        database_url: str, pool: asyncpg.Pool) -> None:
    digests = await ops.stage_demo(database_url)
    op = operators(env={"CITERUN_OPERATOR__MAX_ACTIVE_RUNS_PER_TENANT": "1"})
    ops.create(api_client, namespace, ops.demo_body("first", digests))
    await ops.wait_for(lambda: ops.condition(ops.get(api_client, namespace, "first"),
                                             "Admitted"), 30, "first admitted", _logs(op))
    ops.create(api_client, namespace, ops.demo_body("second", digests))
    held = await ops.wait_for(
        lambda: (c := ops.condition(ops.get(api_client, namespace, "second"), "Admitted"))
        and c["status"] == "False" and c, 30, "second held back", _logs(op))
    assert held["reason"] == "OverCapacity" and "cap is 1" in held["message"]
    assert ops.get(api_client, namespace, "second")["status"]["phase"] == "Pending"
    assert await pool.fetchval("SELECT count(*) FROM runs") == 1
    workers = [spawn_worker(f"w{i}", tasks=PIPELINE) for i in range(2)]
    for name in ("first", "second"):
        await ops.wait_for(
            lambda: ((ops.get(api_client, namespace, name) or {}).get("status") or {})
            .get("phase") == "Succeeded", 120, f"{name} Succeeded", _logs(op, *workers))
    assert await pool.fetchval("SELECT count(*) FROM runs WHERE state = 'succeeded'") == 2


async def test_two_operators_at_once_produce_one_set_of_rows(
        operators: Any, spawn_worker: Any, api_client: k8s.ApiClient, namespace: str,
        database_url: str, pool: asyncpg.Pool) -> None:
    digests = await ops.stage_demo(database_url)
    a, b = operators("a"), operators("b")
    for i in range(3):
        ops.create(api_client, namespace, ops.demo_body(f"twin-{i}", digests))
    workers = [spawn_worker(f"w{i}", tasks=PIPELINE) for i in range(2)]
    for i in range(3):
        await ops.wait_for(
            lambda: ((ops.get(api_client, namespace, f"twin-{i}") or {}).get("status") or {})
            .get("phase") == "Succeeded", 180, f"twin-{i} Succeeded", _logs(a, b, *workers))
    result = await ops.counts(pool)
    assert result["runs"] == 3 and result["duplicate_keys"] == 0
    assert result["citations"] == 33
    assert await pool.fetchval("SELECT count(*) FROM reports") == 3
    assert a.proc.poll() is None and b.proc.poll() is None
