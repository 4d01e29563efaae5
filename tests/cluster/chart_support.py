"""Helpers shared by the chart and CRD tests, and by later tests that run the operator
with exactly the permissions the chart grants it.

Why a module and not fixtures: the operator test (another module) needs to install the
chart and act as its ServiceAccount in the middle of its own set-up, with its own
database URL; a plain function composes with any fixture, a fixture does not.

The CRD is applied once and never deleted: deleting it cascades to every CitationRun in
every test namespace, and ``helm install`` skips a CRD that already exists, so one copy
for the whole session is what both the CRD tests and the chart tests want.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import yaml
from kubernetes import client as k8s

import controlplane

REPO = pathlib.Path(__file__).resolve().parents[2]
CHART_DIR = REPO / "charts" / "citerun"
CRD_FILE = REPO / "crds" / "citationrun.yaml"
CHART_CRD_FILE = CHART_DIR / "crds" / "citationrun.yaml"
EXAMPLE_RUN = REPO / "examples" / "citationrun.yaml"

GROUP, VERSION, PLURAL, KIND = "citerun.dev", "v1alpha1", "citationruns", "CitationRun"
CRD_NAME = f"{PLURAL}.{GROUP}"

# Any syntactically valid URL: the control plane runs no pods, so nothing connects.
PLACEHOLDER_DATABASE_URL = "postgresql://citerun:secret@postgres.invalid:5432/citerun"

T = TypeVar("T")


def eventually(check: Callable[[], T], timeout: float = 15.0) -> T:
    """Retry ``check()`` until it stops raising ApiException or AssertionError, and
    return its result: discovery after a CRD is Established, and RBAC after a binding
    is created, lag the write by a moment on a busy apiserver."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except (k8s.ApiException, AssertionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def ensure_crd(plane: controlplane.ControlPlane) -> None:
    """Apply crds/citationrun.yaml (idempotent) and wait until it is Established and
    its endpoints are served."""
    plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD_FILE))
    plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{CRD_NAME}")

    def served() -> None:
        with plane.client() as api:
            k8s.CustomObjectsApi(api).list_cluster_custom_object(GROUP, VERSION, PLURAL)

    eventually(served)


def citation_run(name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """A CitationRun body."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": name},
        "spec": dict(spec),
    }


def example_spec() -> dict[str, Any]:
    """The spec of examples/citationrun.yaml (a fresh copy to mutate)."""
    return dict(yaml.safe_load(EXAMPLE_RUN.read_text())["spec"])


# --- helm --------------------------------------------------------------------------


def set_args(values: Mapping[str, object]) -> list[str]:
    """``--set k=v`` arguments (``--set-string`` for strings, so "1" stays a string)."""
    args: list[str] = []
    for key, value in values.items():
        if isinstance(value, str):
            args += ["--set-string", f"{key}={value}"]
        else:
            args += ["--set", f"{key}={json.dumps(value)}"]
    return args


def helm_template(
    plane: controlplane.ControlPlane,
    namespace: str,
    *,
    release: str = "citerun",
    values_files: Iterable[pathlib.Path] = (),
    values: Mapping[str, object] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """``helm template`` of the chart as it would be installed into ``namespace``."""
    args = ["template", release, str(CHART_DIR), "--namespace", namespace]
    for path in values_files:
        args += ["--values", str(path)]
    args += set_args(values or {})
    return plane.helm(*args, check=check)


def manifests(rendered: str) -> list[dict[str, Any]]:
    """The objects of a multi-document YAML stream (empty documents dropped)."""
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def find(objects: Iterable[dict[str, Any]], kind: str, suffix: str = "") -> dict[str, Any]:
    """The one object of ``kind`` whose name ends with ``suffix``."""
    found = [
        obj
        for obj in objects
        if obj["kind"] == kind and obj["metadata"]["name"].endswith(suffix)
    ]
    assert len(found) == 1, f"{len(found)} {kind} named *{suffix}"
    return found[0]


def install_chart(
    plane: controlplane.ControlPlane,
    namespace: str,
    release: str,
    *,
    values: Mapping[str, object] | None = None,
    upgrade: bool = False,
) -> str:
    """``helm install`` (or ``upgrade --install``) the chart into ``namespace``, with a
    placeholder database URL unless ``values`` chooses one. No ``--wait``: there is no
    kubelet, so no pod ever becomes ready; the objects exist, which is what RBAC and
    the operator's API calls need. Returns helm's output (with the NOTES)."""
    merged: dict[str, object] = {"database.url": PLACEHOLDER_DATABASE_URL}
    merged.update(values or {})
    if merged.get("postgresql.enabled") is True:
        merged.pop("database.url")
    verb = ["upgrade", "--install"] if upgrade else ["install"]
    args = [*verb, release, str(CHART_DIR), "--namespace", namespace, *set_args(merged)]
    return plane.helm(*args).stdout


def operator_service_account(
    plane: controlplane.ControlPlane, namespace: str, release: str
) -> str:
    """Name of the operator's ServiceAccount of release ``release``."""
    return _component_object(plane, "serviceaccounts", namespace, release, "operator")


def worker_deployment(plane: controlplane.ControlPlane, namespace: str, release: str) -> str:
    """Name of the worker Deployment of release ``release``."""
    return _component_object(plane, "deployments", namespace, release, "worker")


def _component_object(plane: controlplane.ControlPlane, resource: str, namespace: str,
                      release: str, component: str) -> str:
    """Name of the one ``resource`` of ``release`` labelled with ``component``."""
    proc = plane.kubectl(
        "get", resource, "--namespace", namespace, "--output", "name", "--selector",
        f"app.kubernetes.io/instance={release},app.kubernetes.io/component={component}",
    )
    names = proc.stdout.split()
    assert len(names) == 1, f"{component} {resource} of {release}: {names}"
    return names[0].split("/", 1)[1]


def operator_token(plane: controlplane.ControlPlane, namespace: str, release: str) -> str:
    """A TokenRequest token of the operator's ServiceAccount: exactly what the chart's
    RBAC grants, like the operator pod's projected token."""
    account = operator_service_account(plane, namespace, release)
    return plane.service_account_token(namespace, account, create=False)


def operator_kubeconfig(
    plane: controlplane.ControlPlane,
    namespace: str,
    release: str,
    *,
    values: Mapping[str, object] | None = None,
    path: pathlib.Path | None = None,
) -> pathlib.Path:
    """Install the chart as ``release`` into ``namespace`` and return a kubeconfig that
    authenticates as the operator's ServiceAccount (for ``citerun operator`` run as a
    subprocess against the test control plane).

    ``values`` are ``--set`` values, e.g. ``{"database.url": url}`` for a real database.
    The kubeconfig goes to ``path``, by default into the control plane's workdir.
    """
    ensure_crd(plane)
    install_chart(plane, namespace, release, values=values)
    token = operator_token(plane, namespace, release)
    if path is None:
        assert plane.workdir is not None, "control plane not started"
        path = plane.workdir / f"operator-{namespace}-{release}.kubeconfig"
    return plane.write_kubeconfig(path, token=token)


ACCESS_POLICY_NAMESPACE = "citerun-tests"


def ensure_access_policy(plane: controlplane.ControlPlane) -> str:
    """Apply the chart's access policy (a ValidatingAdmissionPolicy and its binding,
    cluster-scoped) as release ``citerun`` of namespace ``citerun-tests`` would; return
    the binding's name, which the operator must be told
    (``CITERUN_OPERATOR__ACCESS_POLICY_BINDING``) before it reads any Secret/ConfigMap."""
    return apply_access_policy(plane, ACCESS_POLICY_NAMESPACE, "citerun")


def apply_access_policy(plane: controlplane.ControlPlane, namespace: str, release: str,
                        only: str | None = None) -> str:
    """Apply (again) the access policy and binding of release ``release`` in ``namespace``
    as the chart renders them (``only``: the object of that kind alone); return the
    binding's name (the policy's is the same)."""
    rendered = plane.helm(
        "template", release, str(CHART_DIR), "--namespace", namespace,
        "--show-only", "templates/access-policy.yaml",
        *set_args({"database.url": PLACEHOLDER_DATABASE_URL})).stdout
    if only is not None:
        import yaml
        kept = [o for o in manifests(rendered) if o["kind"] == only]
        assert kept, only
        rendered = yaml.safe_dump_all(kept)
    path = (plane.workdir or pathlib.Path("/tmp")) / f"access-policy-{namespace}-{release}.yaml"
    path.write_text(rendered)
    plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(path))
    binding = find(manifests(rendered), "ValidatingAdmissionPolicyBinding")
    return str(binding["metadata"]["name"])
