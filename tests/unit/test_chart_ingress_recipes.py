"""The README's Kubernetes recipes for the web page (issue 47, item 1): the chart's
``web.ingress`` values behind ingress-nginx and behind Traefik, each signing users in
through oauth2-proxy, rendered by the real ``helm template`` (the one the cluster tests
build; skipped without it) and checked for the wiring that keeps identity honest: the
Ingress serves the host browsers use and names the web Service's port; the header the
controller sets from oauth2-proxy's answer is the one citerun believes
(``web.identityHeader``); the browser's own copy of it is dropped first (ingress-nginx
sets it on every request; Traefik by the README's ``strip-user`` middleware, listed
before ``oauth2-proxy``); only the controller's pods may reach the service
(NetworkPolicy); the public origin is the host's. Without ``web.ingress`` no Ingress is
rendered. The cluster tests send both files' manifests to a real API server
(``tests/cluster/test_chart.py``, scenarios ``charts/citerun/ci/*-values.yaml``).
"""

from __future__ import annotations

import glob
import os
import pathlib
import re
import shutil
import subprocess
from typing import Any

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "citerun"
CI = CHART / "ci"
HEADING = "### The web page behind an ingress (Kubernetes)"


def _helm() -> str:
    found = shutil.which("helm") or next(iter(sorted(glob.glob(
        os.path.expanduser("~/.cache/citerun/k8s/*/bin/helm")), reverse=True)), None)
    if found is None:
        pytest.skip("needs helm (the cluster tests build it into ~/.cache/citerun/k8s)")
    return found


def _render(values: pathlib.Path | None) -> list[dict[str, Any]]:
    args = [_helm(), "template", "t", str(CHART), "-n", "citerun"]
    if values is not None:
        args += ["-f", str(values)]
    else:
        args += ["--set", "database.url=postgresql://u:p@db:5432/c", "--set", "web.enabled=true"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def _one(objects: list[dict[str, Any]], kind: str, name: str = "t-citerun-web") -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, (kind, name, [(o["kind"], o["metadata"]["name"]) for o in objects])
    return found[0]


def _env(objects: list[dict[str, Any]]) -> dict[str, str]:
    container = _one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in container["env"]}


def _checked_ingress(objects: list[dict[str, Any]], values: dict[str, Any]) -> dict[str, Any]:
    web = values["web"]
    ingress = _one(objects, "Ingress")
    spec = ingress["spec"]
    host = web["ingress"]["host"]
    assert spec["ingressClassName"] == web["ingress"]["className"]
    assert spec["tls"] == [{"hosts": [host], "secretName": web["ingress"]["tlsSecret"]}]
    (rule,) = spec["rules"]
    assert rule["host"] == host
    (path,) = rule["http"]["paths"]
    assert path["path"] == "/" and path["pathType"] == "Prefix"
    assert path["backend"]["service"] == {"name": "t-citerun-web", "port": {"name": "http"}}
    service = _one(objects, "Service")
    assert [p["name"] for p in service["spec"]["ports"]] == ["http"]
    env = _env(objects)
    assert env["CITERUN_WEB__PUBLIC_ORIGIN"] == f"https://{host}"
    assert env["CITERUN_WEB__IDENTITY_HEADER"] == web["identityHeader"]
    policies = [o for o in objects if o["kind"] == "NetworkPolicy"
                and o["spec"]["podSelector"]["matchLabels"].get("app.kubernetes.io/component") == "web"]
    assert len(policies) == 1, [o["metadata"]["name"] for o in objects if o["kind"] == "NetworkPolicy"]
    froms = [peer for rule in policies[0]["spec"]["ingress"] for peer in rule.get("from", [])]
    assert froms == web["ingressFrom"], froms
    annotations: dict[str, Any] = ingress["metadata"]["annotations"]
    return annotations


def test_no_ingress_unless_asked() -> None:
    assert not [o for o in _render(None) if o["kind"] == "Ingress"]


def test_ingress_nginx_signs_in_through_oauth2_proxy_and_names_the_header_citerun_believes() -> None:
    path = CI / "web-ingress-nginx-values.yaml"
    values = yaml.safe_load(path.read_text())
    annotations = _checked_ingress(_render(path), values)
    header = values["web"]["identityHeader"]
    assert annotations["nginx.ingress.kubernetes.io/auth-response-headers"] == header
    assert annotations["nginx.ingress.kubernetes.io/auth-url"].endswith("/oauth2/auth")
    host = values["web"]["ingress"]["host"]
    assert annotations["nginx.ingress.kubernetes.io/auth-signin"].startswith(
        f"https://{host}/oauth2/start?rd=")
    assert annotations["nginx.ingress.kubernetes.io/proxy-body-size"] == "115m"


def _readme_middlewares() -> dict[str, dict[str, Any]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.count(HEADING) == 1
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block, "the section's Middlewares"
    return {d["metadata"]["name"]: d for d in yaml.safe_load_all(block.group(1))}


def test_traefik_drops_the_browsers_header_then_takes_oauth2_proxys() -> None:
    path = CI / "web-traefik-values.yaml"
    values = yaml.safe_load(path.read_text())
    annotations = _checked_ingress(_render(path), values)
    header = values["web"]["identityHeader"]
    middlewares = _readme_middlewares()
    chain = annotations["traefik.ingress.kubernetes.io/router.middlewares"].split(",")
    # namespace-name@kubernetescrd: the README's two, in the release's namespace, in order.
    assert chain == [f"{m['metadata']['namespace']}-{name}@kubernetescrd"
                     for name, m in middlewares.items()]
    assert list(middlewares) == ["strip-user", "oauth2-proxy"]
    assert {m["metadata"]["namespace"] for m in middlewares.values()} == {"citerun"}
    strip = middlewares["strip-user"]["spec"]["headers"]["customRequestHeaders"]
    assert strip == {header: ""}
    auth = middlewares["oauth2-proxy"]["spec"]["forwardAuth"]
    assert auth["authResponseHeaders"] == [header]
    assert auth["address"].startswith("http://oauth2-proxy.")
