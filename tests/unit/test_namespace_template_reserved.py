"""Issue 48 (Low): ``namespaceTemplate: "{user}"`` was accepted, so a user named
``kube-system``, ``default`` or ``citerun`` (the operator's own namespace) had their
CitationRuns created there, as that namespace's tenant: its caps, its queue share, its
judge cache, and Kubernetes' own namespaces written to by the web's ServiceAccount.

As an installer configures ``citerun serve`` (its environment) and as a user is mapped:
a template without a fixed part, or one that can name a namespace of Kubernetes
(``default``, ``kube-*``), is refused when the service starts, with the setting named;
a mapped namespace that is the service's own is refused per upload (403)."""

from __future__ import annotations

import subprocess
import sys

import pydantic
import pytest

from citerun.web import cluster
from citerun.web.settings import ServeSettings, WebSettings


@pytest.mark.parametrize("template, named", [
    ("{user}", "kube-system"),
    ("kube-{user}", "kube-system"),
    ("k{user}", "kube-system"),
    ("{user}-system", "kube-system"),
    ("def{user}", "default"),
    ("{user}ult", "default"),
])
def test_a_template_that_can_name_a_system_namespace_is_refused(
        template: str, named: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITERUN_WEB__BACKEND", "kubernetes")
    monkeypatch.setenv("CITERUN_WEB__NAMESPACE_TEMPLATE", template)
    with pytest.raises(pydantic.ValidationError) as refused:
        ServeSettings()
    message = str(refused.value)
    assert "web.namespace_template" in message and named in message, message


@pytest.mark.parametrize("template", ["thesis-{user}", "{user}-thesis", "kube{user}",
                                      "a-very-long-department-prefix-{user}-ns"])
def test_a_template_with_a_fixed_part_is_taken(template: str) -> None:
    settings = WebSettings(backend="kubernetes", namespace_template=template)
    for user in ("kube-system", "default", "citerun", "kube-public"):
        namespace = cluster.namespace_for(user, settings)
        assert namespace not in ("kube-system", "default", "citerun", "kube-public",
                                 "kube-node-lease"), namespace


def test_citerun_serve_refuses_to_start_with_the_template_user_alone() -> None:
    done = subprocess.run(
        [sys.executable, "-P", "-m", "citerun", "serve"], capture_output=True, text=True,
        timeout=120, env={"PATH": "/usr/bin:/bin", "CITERUN_WEB__BACKEND": "kubernetes",
                          "CITERUN_WEB__NAMESPACE_TEMPLATE": "{user}",
                          "CITERUN_DATABASE_URL": "postgresql://citerun@127.0.0.1:1/citerun"})
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert "web.namespace_template" in done.stderr and "kube-system" in done.stderr


def test_the_services_own_namespace_is_refused_for_an_upload() -> None:
    settings = WebSettings(backend="kubernetes", namespace_template="{user}-ns")
    assert cluster.refused_namespace("citerun-ns", settings, own="citerun-ns") is not None
    assert "citerun-ns" in str(cluster.refused_namespace("citerun-ns", settings,
                                                        own="citerun-ns"))
    assert cluster.refused_namespace("alice-ns", settings, own="citerun-ns") is None
    assert cluster.refused_namespace("alice-ns", settings, own=None) is None
