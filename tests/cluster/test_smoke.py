"""The test control plane is a real API server: each test here would pass against a
fake or a mock only if that fake re-implemented the behaviour it checks.

- a CRD with a structural schema is served, and the server rejects an invalid object
  (422 naming the field); its status subresource splits spec from status writes;
- a Deployment's replicas change through the scale subresource;
- a watch delivers the ADDED event of a ConfigMap;
- RBAC is enforced: a ServiceAccount is Forbidden until a RoleBinding lets it in;
- kubectl and helm from bin_dir work against it.
"""

from __future__ import annotations

import json
import pathlib
import time
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import watch

import controlplane

pytestmark = pytest.mark.cluster

GROUP, VERSION, PLURAL = "smoke.citerun.dev", "v1", "widgets"

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1, "maximum": 10},
                                    "color": {"type": "string", "enum": ["red", "blue"]},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"phase": {"type": "string"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}


def _widget(name: str, spec: dict[str, object]) -> dict[str, object]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }


@pytest.fixture(scope="module")
def widget_crd(
    control_plane: controlplane.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The Widget CRD, applied with kubectl and Established; deleted after the module."""
    manifest = tmp_path_factory.mktemp("crd") / "widgets.yaml"
    manifest.write_text(yaml.safe_dump(WIDGET_CRD))
    control_plane.kubectl("apply", "-f", str(manifest))
    name = WIDGET_CRD["metadata"]["name"]  # type: ignore[index]
    control_plane.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", f"crd/{name}"
    )
    yield str(name)
    control_plane.kubectl("delete", "crd", str(name), "--wait=false")


def _eventually(check: Callable[[], object], timeout: float = 10.0) -> None:
    """Retry ``check()`` until it stops raising (caches behind the API lag a little)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            check()
            return
        except (k8s.ApiException, AssertionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_crd_schema_is_enforced_by_the_server(
    widget_crd: str, namespace: str, api_client: k8s.ApiClient
) -> None:
    objects = k8s.CustomObjectsApi(api_client)

    def create(name: str, spec: dict[str, object]) -> dict[str, Any]:
        created = objects.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, _widget(name, spec)
        )
        return cast(dict[str, Any], created)

    # The CRD's endpoints appear a moment after Established on a busy apiserver.
    _eventually(lambda: create("good", {"size": 3, "color": "red"}))

    with pytest.raises(k8s.ApiException) as too_big:
        create("too-big", {"size": 99})
    assert too_big.value.status == 422
    assert "spec.size" in str(too_big.value.body)

    with pytest.raises(k8s.ApiException) as bad_enum:
        create("bad-color", {"size": 2, "color": "green"})
    assert bad_enum.value.status == 422
    assert "spec.color" in str(bad_enum.value.body)

    with pytest.raises(k8s.ApiException) as missing:
        create("no-size", {"color": "blue"})
    assert missing.value.status == 422
    assert "spec.size" in str(missing.value.body)

    # Unknown fields are pruned by the structural schema, not stored.
    pruned = create("pruned", {"size": 1, "shape": "round"})
    assert pruned["spec"] == {"size": 1}


def test_crd_status_subresource_splits_spec_and_status(
    widget_crd: str, namespace: str, api_client: k8s.ApiClient
) -> None:
    objects = k8s.CustomObjectsApi(api_client)
    _eventually(
        lambda: objects.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, _widget("w", {"size": 2})
        )
    )
    # A status written through the main resource is ignored...
    objects.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "w", {"status": {"phase": "Ignored"}}
    )
    got = cast(
        dict[str, Any],
        objects.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "w"),
    )
    assert "status" not in got
    # ...and one written through /status is kept, without bumping the generation.
    objects.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, "w", {"status": {"phase": "Ready"}}
    )
    got = cast(
        dict[str, Any],
        objects.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "w"),
    )
    assert got["status"] == {"phase": "Ready"}
    assert got["metadata"]["generation"] == 1


def test_deployment_scale_subresource(namespace: str, api_client: k8s.ApiClient) -> None:
    apps = k8s.AppsV1Api(api_client)
    labels = {"app": "smoke"}
    apps.create_namespaced_deployment(
        namespace,
        k8s.V1Deployment(
            metadata=k8s.V1ObjectMeta(name="smoke"),
            spec=k8s.V1DeploymentSpec(
                replicas=1,
                selector=k8s.V1LabelSelector(match_labels=labels),
                template=k8s.V1PodTemplateSpec(
                    metadata=k8s.V1ObjectMeta(labels=labels),
                    spec=k8s.V1PodSpec(
                        containers=[k8s.V1Container(name="main", image="example.invalid/x:1")]
                    ),
                ),
            ),
        ),
    )
    apps.patch_namespaced_deployment_scale("smoke", namespace, {"spec": {"replicas": 3}})

    scale = apps.read_namespaced_deployment_scale("smoke", namespace)
    assert scale.spec is not None and scale.spec.replicas == 3
    assert scale.status is not None and scale.status.selector == "app=smoke"
    deployment = apps.read_namespaced_deployment("smoke", namespace)
    assert deployment.spec is not None and deployment.spec.replicas == 3


def test_watch_sees_configmap_added(namespace: str, api_client: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(api_client)
    # Watch from the list's resourceVersion: every change after it is delivered.
    listed = core.list_namespaced_config_map(namespace)
    assert listed.metadata is not None
    since = listed.metadata.resource_version
    core.create_namespaced_config_map(
        namespace,
        k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="hello"), data={"k": "v"}),
    )
    w = watch.Watch()  # type: ignore[no-untyped-call]
    events = []
    for event in w.stream(  # type: ignore[no-untyped-call]
        core.list_namespaced_config_map,
        namespace,
        resource_version=since,
        timeout_seconds=10,
        _request_timeout=15,
    ):
        events.append((event["type"], event["object"].metadata.name))
        if event["object"].metadata.name == "hello":
            w.stop()  # type: ignore[no-untyped-call]
    assert ("ADDED", "hello") in events


def test_rbac_is_enforced_for_a_service_account(
    control_plane: controlplane.ControlPlane,
    namespace: str,
    api_client: k8s.ApiClient,
    tmp_path: pathlib.Path,
) -> None:
    token = control_plane.service_account_token(namespace, "reader")
    with control_plane.client(token) as as_reader:
        reader = k8s.CoreV1Api(as_reader)
        with pytest.raises(k8s.ApiException) as forbidden:
            reader.list_namespaced_pod(namespace)
        assert forbidden.value.status == 403
        body = json.loads(str(forbidden.value.body))
        assert body["reason"] == "Forbidden"
        assert f"system:serviceaccount:{namespace}:reader" in body["message"]
        reader_kubeconfig = control_plane.write_kubeconfig(
            tmp_path / "reader.kubeconfig", token=token
        )
        can_i = ["--kubeconfig", str(reader_kubeconfig), "auth", "can-i", "-n", namespace]
        assert control_plane.kubectl(*can_i, "list", "pods", check=False).stdout.strip() == "no"

        # The same token is let in once RBAC says so: the 403 was authorization,
        # not a broken token.
        rbac = k8s.RbacAuthorizationV1Api(api_client)
        rbac.create_namespaced_role(
            namespace,
            k8s.V1Role(
                metadata=k8s.V1ObjectMeta(name="pod-reader"),
                rules=[k8s.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["list"])],
            ),
        )
        rbac.create_namespaced_role_binding(
            namespace,
            k8s.V1RoleBinding(
                metadata=k8s.V1ObjectMeta(name="reader-reads-pods"),
                role_ref=k8s.V1RoleRef(
                    api_group="rbac.authorization.k8s.io", kind="Role", name="pod-reader"
                ),
                subjects=[
                    k8s.RbacV1Subject(kind="ServiceAccount", name="reader", namespace=namespace)
                ],
            ),
        )
        _eventually(lambda: reader.list_namespaced_pod(namespace))
        assert control_plane.kubectl(*can_i, "list", "pods").stdout.strip() == "yes"
        # ...and only for what it was granted.
        with pytest.raises(k8s.ApiException) as still_forbidden:
            reader.list_namespaced_secret(namespace)
        assert still_forbidden.value.status == 403


def test_kubectl_and_helm_work_against_it(
    control_plane: controlplane.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    version = json.loads(control_plane.kubectl("version", "-o", "json").stdout)
    expected = controlplane.read_versions()["KUBERNETES_VERSION"]
    assert version["serverVersion"]["gitVersion"] == expected
    assert version["clientVersion"]["gitVersion"] == expected

    chart = tmp_path / "smoke"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: smoke\nversion: 0.1.0\nkubeVersion: '>=1.30.0-0'\n"
    )
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n"
        "data:\n  greeting: {{ .Values.greeting | quote }}\n"
    )
    (chart / "values.yaml").write_text("greeting: hello\n")
    control_plane.helm("install", "smoke", str(chart), "-n", namespace, "--wait")
    got = control_plane.kubectl(
        "get", "configmap", "smoke-cm", "-n", namespace, "-o", "jsonpath={.data.greeting}"
    )
    assert got.stdout == "hello"
