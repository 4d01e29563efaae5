"""``citerun upload / submit / status / report`` against the real API server."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
from typing import Any

import asyncpg
import pytest
from kubernetes import client as k8s

import operator_support as ops
from tests.conftest import citerun_command

pytestmark = pytest.mark.cluster


def _citerun(*args: str, kubeconfig: pathlib.Path, url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "CITERUN_DATABASE_URL": url}
    return subprocess.run([*citerun_command(), *args], cwd=ops.REPO, env=env,
                          capture_output=True, text=True, timeout=120)


async def test_upload_submit_status_and_report(
        control_plane: Any, namespace: str, api_client: k8s.ApiClient, database_url: str,
        pool: asyncpg.Pool, spawn_worker: Any, tmp_path: pathlib.Path) -> None:
    control_plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ops.CRD))
    kube = pathlib.Path(control_plane.kubeconfig)
    thesis = ops.EXAMPLES / "thesis_numeric.pdf"
    uploaded = _citerun("upload", str(thesis), kubeconfig=kube, url=database_url)
    assert uploaded.returncode == 0, uploaded.stderr
    digest, name = uploaded.stdout.split()
    assert name == "thesis_numeric.pdf" and len(digest) == 64
    assert await pool.fetchval("SELECT filename FROM documents WHERE digest = $1", digest) == name

    op = ops.OperatorProcess(kube, database_url, namespace, tmp_path, "cli-operator")
    try:
        submitted = _citerun("submit", str(thesis), "--sources", str(ops.EXAMPLES / "sources"),
                             "--name", "cli-run", "-n", namespace, kubeconfig=kube,
                             url=database_url)
        assert submitted.returncode == 0, submitted.stderr
        assert "cli-run" in submitted.stdout
        workers = [spawn_worker(f"w{i}", tasks="citerun.worker.tasks:registry")
                   for i in range(2)]
        await ops.wait_succeeded(
            api_client, namespace, "cli-run", 120,
            lambda: op.log() + "".join(w.log()[-2000:] for w in workers))
        shown = _citerun("status", "cli-run", "-n", namespace, kubeconfig=kube, url=database_url)
        assert shown.returncode == 0 and "Succeeded (11/11 judged)" in shown.stdout, shown.stdout
        assert "unresolvedCitation: 1" in shown.stdout
        printed = _citerun("report", "cli-run", "-n", namespace, kubeconfig=kube,
                           url=database_url)
        report = json.loads(printed.stdout)
        assert report["summary"]["total"] == 11 and report["name"] == "cli-run"
        out = tmp_path / "cli-run.html"
        saved = _citerun("report", "cli-run", "-n", namespace, "--out", str(out),
                         kubeconfig=kube, url=database_url)
        assert saved.returncode == 0 and out.read_text().lstrip().lower().startswith("<!doctype html")
        missing = _citerun("status", "nope", "-n", namespace, kubeconfig=kube, url=database_url)
        assert missing.returncode == 1 and "not found" in missing.stderr
    finally:
        op.stop()
        ops.drop_finalizers(api_client, namespace)
