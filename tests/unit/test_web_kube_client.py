"""The web's cluster backend speaks to the API server through the one Kubernetes client
(:mod:`citerun.kube.client`): no module of the web builds a client, loads a kubeconfig or
calls the generated API classes itself."""

from __future__ import annotations

import ast
import pathlib

WEB = pathlib.Path(__file__).resolve().parents[2] / "src" / "citerun" / "web"
CLIENT_NAMES = {"ApiClient", "Configuration", "CustomObjectsApi", "CoreV1Api", "AppsV1Api",
                "CoordinationV1Api", "load_kube_config", "load_incluster_config"}


def test_no_web_module_builds_a_kubernetes_client() -> None:
    found: list[str] = []
    for path in sorted(WEB.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in CLIENT_NAMES:
                found.append(f"{path.name}:{node.lineno} {node.attr}")
            if isinstance(node, ast.Import):
                found += [f"{path.name}:{node.lineno} import {a.name}" for a in node.names
                          if a.name.split(".")[0] == "kubernetes"]
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kubernetes"):
                found += [f"{path.name}:{node.lineno} {a.name}" for a in node.names
                          if a.name != "ApiException"]
    assert not found, f"the web calls Kubernetes past citerun.kube.client: {found}"


def test_the_cluster_backend_uses_the_one_client() -> None:
    from citerun.kube import client
    from citerun.web import cluster
    assert cluster.kube_client is client
