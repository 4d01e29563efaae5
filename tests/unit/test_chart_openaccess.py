"""The chart's open-access values (issue 51), rendered by the real ``helm template``: off by
default; on, the workers (which fetch) get CITERUN_OPENACCESS__ENABLED, the e-mail and the
proxy, the web gets the form's checkbox (CITERUN_WEB__FETCH_SOURCES), and proxyCIDRs open
the workers' egress to the proxy's port, and nothing else changes in their policy."""

from __future__ import annotations

import glob
import os
import pathlib
import shutil
import subprocess
from typing import Any

import pytest
import yaml

CHART = pathlib.Path(__file__).resolve().parents[2] / "charts" / "citerun"


def _helm() -> str:
    found = shutil.which("helm") or next(iter(sorted(glob.glob(
        os.path.expanduser("~/.cache/citerun/k8s/*/bin/helm")), reverse=True)), None)
    if found is None:
        pytest.skip("needs helm (the cluster tests build it into ~/.cache/citerun/k8s)")
    return found


def _render(*sets: str) -> list[dict[str, Any]]:
    args = [_helm(), "template", "t", str(CHART), "--set", "postgresql.enabled=true",
            "--set", "web.enabled=true"]
    for value in sets:
        args += ["--set", value]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120, check=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def _env(docs: list[dict[str, Any]], component: str) -> dict[str, str]:
    [deploy] = [d for d in docs if d["kind"] == "Deployment"
                and d["metadata"]["labels"].get("app.kubernetes.io/component") == component]
    [container] = deploy["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value") for e in container["env"]}


def _worker_egress(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    [policy] = [d for d in docs if d["kind"] == "NetworkPolicy"
                and d["metadata"]["labels"].get("app.kubernetes.io/component") == "worker"]
    egress: list[dict[str, Any]] = policy["spec"]["egress"]
    return egress


def test_off_by_default() -> None:
    docs = _render()
    assert _env(docs, "worker")["CITERUN_OPENACCESS__ENABLED"] == "false"
    assert _env(docs, "web")["CITERUN_WEB__FETCH_SOURCES"] == "false"
    assert not {"CITERUN_OPENACCESS__EMAIL", "CITERUN_OPENACCESS__PROXY"} & set(_env(docs, "worker"))


def test_on_with_a_proxy() -> None:
    plain = _worker_egress(_render())
    docs = _render("openaccess.enabled=true", "openaccess.email=ops@uni.example",
                   "openaccess.proxy=http://egress.infra.svc:3128",
                   "openaccess.proxyCIDRs={10.96.0.10/32}")
    worker = _env(docs, "worker")
    assert worker["CITERUN_OPENACCESS__ENABLED"] == "true"
    assert worker["CITERUN_OPENACCESS__EMAIL"] == "ops@uni.example"
    assert worker["CITERUN_OPENACCESS__PROXY"] == "http://egress.infra.svc:3128"
    assert _env(docs, "web")["CITERUN_WEB__FETCH_SOURCES"] == "true"
    assert "CITERUN_OPENACCESS__ENABLED" not in _env(docs, "web")  # the web fetches nothing
    egress = _worker_egress(docs)
    added = [rule for rule in egress if rule not in plain]
    assert added == [{"to": [{"ipBlock": {"cidr": "10.96.0.10/32"}}],
                      "ports": [{"port": 3128, "protocol": "TCP"}]}]
