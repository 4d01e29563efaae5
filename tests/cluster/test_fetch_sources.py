"""A CitationRun with ``spec.fetchSources`` (issue 51) against a real kube-apiserver, the
operator and workers whose settings point the open-access services at the local test
server (tests/support/oa_server.py): the API server takes the field (the CRD), the
operator stores it with the run, the workers look the demo's one unresolved work up (by
its title: its entry has no DOI), find an open-access PDF of it and judge its citation on
that PDF, as ``citerun verify --fetch-sources`` does; a second CitationRun of the same
thesis sends no request. A thesis alone asks for every work, and one no service knows is
listed as not found with what was tried."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest
from kubernetes import client as k8s

import operator_support as ops
from tests.conftest import citerun_command
from tests.support.oa_server import OaServer, Work

pytestmark = pytest.mark.cluster

PIPELINE = "citerun.worker.tasks:registry"


@pytest.fixture
def operator(control_plane: Any, namespace: str, database_url: str, tmp_path: pathlib.Path,
             api_client: k8s.ApiClient, crd: None) -> Iterator[ops.OperatorProcess]:
    op = ops.OperatorProcess(control_plane.kubeconfig, database_url, namespace, tmp_path,
                             "operator-0", None)
    yield op
    op.stop()
    ops.drop_finalizers(api_client, namespace)


def _env(srv: OaServer) -> dict[str, str]:
    env = {}
    for name, value in srv.settings().model_dump(mode="json").items():
        if value is not None:
            env[f"CITERUN_OPENACCESS__{name.upper()}"] = (
                json.dumps(value) if isinstance(value, (list, bool)) else str(value))
    return env


#: The demo's one work without a PDF (examples/thesis.pdf's reference list), as the
#: services know it: by its title, with an open-access PDF that states what it is cited for.
KELLER = Work(kind="pdf", title="Urban form and wind ventilation in compact cities",
              authors=("Keller",), year=2017,
              text="Compact street grids block the wind that would otherwise ventilate heat "
                   "out of the city centre. Wind ventilation falls as the street grid of a "
                   "compact city gets denser.")


async def test_a_citationrun_that_asks_fetches_its_unresolved_works_once(
        operator: ops.OperatorProcess, spawn_worker: Any, api_client: k8s.ApiClient,
        namespace: str, database_url: str, pool: asyncpg.Pool) -> None:
    digests = await ops.stage_demo(database_url, tenant=namespace)
    with OaServer(works={f"title:{KELLER.title}": KELLER}) as srv:
        env = _env(srv)
        workers = [spawn_worker(f"w{i}", tasks=PIPELINE, env=env) for i in range(2)]
        ops.create(api_client, namespace, ops.demo_body("fetching", digests, fetchSources=True))
        done = await ops.wait_succeeded(api_client, namespace, "fetching", 180,
                                        lambda: "\n".join(p.log()[-3000:] for p in
                                                          (operator, *workers)))
        asked = sum(srv.requests.values())
        ops.create(api_client, namespace, ops.demo_body("again", digests, fetchSources=True))
        await ops.wait_succeeded(api_client, namespace, "again", 180,
                                 lambda: "\n".join(p.log()[-3000:] for p in (operator, *workers)))
        again = sum(srv.requests.values())
    assert done["status"]["counts"]["unresolvedCitation"] == 0
    spec = await pool.fetchval("SELECT spec FROM runs WHERE resource_uid = $1",
                               done["metadata"]["uid"])
    assert spec["fetchSources"] is True
    report = await pool.fetchval(
        "SELECT r.json FROM reports AS r JOIN runs AS u ON u.id = r.run_id "
        "WHERE u.resource_uid = $1", done["metadata"]["uid"])
    [work] = report["fetched"]
    assert work["status"] == "pdf", work
    [keller] = [c for c in report["citations"] if "Keller" in (c.get("marker") or "")]
    assert keller["match"]["method"] == "fetched", keller
    fetched = keller["source"]["fetched"]
    assert fetched["kind"] == "pdf" and fetched["url"].startswith("https://"), fetched
    assert keller["verdict"] not in {"unresolved_citation", "source_unavailable", "not_checked"}
    assert asked > 0 and again == asked  # the second run took the stored answer


async def test_a_thesis_alone_runs_only_when_it_asks_for_its_sources(
        operator: ops.OperatorProcess, spawn_worker: Any, api_client: k8s.ApiClient,
        namespace: str, database_url: str, pool: asyncpg.Pool, control_plane: Any) -> None:
    """A CitationRun of a thesis with no source: the API server refuses it unless it sets
    fetchSources (the CRD's rule); with it, the run looks up every cited work."""
    digests = await ops.stage_demo(database_url, tenant=namespace)
    alone = {"thesis.pdf": digests["thesis.pdf"]}
    with pytest.raises(k8s.ApiException) as refused:
        ops.create(api_client, namespace, ops.demo_body("alone", alone))
    assert refused.value.status == 422 and "fetchSources" in str(refused.value.body)
    with OaServer(works={}) as srv:
        workers = [spawn_worker("w0", tasks=PIPELINE, env=_env(srv))]
        # As the README says it: citerun submit with no --sources, --fetch-sources.
        submitted = subprocess.run(
            [*citerun_command(), "submit", str(ops.EXAMPLES / "thesis.pdf"), "--fetch-sources",
             "--name", "alone", "-n", namespace], cwd=ops.REPO, capture_output=True, text=True,
            env={**os.environ, "KUBECONFIG": str(control_plane.kubeconfig),
                 "CITERUN_DATABASE_URL": database_url}, timeout=120)
        assert submitted.returncode == 0, submitted.stderr
        done = await ops.wait_succeeded(api_client, namespace, "alone", 180,
                                        lambda: "\n".join(p.log()[-3000:] for p in
                                                          (operator, *workers)))
    report = await pool.fetchval(
        "SELECT r.json FROM reports AS r JOIN runs AS u ON u.id = r.run_id "
        "WHERE u.resource_uid = $1", done["metadata"]["uid"])
    assert report["sources"] == []
    assert len(report["fetched"]) >= 5 and {w["status"] for w in report["fetched"]} == {"not_found"}
    [keller] = [w for w in report["fetched"] if "Urban form and wind" in " ".join(w["tried"])]
    assert keller["tried"] == ["title \u201cUrban form and wind ventilation in compact cities\u201d "
                               "(Keller, 2017)"], keller
    assert done["status"]["counts"]["unresolvedCitation"] == done["status"]["counts"]["citations"]
