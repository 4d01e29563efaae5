"""Running the real operator (``citerun operator``) against the test control plane."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import re
import pathlib
import subprocess
import time
from collections.abc import Callable
from typing import Any

import asyncpg
from kubernetes import client as k8s

from citerun.core import runs
from tests.conftest import citerun_command

REPO = pathlib.Path(__file__).resolve().parents[2]
CRD = REPO / "crds" / "citationrun.yaml"
EXAMPLES = REPO / "examples"
GROUP, VERSION, PLURAL = "citerun.dev", "v1alpha1", "citationruns"


class OperatorProcess:
    def __init__(self, kubeconfig: pathlib.Path, url: str, namespace: str, log_dir: pathlib.Path,
                 name: str, env: dict[str, str] | None = None,
                 clusterwide: bool = False) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self._log = open(self.log_path, "wb")
        full_env = {**os.environ, "KUBECONFIG": str(kubeconfig), "CITERUN_DATABASE_URL": url,
                    "CITERUN_OPERATOR__NAMESPACE": namespace,
                    "CITERUN_OPERATOR__RESYNC_S": "3",
                    "CITERUN_OPERATOR__ADMISSION_RETRY_S": "1",
                    "CITERUN_OPERATOR__STATUS_MIN_INTERVAL_S": "0.2",
                    "CITERUN_AUTOSCALER__ENABLED": "false",
                    "CITERUN_OPERATOR__METRICS_PORT": str(free_port()), **(env or {})}
        scope = [] if clusterwide else ["--namespace", namespace]
        self.proc = subprocess.Popen(
            [*citerun_command(), "--log-level", "INFO", "operator", *scope,
             "--liveness-port", str(free_port())],
            cwd=REPO, env=full_env, stdout=self._log, stderr=subprocess.STDOUT)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = 15) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def stage_demo(url: str, thesis: str = "thesis.pdf", *, tenant: str) -> dict[str, str]:
    """Upload the demo thesis and sources for ``tenant`` (the namespace whose runs may use
    them); return {file name: digest}."""
    from citerun.core import db
    await db.migrate(url)
    pool = await db.create_pool(url, min_size=1, max_size=2)
    try:
        out = {}
        for path in [EXAMPLES / thesis, *sorted((EXAMPLES / "sources").glob("*.pdf"))]:
            doc = await runs.stage_document(pool, path.read_bytes(), path.name, tenant=tenant)
            out[path.name] = doc.digest
        return out
    finally:
        await pool.close()


def demo_body(name: str, digests: dict[str, str], thesis: str = "thesis.pdf",
              **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "CitationRun",
            "metadata": {"name": name},
            "spec": {"thesis": {"name": thesis, "digest": digests[thesis]},
                     "sources": [{"name": n, "digest": d} for n, d in sorted(digests.items())
                                 if n != thesis], **spec}}


def get(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        obj: dict[str, Any] = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, name)
        return obj
    except k8s.ApiException as err:
        if err.status == 404:
            return None
        raise


def create(api: k8s.ApiClient, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    obj: dict[str, Any] = k8s.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, body)
    return obj


def accepted(api: k8s.ApiClient, namespace: str, body: dict[str, Any]) -> bool:
    """Whether the API server admits ``body`` now (a dry run: nothing is stored)."""
    try:
        k8s.CustomObjectsApi(api).create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, body, dry_run="All")
    except k8s.ApiException as err:
        if err.status == 422:
            return False
        raise
    return True


async def wait_schema(api: k8s.ApiClient, namespace: str, body: dict[str, Any],
                      accepts: bool, timeout: float = 30) -> None:
    """Wait until the server applies a CRD just applied: it admits (or refuses) ``body``.

    A CRD's new schema reaches the API server's handlers asynchronously; a create sent
    right after ``kubectl apply`` may still be checked against the old one.
    """
    await wait_for(lambda: accepted(api, namespace, body) == accepts, timeout,
                   f"the server to {'admit' if accepts else 'refuse'} the body under the new CRD")


async def wait_for(check: Callable[[], Any], timeout: float, what: str,
                   logs: Callable[[], str] = lambda: "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        await asyncio.sleep(0.3)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{logs()[-6000:]}")


async def wait_succeeded(api: k8s.ApiClient, namespace: str, name: str, timeout: float,
                         logs: Callable[[], str] = lambda: "") -> dict[str, Any]:
    """Wait until the CitationRun's phase is Succeeded; return the object."""
    def succeeded() -> dict[str, Any] | None:
        obj = get(api, namespace, name)
        return obj if ((obj or {}).get("status") or {}).get("phase") == "Succeeded" else None
    obj: dict[str, Any] = await wait_for(succeeded, timeout, f"{name} to succeed", logs)
    return obj


def condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c["type"] == type_:
            return dict(c)
    return None


def drop_finalizers(api: k8s.ApiClient, namespace: str) -> None:
    """Let leftover CitationRuns go when the test's operator is already stopped."""
    custom = k8s.CustomObjectsApi(api)
    for obj in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]:
        custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL,
                                              obj["metadata"]["name"],
                                              {"metadata": {"finalizers": None}})


async def counts(pool: asyncpg.Pool) -> dict[str, Any]:
    rows = await pool.fetch("SELECT kind, dedupe_key FROM tasks")
    keys = [r["dedupe_key"] for r in rows if r["dedupe_key"]]
    return {"runs": await pool.fetchval("SELECT count(*) FROM runs"), "tasks": len(rows),
            "duplicate_keys": len(keys) - len(set(keys)),
            "citations": await pool.fetchval("SELECT count(*) FROM citations")}


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, default=str)


_IN_FORCE = re.compile(r"access policy \S+ in force since (\S+?)(?:[\"\s]|$)", re.M)


def wait_access_policy(op: OperatorProcess, timeout: float = 60.0,
                       seen: int = 0) -> datetime.datetime:
    """Wait until the operator has seen the access policy enforced (its probe refused;
    more than ``seen`` times logged, for a configuration applied again) and a second has
    passed, so a run created now is after the policy's epoch and its Secrets and
    ConfigMaps are read (a run created before is failed as never checked)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _IN_FORCE.findall(op.log())
        if len(found) > seen:
            since = datetime.datetime.fromisoformat(found[-1])
            wait = (since - datetime.datetime.now(datetime.UTC)).total_seconds() + 1.2
            time.sleep(max(0.0, wait))
            return since
        if op.proc.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"the operator never saw the access policy in force:\n{op.log()[-3000:]}")


def access_policy_epochs(op: OperatorProcess) -> int:
    """How many configurations of the access policy the operator has seen in force."""
    return len(_IN_FORCE.findall(op.log()))
