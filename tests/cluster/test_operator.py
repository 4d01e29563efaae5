"""The operator against a real kube-apiserver and a real Postgres, end to end."""

from __future__ import annotations

import asyncio
import json
import pathlib
import signal
import uuid
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest
import yaml
from kubernetes import client as k8s

import chart_support
import operator_support as ops

pytestmark = pytest.mark.cluster

PIPELINE = "citerun.worker.tasks:registry"


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
    digests = await ops.stage_demo(database_url, tenant=namespace)
    op = operators()
    obj = ops.create(api_client, namespace, ops.demo_body("demo", digests))
    uid = obj["metadata"]["uid"]
    await ops.wait_for(lambda: pool.fetchval("SELECT count(*) FROM tasks WHERE run_id = $1",
                                             uuid.UUID(uid)),
                       30, "the run's first tasks", _logs(op))
    workers = [spawn_worker(f"w{i}", tasks=PIPELINE) for i in range(2)]
    done = await ops.wait_succeeded(api_client, namespace, "demo", 120, _logs(op, *workers))
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
    digests = await ops.stage_demo(database_url, tenant=namespace)
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
    body["spec"]["thesis"] = {"name": "t.pdf"}  # no document source
    try:
        await ops.wait_schema(api_client, namespace, body, accepts=True)
        ops.create(api_client, namespace, body)
    finally:
        control_plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ops.CRD))
        await ops.wait_schema(api_client, namespace, bad, accepts=False)
    failed = await ops.wait_for(
        lambda: (c := ops.condition(ops.get(api_client, namespace, "sneaky"), "Failed"))
        and c["status"] == "True" and c, 30, "a Failed condition", _logs(op))
    assert failed["reason"] == "InvalidSpec"
    assert "spec.thesis" in failed["message"] and "exactly one of" in failed["message"]
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
    digests = await ops.stage_demo(database_url, tenant=namespace)
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
    digests = await ops.stage_demo(database_url, tenant=namespace)
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
    await ops.wait_succeeded(api_client, namespace, "survivor", 120, _logs(second, *workers))
    after = await ops.counts(pool)
    assert after["runs"] == 1 and after["duplicate_keys"] == 0 and after["citations"] == 11


async def test_caps_hold_runs_back_and_release_them(
        operators: Any, spawn_worker: Any, api_client: k8s.ApiClient, namespace: str,
        database_url: str, pool: asyncpg.Pool) -> None:
    digests = await ops.stage_demo(database_url, tenant=namespace)
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
        await ops.wait_succeeded(api_client, namespace, name, 120, _logs(op, *workers))
    assert await pool.fetchval("SELECT count(*) FROM runs WHERE state = 'succeeded'") == 2


async def test_two_operators_at_once_produce_one_set_of_rows(
        operators: Any, spawn_worker: Any, api_client: k8s.ApiClient, namespace: str,
        database_url: str, pool: asyncpg.Pool) -> None:
    digests = await ops.stage_demo(database_url, tenant=namespace)
    a, b = operators("a"), operators("b")
    for i in range(3):
        ops.create(api_client, namespace, ops.demo_body(f"twin-{i}", digests))
    workers = [spawn_worker(f"w{i}", tasks=PIPELINE) for i in range(2)]
    for i in range(3):
        await ops.wait_succeeded(api_client, namespace, f"twin-{i}", 180,
                                 _logs(a, b, *workers))
    result = await ops.counts(pool)
    assert result["runs"] == 3 and result["duplicate_keys"] == 0
    assert result["citations"] == 33
    assert await pool.fetchval("SELECT count(*) FROM reports") == 3
    assert a.proc.poll() is None and b.proc.poll() is None


async def test_documents_from_a_configmap_and_a_url_are_staged_and_run(
        operators: Any, spawn_worker: Any, api_client: k8s.ApiClient, namespace: str,
        database_url: str, pool: asyncpg.Pool, control_plane: Any) -> None:
    import base64
    import http.server
    import threading

    sources = sorted((ops.EXAMPLES / "sources").glob("*.pdf"))
    served = sources[0]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = served.read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        k8s.CoreV1Api(api_client).create_namespaced_config_map(namespace, k8s.V1ConfigMap(
            metadata=k8s.V1ObjectMeta(name="pdfs"),
            binary_data={p.name: base64.b64encode(p.read_bytes()).decode()
                         for p in [ops.EXAMPLES / "thesis.pdf", *sources[1:]]}))
        body = {"apiVersion": f"{ops.GROUP}/{ops.VERSION}", "kind": "CitationRun",
                "metadata": {"name": "mixed"},
                "spec": {"thesis": {"name": "thesis.pdf", "configMapKeyRef": {
                             "name": "pdfs", "key": "thesis.pdf"}},
                         "sources": [{"name": served.name, "url": (
                             f"http://127.0.0.1:{httpd.server_address[1]}/{served.name}")}] + [
                             {"name": p.name, "configMapKeyRef": {"name": "pdfs", "key": p.name}}
                             for p in sources[1:]]}}
        # ConfigMaps are read only under the chart's access policy; the URL is on loopback,
        # which the workers fetch only when it is allow-listed.
        op = operators(env={"CITERUN_OPERATOR__ACCESS_POLICY_BINDING":
                            chart_support.ensure_access_policy(control_plane)})
        ops.wait_access_policy(op)
        ops.create(api_client, namespace, body)
        workers = [spawn_worker(f"w{i}", tasks=PIPELINE, env={
            "CITERUN_DOCUMENTS__FETCH_ALLOW_NETWORKS": '["127.0.0.1/32"]'}) for i in range(2)]
        done = await ops.wait_succeeded(api_client, namespace, "mixed", 120,
                                        _logs(op, *workers))
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert done["status"]["counts"]["citations"] == 11
    staged = {r["filename"]: r for r in await pool.fetch(
        "SELECT filename, state, raw IS NULL AS dropped FROM documents")}
    assert set(staged) == {"thesis.pdf", *(p.name for p in sources)}
    # Brought by the run itself (ConfigMap, URL), they were the run's only: once it
    # finished, their bytes, pages and chunks are gone (issue 12, tenancy).
    assert all(r["state"] == "staged" and r["dropped"] for r in staged.values())
    assert await pool.fetchval("SELECT count(*) FROM document_pages") == 0
    assert await pool.fetchval("SELECT count(*) FROM chunks") == 0
    assert await pool.fetchval("SELECT count(*) FROM document_owners") == 0
    assert await pool.fetchval(
        "SELECT state FROM tasks WHERE kind = 'fetch_document'") == "succeeded"


async def test_a_word_thesis_from_a_configmap_runs_and_a_zip_source_is_refused(
        operators: Any, spawn_worker: Any, api_client: k8s.ApiClient, namespace: str,
        pool: asyncpg.Pool, control_plane: Any) -> None:
    """Issue 24, item 8: a CitationRun's thesis may be a writer's file (here a .docx with
    Zotero fields); a source must be a PDF, so a zip named as one is refused at admission."""
    import base64

    from tests.support import writer_theses

    sources = sorted((ops.EXAMPLES / "sources").glob("*.pdf"))
    files = {"thesis.docx": writer_theses.docx_thesis(), **{p.name: p.read_bytes() for p in sources}}
    k8s.CoreV1Api(api_client).create_namespaced_config_map(namespace, k8s.V1ConfigMap(
        metadata=k8s.V1ObjectMeta(name="writer"),
        binary_data={name: base64.b64encode(data).decode() for name, data in files.items()}))

    def body(name: str, thesis: str, source_keys: list[str]) -> dict[str, Any]:
        return {"apiVersion": f"{ops.GROUP}/{ops.VERSION}", "kind": "CitationRun",
                "metadata": {"name": name},
                "spec": {"thesis": {"name": thesis, "configMapKeyRef": {"name": "writer", "key": thesis}},
                         "sources": [{"name": k, "configMapKeyRef": {"name": "writer", "key": k}}
                                     for k in source_keys]}}

    op = operators(env={"CITERUN_OPERATOR__ACCESS_POLICY_BINDING":
                        chart_support.ensure_access_policy(control_plane)})
    ops.wait_access_policy(op)
    ops.create(api_client, namespace, body("word", "thesis.docx", [p.name for p in sources]))
    ops.create(api_client, namespace, body("zip-source", sources[0].name, ["thesis.docx"]))
    workers = [spawn_worker(f"w{i}", tasks=PIPELINE) for i in range(2)]
    done = await ops.wait_succeeded(api_client, namespace, "word", 120, _logs(op, *workers))
    assert done["status"]["counts"]["citations"] == 4
    verdicts = {r["verdict"]: r["n"] for r in await pool.fetch(
        "SELECT v.verdict, count(*) AS n FROM verdicts v JOIN citations c ON c.id = v.citation_id"
        " GROUP BY v.verdict")}
    assert verdicts.get("unresolved_citation") == 1 and sum(verdicts.values()) == 4
    held = await ops.wait_for(
        lambda: (c := ops.condition(ops.get(api_client, namespace, "zip-source"), "Admitted"))
        and c["reason"] == "DocumentUnreadable" and c, 30, "the zip source refused", _logs(op))
    assert held["status"] == "False"
    assert held["message"] == "document 'thesis.docx': the configmap key is not a PDF"
    assert await pool.fetchval("SELECT count(*) FROM runs") == 1  # never admitted


async def test_a_run_over_the_operators_read_budget_waits_with_the_sizes_named(
        operators: Any, api_client: k8s.ApiClient, namespace: str, pool: asyncpg.Pool,
        control_plane: Any) -> None:
    """Issue 27: what one run's admission reads from Secrets and ConfigMaps is held in the
    operator's memory until the run is stored, so it is capped per run."""
    import base64

    thesis = (ops.EXAMPLES / "thesis.pdf").read_bytes()
    source = (ops.EXAMPLES / "sources" / "alvarez2019.pdf").read_bytes()
    k8s.CoreV1Api(api_client).create_namespaced_config_map(namespace, k8s.V1ConfigMap(
        metadata=k8s.V1ObjectMeta(name="pdfs"),
        binary_data={"t": base64.b64encode(thesis).decode(),
                     "s": base64.b64encode(source).decode()}))
    budget = len(thesis) + len(source) // 2
    op = operators(env={"CITERUN_OPERATOR__ACCESS_POLICY_BINDING":
                        chart_support.ensure_access_policy(control_plane),
                        "CITERUN_OPERATOR__MAX_RUN_READ_BYTES": str(budget)})
    ops.wait_access_policy(op)
    ref = {"name": "pdfs"}
    ops.create(api_client, namespace, {
        "apiVersion": f"{ops.GROUP}/{ops.VERSION}", "kind": "CitationRun",
        "metadata": {"name": "heavy"},
        "spec": {"thesis": {"name": "t.pdf", "configMapKeyRef": {**ref, "key": "t"}},
                 "sources": [{"name": f"s{i}.pdf", "configMapKeyRef": {**ref, "key": "s"}}
                             for i in range(3)] + [  # one key named thrice is read once
                     {"name": "again.pdf", "configMapKeyRef": {**ref, "key": "t"}}]}})
    ops.create(api_client, namespace, {
        "apiVersion": f"{ops.GROUP}/{ops.VERSION}", "kind": "CitationRun",
        "metadata": {"name": "light"},
        "spec": {"thesis": {"name": "t.pdf", "configMapKeyRef": {**ref, "key": "t"}},
                 "sources": [{"name": f"t{i}.pdf", "configMapKeyRef": {**ref, "key": "t"}}
                             for i in range(3)]}})
    held = await ops.wait_for(
        lambda: (c := ops.condition(ops.get(api_client, namespace, "heavy"), "Admitted"))
        and c["reason"] == "DocumentUnreadable" and c, 30, "the heavy run held", _logs(op))
    assert f"exceed {budget:,} bytes (at 's0.pdf')" in held["message"]
    await ops.wait_for(
        lambda: (c := ops.condition(ops.get(api_client, namespace, "light"), "Admitted"))
        and c["status"] == "True", 30, "the light run admitted", _logs(op))
    assert await pool.fetchval("SELECT count(*) FROM runs") == 1


async def test_a_spec_change_mid_run_restarts_under_the_new_generation(
        operators: Any, spawn_worker: Any, api_client: k8s.ApiClient, namespace: str,
        database_url: str, pool: asyncpg.Pool) -> None:
    digests = await ops.stage_demo(database_url, tenant=namespace)
    # Priority is the namespace's policy, not the spec's.
    op = operators(env={"CITERUN_OPERATOR__NAMESPACE_PRIORITIES": json.dumps({namespace: 10})})
    obj = ops.create(api_client, namespace, ops.demo_body("changing", digests))
    uid = obj["metadata"]["uid"]
    await ops.wait_for(lambda: (ops.get(api_client, namespace, "changing") or {}).get(
        "status", {}).get("runId") == uid, 30, "the first run", _logs(op))
    k8s.CustomObjectsApi(api_client).patch_namespaced_custom_object(
        ops.GROUP, ops.VERSION, namespace, ops.PLURAL, "changing",
        {"spec": {"retrieval": {"topK": 3}}})
    restarted = await ops.wait_for(
        lambda: (s := (ops.get(api_client, namespace, "changing") or {}).get("status", {}))
        .get("runId") not in (None, uid) and s, 30, "a new run id", _logs(op))
    assert restarted["observedGeneration"] == 2
    runs_rows = {str(r["id"]): r for r in await pool.fetch(
        "SELECT id, state, generation, spec, priority FROM runs")}
    assert runs_rows[uid]["state"] == "cancelled"
    new = runs_rows[restarted["runId"]]
    assert new["generation"] == 2 and new["spec"]["retrieval"] == {"topK": 3}
    assert new["priority"] == -10  # higher policy priority runs first: queue order is ascending
    workers = [spawn_worker(f"w{i}", tasks=PIPELINE) for i in range(2)]
    await ops.wait_succeeded(api_client, namespace, "changing", 120, _logs(op, *workers))
    assert await pool.fetchval("SELECT count(*) FROM reports") == 1
    assert await pool.fetchval("SELECT run_id::text FROM reports") == restarted["runId"]


async def test_the_finalizer_lets_go_when_the_database_is_down(
        control_plane: Any, namespace: str, api_client: k8s.ApiClient, crd: None,
        tmp_path: pathlib.Path) -> None:
    import shutil
    import tempfile

    from citerun.local import embedded
    data_dir = pathlib.Path(tempfile.mkdtemp(prefix="citerun-down-pg-"))
    server = embedded.EmbeddedPostgres(data_dir)
    url = server.start()
    op = None
    try:
        digests = await ops.stage_demo(url, tenant=namespace)
        op = ops.OperatorProcess(control_plane.kubeconfig, url, namespace, tmp_path, "op", env={
            "CITERUN_OPERATOR__FINALIZER_RETRIES": "3"})
        ops.create(api_client, namespace, ops.demo_body("orphan", digests))
        await ops.wait_for(lambda: ops.condition(ops.get(api_client, namespace, "orphan"),
                                                 "Admitted"), 30, "admitted", _logs(op))
        server.stop("immediate")
        k8s.CustomObjectsApi(api_client).delete_namespaced_custom_object(
            ops.GROUP, ops.VERSION, namespace, ops.PLURAL, "orphan")
        await ops.wait_for(lambda: ops.get(api_client, namespace, "orphan") is None, 60,
                           "the deletion to go through without the database", _logs(op))
        events = k8s.CoreV1Api(api_client).list_namespaced_event(namespace).items
        failed = [e for e in events if e.reason == "CleanupFailed"]
        assert failed and "orphan sweep" in failed[0].message
        assert failed[0].type == "Warning"
    finally:
        if op is not None:
            op.stop()
        server.stop("immediate")
        shutil.rmtree(data_dir, ignore_errors=True)
