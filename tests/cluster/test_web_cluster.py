"""``citerun serve`` with the kubernetes backend against the real kube-apiserver (issue 26).

The service is a local process authenticated as the chart's web ServiceAccount (a
TokenRequest token: exactly the chart's RBAC, create/get/delete on CitationRuns in the
release namespace); the operator and the workers are local processes too. Users come
through the trusted proxy's header from 127.0.0.1, with a browser session's CSRF token.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pathlib
import signal
import subprocess
import typing
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import pytest
from kubernetes import client as k8s

from tests.support import serve_process
from tests.support.web_user import User

import chart_support
import controlplane
import operator_support as ops
from tests.conftest import citerun_command

pytestmark = pytest.mark.cluster

PIPELINE = "citerun.worker.tasks:registry"
RELEASE = "webk"
THESIS = ops.EXAMPLES / "thesis.pdf"
SOURCES = sorted((ops.EXAMPLES / "sources").glob("*.pdf"))


class Serve:
    """``citerun serve --database-url URL`` as the web ServiceAccount; restartable."""

    def __init__(self, kubeconfig: pathlib.Path, url: str, namespace: str,
                 log_dir: pathlib.Path) -> None:
        self.port = ops.free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("CITERUN_")},
                    "KUBECONFIG": str(kubeconfig), "CITERUN_WEB__BACKEND": "kubernetes",
                    "CITERUN_WEB__NAMESPACE": namespace}
        self.url = url
        self.log_dir = log_dir
        self.starts = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> pathlib.Path:
        return self.log_dir / f"serve-{self.starts}.log"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start(self) -> None:
        self.starts += 1
        self.proc = serve_process.start(citerun_command(), self.port, self.url, self.env,
                                        self.log_path)

    def stop(self) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()




def _web_kubeconfig(plane: controlplane.ControlPlane, namespace: str, url: str,
                    path: pathlib.Path) -> pathlib.Path:
    """Install the chart with the web service on; a kubeconfig of its ServiceAccount."""
    chart_support.ensure_crd(plane)
    chart_support.install_chart(plane, namespace, RELEASE,
                                values={"database.url": url, "web.enabled": True,
                                        "autoscaling.enabled": False})
    account = chart_support._component_object(plane, "serviceaccounts", namespace, RELEASE,
                                              "web")
    token = plane.service_account_token(namespace, account, create=False)
    plane.write_kubeconfig(path, token=token)
    return path


@pytest.fixture
def serve(control_plane: controlplane.ControlPlane, namespace: str, database_url: str,
          tmp_path: pathlib.Path) -> Iterator[Serve]:
    kubeconfig = _web_kubeconfig(control_plane, namespace, database_url,
                                 tmp_path / "web.kubeconfig")
    service = Serve(kubeconfig, database_url, namespace, tmp_path)
    service.start()
    yield service
    service.stop()


@pytest.fixture
def operator(control_plane: controlplane.ControlPlane, namespace: str, database_url: str,
             tmp_path: pathlib.Path, api_client: k8s.ApiClient) -> Iterator[Any]:
    started: list[ops.OperatorProcess] = []

    def start() -> ops.OperatorProcess:
        op = ops.OperatorProcess(control_plane.kubeconfig, database_url, namespace, tmp_path,
                                 f"operator-{len(started)}")
        started.append(op)
        return op

    yield start
    for op in started:
        op.stop()
    ops.drop_finalizers(api_client, namespace)


@contextlib.asynccontextmanager
async def _users(base: str, *names: str) -> AsyncIterator[list[User]]:
    users = [await User(base, name).open() for name in names]
    try:
        yield users
    finally:
        for user in users:
            await user.close()


def _citation_runs(api: k8s.ApiClient, namespace: str) -> list[dict[str, Any]]:
    found = k8s.CustomObjectsApi(api).list_namespaced_custom_object(
        ops.GROUP, ops.VERSION, namespace, ops.PLURAL)
    return list(typing.cast(dict[str, Any], found)["items"])


def _logs(*procs: Any) -> Any:
    return lambda: "\n".join(f"--- {getattr(p, 'name', 'serve')}\n{p.log()[-3000:]}"
                             for p in procs)


async def test_an_upload_becomes_a_citationrun_that_finishes_and_survives_a_restart(
        serve: Serve, operator: Any, spawn_worker: Any, api_client: k8s.ApiClient,
        namespace: str, pool: asyncpg.Pool) -> None:
    async with asyncio.timeout(600):
        async with _users(serve.base, "alice", "bob") as [alice, bob]:
            status, created = await alice.upload()
            assert status == 202, created
            run_id = created["runId"]
            # The CitationRun exists in the configured namespace, named by digest; the run
            # id is its uid (generation 1).
            [obj] = _citation_runs(api_client, namespace)
            assert obj["metadata"]["uid"] == run_id
            assert obj["metadata"]["annotations"]["citerun.dev/web-owner"] == "alice"
            spec = obj["spec"]
            assert spec["thesis"]["name"] == "thesis.pdf" and "digest" in spec["thesis"]
            assert sorted(s["name"] for s in spec["sources"]) == [p.name for p in SOURCES]
            # The bytes are staged, owned by the namespace (the tenant), by upload.
            owners = await pool.fetch("SELECT tenant, via FROM document_owners")
            assert len(owners) == 1 + len(SOURCES)
            assert {(r["tenant"], r["via"]) for r in owners} == {(namespace, "upload")}
            # No operator yet: the status says what it waits for.
            status, shown = await alice.get(f"/api/runs/{run_id}")
            assert status == 200 and shown["state"] == "running", shown
            assert shown["waiting"].startswith("waiting for the operator"), shown
            status, listed = await alice.get("/api/runs")
            assert [r["runId"] for r in listed["runs"]] == [run_id]
            assert listed["runs"][0]["waiting"] is True
            # Another user: not found on every route, and the run is not in their list.
            for path in (f"/api/runs/{run_id}", f"/api/runs/{run_id}/report.json",
                         f"/api/runs/{run_id}/report.html", f"/runs/{run_id}"):
                status, body = await bob.get(path)
                assert status == 404, (path, body)
            status, body = await bob.post(f"/api/runs/{run_id}/cancel")
            assert status == 404, body
            assert (await bob.get("/api/runs"))[1] == {"runs": []}
            assert len(_citation_runs(api_client, namespace)) == 1

            op = operator()
            await ops.wait_for(lambda: pool.fetchval(
                "SELECT count(*) FROM runs WHERE id = $1", uuid.UUID(run_id)), 60,
                "the operator to admit the run", _logs(op, serve))
            status, shown = await alice.get(f"/api/runs/{run_id}")
            assert shown["waiting"] is None and shown["state"] == "running", shown
            assert len(shown["documents"]) == 1 + len(SOURCES)

        # A restart of the service mid-run (no worker has run a task yet) loses nothing.
        assert serve.stop() == 0, serve.log()
        serve.start()
        async with _users(serve.base, "alice") as [alice]:
            status, listed = await alice.get("/api/runs")
            assert [(r["runId"], r["state"]) for r in listed["runs"]] == [(run_id, "running")]
            workers = [spawn_worker(f"w{i}", tasks=PIPELINE) for i in range(2)]
            logs = _logs(op, serve, *workers)

            async def finished() -> dict[str, Any] | None:
                _, shown = await alice.get(f"/api/runs/{run_id}")
                return shown if shown["state"] != "running" else None
            shown = await ops.wait_for(finished, 300, "the run to finish", logs)
            assert shown["state"] == "succeeded", shown
            status, report = await alice.get(f"/api/runs/{run_id}/report.json")
            assert status == 200
            assert len(report["citations"]) == 11
            status, html = await alice.get(f"/api/runs/{run_id}/report.html")
            assert status == 200 and "<html" in html.lower()
            done = await ops.wait_succeeded(api_client, namespace, obj["metadata"]["name"],
                                            60, logs)
            assert done["status"]["runId"] == run_id
            for worker in workers:
                worker.stop()

            # Cancel: deletes the CitationRun; its finalizer (the operator) cancels the run.
            status, second = await alice.upload()
            assert status == 202, second
            second_id = uuid.UUID(second["runId"])
            await ops.wait_for(lambda: pool.fetchval(
                "SELECT count(*) FROM runs WHERE id = $1", second_id), 60,
                "the operator to admit the second run", logs)
            status, body = await alice.post(f"/api/runs/{second_id}/cancel")
            assert status == 200 and body["state"] == "cancelled", body
            await ops.wait_for(lambda: [o for o in _citation_runs(api_client, namespace)
                                        if o["metadata"]["uid"] == str(second_id)] == [],
                               60, "the CitationRun to go", logs)
            await ops.wait_for(lambda: pool.fetchval(
                "SELECT state = 'cancelled' FROM runs WHERE id = $1", second_id), 30,
                "the finalizer to cancel the run", logs)
            assert await pool.fetchval("SELECT count(*) FROM tasks WHERE run_id = $1 AND "
                                       "state IN ('queued', 'running')", second_id) == 0
            # The first run stays as it was.
            status, listed = await alice.get("/api/runs")
            assert {r["runId"]: r["state"] for r in listed["runs"]} == {
                run_id: "succeeded", str(second_id): "cancelled"}


async def test_a_submission_the_operator_never_saw_is_cancelled_by_deleting_it(
        serve: Serve, api_client: k8s.ApiClient, namespace: str, pool: asyncpg.Pool) -> None:
    """No operator: cancel deletes the CitationRun and closes the submission itself, so it
    counts against the user's caps no more and its fresh uploads are let go."""
    async with _users(serve.base, "carol") as [carol]:
        status, created = await carol.upload()
        assert status == 202, created
        run_id = created["runId"]
        assert len(_citation_runs(api_client, namespace)) == 1
        status, body = await carol.post(f"/api/runs/{run_id}/cancel")
        assert status == 200, body
        assert _citation_runs(api_client, namespace) == []
        status, shown = await carol.get(f"/api/runs/{run_id}")
        assert shown["state"] == "cancelled" and shown["waiting"] is None, shown
        assert await pool.fetchval("SELECT count(*) FROM document_owners") == 0
        assert await pool.fetchval(
            "SELECT count(*) FROM documents WHERE raw IS NOT NULL") == 0


async def test_a_create_the_api_server_refuses_leaves_nothing_behind(
        control_plane: controlplane.ControlPlane, namespace: str, database_url: str,
        tmp_path: pathlib.Path, api_client: k8s.ApiClient, pool: asyncpg.Pool) -> None:
    """The service's Role covers the release namespace only: a service configured for
    another namespace is refused by the API server (403). The upload answers 503 and its
    staged bytes, ownership and submission are taken back."""
    kubeconfig = _web_kubeconfig(control_plane, namespace, database_url,
                                 tmp_path / "web.kubeconfig")
    other = f"elsewhere-{uuid.uuid4().hex[:6]}"
    control_plane.create_namespace(other)
    service = Serve(kubeconfig, database_url, other, tmp_path)
    service.start()
    try:
        async with _users(service.base, "dave") as [dave]:
            status, body = await dave.upload()
            assert status == 503, body
            assert f"may not create runs in namespace {other!r}" in body["error"]
            assert (await dave.get("/api/runs"))[1] == {"runs": []}
        assert await pool.fetchval("SELECT count(*) FROM web_runs") == 0
        assert await pool.fetchval("SELECT count(*) FROM document_owners") == 0
        assert await pool.fetchval(
            "SELECT count(*) FROM documents WHERE raw IS NOT NULL") == 0
        assert _citation_runs(api_client, other) == []
    finally:
        service.stop()
        control_plane.delete_namespace(other)
