"""The operator, authenticated only as the chart's ServiceAccount, reconciles a run.

Proves the chart's RBAC is sufficient for everything the operator does: watch and
patch CitationRuns cluster-wide, write their status, post events, hold the autoscaler
Lease and scale the worker Deployment.
"""

from __future__ import annotations

import pathlib
from typing import Any

import asyncpg
import pytest
from kubernetes import client as k8s

import chart_support
import operator_support as ops

pytestmark = pytest.mark.cluster


async def test_operator_with_the_charts_service_account_runs_a_citationrun(
        control_plane: Any, namespace: str, api_client: k8s.ApiClient, database_url: str,
        pool: asyncpg.Pool, spawn_worker: Any, tmp_path: pathlib.Path) -> None:
    release = "rbac"
    kubeconfig = chart_support.operator_kubeconfig(
        control_plane, namespace, release, values={"database.url": database_url},
        path=tmp_path / "operator.kubeconfig")
    worker_deployment = chart_support.worker_deployment(control_plane, namespace, release)
    digests = await ops.stage_demo(database_url, tenant=namespace)
    metrics_port = ops.free_port()
    op = ops.OperatorProcess(kubeconfig, database_url, namespace, tmp_path, "chart-operator", env={
        "CITERUN_AUTOSCALER__ENABLED": "true",
        "CITERUN_OPERATOR__WORKER_DEPLOYMENT": worker_deployment,
        "CITERUN_AUTOSCALER__INTERVAL_S": "1",
        "CITERUN_AUTOSCALER__MAX_WORKERS": "3",
        "CITERUN_OPERATOR__METRICS_PORT": str(metrics_port)}, clusterwide=True)
    try:
        ops.create(api_client, namespace, ops.demo_body("rbac-demo", digests))
        apps = k8s.AppsV1Api(api_client)
        # The autoscaler (Lease + scale subresource) reacts to the queued tasks.
        await ops.wait_for(
            lambda: (apps.read_namespaced_deployment_scale(worker_deployment, namespace)
                     .spec.replicas or 0) >= 1, 30, "the worker Deployment scaled up",
            lambda: op.log())
        workers = [spawn_worker(f"w{i}", tasks="citerun.worker.tasks:registry") for i in range(2)]
        done = await ops.wait_succeeded(
            api_client, namespace, "rbac-demo", 120,
            lambda: op.log() + "".join(w.log()[-2000:] for w in workers))
        assert done["status"]["counts"]["citations"] == 11
        import httpx
        text = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics").text
        assert "citerun_autoscaler_leader 1.0" in text
        assert 'citerun_autoscaler_decisions_total{reason="scale-up"}' in text
        assert "citerun_autoscaler_desired_replicas" in text
        assert "Forbidden" not in op.log() and "403" not in op.log(), op.log()[-3000:]
    finally:
        op.stop()
        ops.drop_finalizers(api_client, namespace)
