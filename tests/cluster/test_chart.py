"""The Helm chart: lint-clean, every scenario's manifests accepted by the real API
server, the values schema rejects bad values by name, config changes roll pods, and the
operator's ServiceAccount gets exactly the permissions it needs (checked with its own
token, not ``kubectl auth can-i``)."""

from __future__ import annotations

import base64
import json
import os
import pathlib
import re
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

import chart_support as cs
from citerun.operator import status
import controlplane

pytestmark = pytest.mark.cluster

SCENARIOS = sorted((cs.CHART_DIR / "ci").glob("*-values.yaml"))
SCENARIO_IDS = [path.name.removesuffix("-values.yaml") for path in SCENARIOS]


def _env(objects: list[dict[str, Any]], deployment: str) -> dict[str, Any]:
    """name -> value (or valueFrom) of the first container of a Deployment."""
    container = cs.find(objects, "Deployment", deployment)["spec"]["template"]["spec"][
        "containers"
    ][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


# --- static checks ---------------------------------------------------------------


def test_scenario_files_are_there() -> None:
    assert set(SCENARIO_IDS) >= {
        "default", "bundled-postgres", "existing-secret", "openai-judge", "no-autoscaling",
    }


def test_chart_crd_is_a_byte_identical_copy() -> None:
    assert cs.CHART_CRD_FILE.read_bytes() == cs.CRD_FILE.read_bytes(), (
        "charts/citerun/crds/citationrun.yaml differs from crds/citationrun.yaml: "
        "copy the top-level file over it"
    )


def _schema_node(schema: dict[str, Any], path: list[str]) -> dict[str, Any] | None:
    node: dict[str, Any] | None = schema
    for key in path:
        if node is None or "properties" not in node:
            return None
        node = node["properties"].get(key)
    return node


def test_every_values_key_is_commented_and_in_the_schema() -> None:
    """Each key the chart defines (not the contents of pass-through Kubernetes objects
    such as resources) has a comment above it and a schema entry."""
    schema = json.loads((cs.CHART_DIR / "values.schema.json").read_text())
    lines = (cs.CHART_DIR / "values.yaml").read_text().splitlines()
    stack: list[tuple[int, str]] = []
    missing_comment, missing_schema = [], []
    previous = ""
    for line in lines:
        match = re.match(r"^( *)([A-Za-z_][\w-]*):", line)
        if match:
            indent, key = len(match.group(1)), match.group(2)
            while stack and stack[-1][0] >= indent:
                stack.pop()
            parents = [k for _, k in stack]
            parent = _schema_node(schema, parents)
            if parent is not None and "properties" in parent:
                path = ".".join([*parents, key])
                if not previous.lstrip().startswith("#"):
                    missing_comment.append(path)
                if key not in parent["properties"]:
                    missing_schema.append(path)
            stack.append((indent, key))
        if line.strip():
            previous = line
    assert not missing_comment, f"keys without a comment: {missing_comment}"
    assert not missing_schema, f"keys not in values.schema.json: {missing_schema}"


# --- helm lint and template --------------------------------------------------------


@pytest.mark.parametrize("values_file", [None, *SCENARIOS], ids=["chart", *SCENARIO_IDS])
def test_helm_lint_strict(
    control_plane: controlplane.ControlPlane, values_file: pathlib.Path | None
) -> None:
    extra = ["--values", str(values_file)] if values_file else []
    for strict in ([], ["--strict"]):
        proc = control_plane.helm("lint", *strict, str(cs.CHART_DIR), *extra, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "0 chart(s) failed" in proc.stdout
        assert "[WARNING]" not in proc.stdout and "[ERROR]" not in proc.stdout, proc.stdout


def _dry_run(plane: controlplane.ControlPlane, namespace: str, rendered: str) -> str:
    proc = subprocess.run(
        [str(plane.bin_dir / "kubectl"), "apply", "--dry-run=server",
         "--namespace", namespace, "-f", "-"],
        input=rendered, env=plane.tool_env(), capture_output=True, text=True,
        timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("values_file", SCENARIOS, ids=SCENARIO_IDS)
def test_every_scenario_is_accepted_by_the_api_server(
    crd: str, control_plane: controlplane.ControlPlane, namespace: str,
    values_file: pathlib.Path,
) -> None:
    rendered = cs.helm_template(control_plane, namespace, values_files=[values_file]).stdout
    objects = cs.manifests(rendered)
    out = _dry_run(control_plane, namespace, rendered)
    assert out.count("(server dry run)") == len(objects), out

    kinds = {obj["kind"] for obj in objects}
    assert {"Deployment", "ServiceAccount", "ClusterRole", "Role",
            "PodDisruptionBudget", "Service"} <= kinds
    assert "ServiceMonitor" not in kinds  # off by default, and no CRD for it here
    assert "CustomResourceDefinition" not in kinds  # crds/ is not templated

    values = yaml.safe_load(values_file.read_text())
    for obj in objects:
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/instance"] == "citerun"
        assert labels["helm.sh/chart"] == "citerun-0.1.0"
        if obj["kind"] in ("Deployment", "StatefulSet"):
            selector = obj["spec"]["selector"]["matchLabels"]
            assert "helm.sh/chart" not in selector
            assert "app.kubernetes.io/version" not in selector
            assert "app.kubernetes.io/component" in selector
            pod = obj["spec"]["template"]
            checksum = pod["metadata"]["annotations"]["checksum/config"]
            assert re.fullmatch(r"[0-9a-f]{64}", checksum)

    worker = cs.find(objects, "Deployment", "-worker")
    operator = cs.find(objects, "Deployment", "-operator")
    pod = worker["spec"]["template"]["spec"]
    env = _env(objects, "-worker")
    assert pod["containers"][0]["command"] == ["citerun", "worker"]
    assert operator["spec"]["template"]["spec"]["containers"][0]["command"] == [
        "citerun", "operator"
    ]
    drain = values.get("workers", {}).get("drainTimeoutSeconds", 20)
    assert pod["terminationGracePeriodSeconds"] == drain + 10
    assert env["CITERUN_WORKER__DRAIN_TIMEOUT_S"] == str(drain)
    pod_name = {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["POD_NAME"] == env["CITERUN_WORKER__ID"] == pod_name
    assert env["HF_HUB_OFFLINE"] == "1"
    assert env["CITERUN_WORKER__METRICS_PORT"] == "9100"
    op_env = _env(objects, "-operator")
    assert op_env["CITERUN_OPERATOR__WORKER_DEPLOYMENT"] == worker["metadata"]["name"]
    assert op_env["CITERUN_OPERATOR__NAMESPACE"] == namespace
    assert operator["spec"]["strategy"] == {"type": "Recreate"}

    if values.get("autoscaling", {}).get("enabled", True):
        assert "replicas" not in worker["spec"]  # the operator owns it
    else:
        assert worker["spec"]["replicas"] == values["workers"]["replicas"]
        assert op_env["CITERUN_AUTOSCALER__ENABLED"] == "false"

    database = env["CITERUN_DATABASE_URL"]["secretKeyRef"]
    assert op_env["CITERUN_DATABASE_URL"]["secretKeyRef"] == database
    secrets = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Secret"}
    existing = values.get("database", {}).get("existingSecret")
    if existing:
        assert database == {"name": existing, "key": values["database"]["existingSecretKey"]}
        assert not secrets
    else:
        assert database["name"] in secrets and database["key"] == "url"
    if values.get("postgresql", {}).get("enabled"):
        sts = cs.find(objects, "StatefulSet", "-postgresql")
        assert sts["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"] == {
            "storage": values["postgresql"]["persistence"]["size"]
        }
        postgres = sts["spec"]["template"]["spec"]["containers"][0]
        assert postgres["image"] == "pgvector/pgvector:pg18"
        url = base64.b64decode(secrets[database["name"]]["data"]["url"]).decode()
        password = base64.b64decode(secrets[sts["metadata"]["name"]]["data"]["password"])
        assert url.startswith(f"postgresql://citerun:{password.decode()}@")
    # Pipeline settings go to the workers only (the operator gets no API keys, only the
    # judge profiles' names, URLs and models, to refuse a run naming an unknown profile).
    assert not [name for name in op_env if name.startswith(("CITERUN_JUDGE", "CITERUN_EMB"))
                and name != "CITERUN_JUDGE_PROFILES"]
    assert not [name for name, value in op_env.items()
                if isinstance(value, dict) and "secretKeyRef" in value
                and name != "CITERUN_DATABASE_URL"]
    profiles = json.loads(op_env["CITERUN_JUDGE_PROFILES"])
    assert profiles == json.loads(env["CITERUN_JUDGE_PROFILES"])
    for name, profile in values.get("judgeProfiles", {}).items():
        assert profiles[name]["baseUrl"] == profile["baseUrl"]
        key_env = profiles[name].get("apiKeyEnv")
        if profile.get("apiKeySecret", {}).get("name"):
            assert env[key_env] == {"secretKeyRef": profile["apiKeySecret"]}
    # The access policy and the NetworkPolicies ship by default.
    assert cs.find(objects, "ValidatingAdmissionPolicyBinding", "-run-access")
    assert op_env["CITERUN_OPERATOR__ACCESS_POLICY_BINDING"] == cs.find(
        objects, "ValidatingAdmissionPolicyBinding", "-run-access")["metadata"]["name"]
    # The probe the operator sends is refused by this policy, for this policy only, in the
    # words the operator expects (src/citerun/operator/access.py owns them).
    from citerun.operator import access
    policy = cs.find(objects, "ValidatingAdmissionPolicy", "-run-access")
    probe = [v for v in policy["spec"]["validations"]
             if access.PROBE_ANNOTATION in v["expression"]]
    assert len(probe) == 1 and policy["metadata"]["name"] in probe[0]["expression"]
    assert probe[0]["message"] == access.PROBE_MESSAGE.format(policy=policy["metadata"]["name"])
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "NetworkPolicy"}
    worker_np = policies[worker["metadata"]["name"]]
    public = [rule for rule in worker_np["spec"]["egress"]
              if any("ipBlock" in peer for peer in rule.get("to", []))]
    assert public and "169.254.0.0/16" in public[0]["to"][0]["ipBlock"]["except"]
    assert operator["metadata"]["name"] in policies
    judge = values.get("pipeline", {}).get("judge", {})
    assert env["CITERUN_JUDGE__KIND"] == judge.get("kind", "embedded")
    if judge.get("kind") == "openai":
        assert env["CITERUN_JUDGE__OPENAI__MODEL"] == judge["openai"]["model"]
        # The env var src/citerun/core/runspec.py names for runs with an apiKeySecretRef.
        assert env["CITERUN_JUDGE__OPENAI__API_KEY_ENV"] == "CITERUN_JUDGE_API_KEY"
        assert env["CITERUN_JUDGE_API_KEY"] == {
            "secretKeyRef": {"name": judge["openai"]["apiKeySecret"]["name"],
                             "key": judge["openai"]["apiKeySecret"]["key"]}
        }
    embedding = values.get("pipeline", {}).get("embedding", {})
    assert env["CITERUN_EMBEDDING__PROVIDER"] == embedding.get("provider", "wordllama")
    if embedding.get("provider") == "openai":
        assert env["CITERUN_EMBEDDING__MODEL"] == embedding["openai"]["model"]
        assert "secretKeyRef" in env["CITERUN_EMBEDDING__API_KEY"]


def test_pods_get_no_service_links(control_plane: controlplane.ControlPlane) -> None:
    # citerun reads CITERUN_*; a Service named citerun-* would add CITERUN_*_SERVICE_HOST
    # and the like to the environment of every pod in the namespace.
    rendered = cs.manifests(cs.helm_template(
        control_plane, "ns", values={"database.url": cs.PLACEHOLDER_DATABASE_URL}).stdout)
    deployments = [o for o in rendered if o["kind"] == "Deployment"]
    assert len(deployments) == 2
    for deployment in deployments:
        assert deployment["spec"]["template"]["spec"]["enableServiceLinks"] is False


def test_service_monitor_only_when_enabled(
    control_plane: controlplane.ControlPlane,
) -> None:
    base = {"database.url": cs.PLACEHOLDER_DATABASE_URL}
    off = cs.manifests(cs.helm_template(control_plane, "ns", values=base).stdout)
    assert not [o for o in off if o["kind"] == "ServiceMonitor"]
    on = cs.manifests(
        cs.helm_template(
            control_plane, "ns",
            values={**base, "metrics.serviceMonitor.enabled": True,
                    "metrics.serviceMonitor.labels.release": "prometheus"},
        ).stdout
    )
    monitor = cs.find(on, "ServiceMonitor")
    service = cs.find(on, "Service", "-metrics")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["selector"]["matchLabels"] == {
        k: v for k, v in service["metadata"]["labels"].items()
        if k in monitor["spec"]["selector"]["matchLabels"]
    }
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]


def test_config_change_rolls_pods(control_plane: controlplane.ControlPlane) -> None:
    def checksums(url: str) -> set[str]:
        objects = cs.manifests(
            cs.helm_template(control_plane, "ns", values={"database.url": url}).stdout
        )
        return {
            o["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
            for o in objects if o["kind"] == "Deployment"
        }

    first = checksums("postgresql://a@db.invalid/citerun")
    assert len(first) == 1  # operator and workers agree
    assert checksums("postgresql://a@db.invalid/citerun") == first  # deterministic
    assert checksums("postgresql://b@db.invalid/citerun") != first


INVALID_VALUES = {
    "negative-concurrency": ({"workers.concurrency": -1}, "/workers/concurrency"),
    "unknown-top-level-key": ({"colour": "blue"}, "'colour' not allowed"),
    "max-workers-not-a-number": ({"autoscaling.maxWorkers": "many"}, "/autoscaling/maxWorkers"),
    "unknown-judge": ({"pipeline.judge.kind": "oracle"}, "/pipeline/judge/kind"),
    "openai-judge-without-model": (
        {"pipeline.judge.kind": "openai",
         "pipeline.judge.openai.baseUrl": "https://llm.example.org/v1"},
        "/pipeline/judge/openai/model",
    ),
    "min-above-max": (
        {"autoscaling.minWorkers": 5, "autoscaling.maxWorkers": 2},
        "autoscaling.minWorkers (5) must not exceed autoscaling.maxWorkers (2)",
    ),
    # Issue 48: a per-user namespace template that a user named "s" would turn into the
    # release's own namespace ("ns", the operator's and the database's) is refused at
    # install, as the web service refuses it at start for system and existing names.
    "namespace-template-naming-the-release-namespace": (
        {"web.enabled": True, "web.namespaceTemplate": "n{user}"},
        'web.namespaceTemplate "n{user}" can name the release\'s own namespace "ns"',
    ),
    "namespace-and-namespace-template": (
        {"web.enabled": True, "web.namespace": "theses",
         "web.namespaceTemplate": "thesis-{user}"},
        "web.namespace and web.namespaceTemplate: set one, not both",
    ),
}


@pytest.mark.parametrize("case", list(INVALID_VALUES))
def test_invalid_values_are_rejected_by_name(
    control_plane: controlplane.ControlPlane, case: str
) -> None:
    values, expected = INVALID_VALUES[case]
    proc = cs.helm_template(
        control_plane, "ns",
        values={"database.url": cs.PLACEHOLDER_DATABASE_URL, **values}, check=False,
    )
    assert proc.returncode != 0, f"{case}: rendered"
    assert expected in proc.stderr, proc.stderr


def test_missing_database_is_a_readable_install_error(
    control_plane: controlplane.ControlPlane,
) -> None:
    proc = cs.helm_template(control_plane, "ns", check=False)
    assert proc.returncode != 0
    assert "set database.url, database.existingSecret or postgresql.enabled=true" in proc.stderr


# --- installed: the CRD, the bundled password, and RBAC ----------------------------


@pytest.fixture
def other_namespace(control_plane: controlplane.ControlPlane) -> Iterator[str]:
    """A second namespace, where users create CitationRuns (not the release's)."""
    name = f"runs-{uuid.uuid4().hex[:8]}"
    control_plane.create_namespace(name)
    yield name
    control_plane.delete_namespace(name)


def _kubectl_as(
    plane: controlplane.ControlPlane, kubeconfig: pathlib.Path, *args: str, input: str = ""
) -> str:
    proc = subprocess.run(
        [str(plane.bin_dir / "kubectl"), "--kubeconfig", str(kubeconfig), *args],
        input=input, capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _forbidden(call: Any) -> None:
    with pytest.raises(k8s.ApiException) as err:
        call()
    assert err.value.status == 403, err.value.body


def test_operator_rbac_is_sufficient_and_least_privilege(
    control_plane: controlplane.ControlPlane, namespace: str, other_namespace: str,
    api_client: k8s.ApiClient, tmp_path: pathlib.Path,
) -> None:
    release = "crun"
    kubeconfig = cs.operator_kubeconfig(
        control_plane, namespace, release, values={"rbac.readSecrets": False},
        path=tmp_path / "operator.kubeconfig",
    )
    assert kubeconfig.is_file()
    control_plane.kubectl(
        "wait", "--for=condition=Established", "--timeout=30s", f"crd/{cs.CRD_NAME}"
    )
    worker = cs.worker_deployment(control_plane, namespace, release)
    token = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"]

    # Objects the operator acts on, made by the admin (a user, the Deployment controller).
    admin_objects = k8s.CustomObjectsApi(api_client)
    cs.eventually(lambda: admin_objects.create_namespaced_custom_object(
        cs.GROUP, cs.VERSION, other_namespace, cs.PLURAL,
        cs.citation_run("thesis-1", cs.example_spec()),
    ))
    admin_core = k8s.CoreV1Api(api_client)
    admin_core.create_namespaced_secret(
        other_namespace, k8s.V1Secret(metadata=k8s.V1ObjectMeta(name="pdf"), data={})
    )
    admin_core.create_namespaced_config_map(
        other_namespace, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="pdf"), data={})
    )
    admin_core.create_namespaced_pod(namespace, k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=f"{worker}-abc12", labels={"app": "x"}),
        spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="w", image="example.invalid/w:1")]),
    ))

    with control_plane.client(token) as as_operator:
        objects = k8s.CustomObjectsApi(as_operator)
        apps = k8s.AppsV1Api(as_operator)
        core = k8s.CoreV1Api(as_operator)
        leases = k8s.CoordinationV1Api(as_operator)
        extensions = k8s.ApiextensionsV1Api(as_operator)

        # CAN: everything the operator and kopf do.
        runs = cs.eventually(
            lambda: objects.list_cluster_custom_object(cs.GROUP, cs.VERSION, cs.PLURAL)
        )
        assert "thesis-1" in [r["metadata"]["name"] for r in runs["items"]]
        objects.patch_namespaced_custom_object(
            cs.GROUP, cs.VERSION, other_namespace, cs.PLURAL, "thesis-1",
            {"metadata": {"finalizers": ["citerun.dev/run"]}},
        )
        objects.patch_namespaced_custom_object_status(
            cs.GROUP, cs.VERSION, other_namespace, cs.PLURAL, "thesis-1",
            {"status": {"phase": status.PENDING}},
        )
        extensions.list_custom_resource_definition()
        core.list_namespace()
        core.create_namespaced_event(other_namespace, k8s.CoreV1Event(
            metadata=k8s.V1ObjectMeta(generate_name="thesis-1-"),
            involved_object=k8s.V1ObjectReference(
                api_version=f"{cs.GROUP}/{cs.VERSION}", kind=cs.KIND,
                name="thesis-1", namespace=other_namespace,
            ),
            reason="Admitted", message="admitted", type="Normal",
        ))
        # events.k8s.io through kubectl with the operator's kubeconfig (the Python
        # client rewrites eventTime into a format the server refuses).
        _kubectl_as(control_plane, kubeconfig, "create", "-f", "-", input=json.dumps({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"generateName": "thesis-1-", "namespace": other_namespace},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingController": "citerun.dev/operator",
            "reportingInstance": "test",
            "action": "Admit",
            "reason": "Admitted",
            "type": "Normal",
            "regarding": {"apiVersion": f"{cs.GROUP}/{cs.VERSION}", "kind": cs.KIND,
                          "name": "thesis-1", "namespace": other_namespace},
        }))
        core.read_namespaced_config_map("pdf", other_namespace)
        apps.read_namespaced_deployment(worker, namespace)
        apps.list_namespaced_deployment(namespace, field_selector=f"metadata.name={worker}")
        apps.patch_namespaced_deployment_scale(worker, namespace, {"spec": {"replicas": 3}})
        assert apps.read_namespaced_deployment_scale(worker, namespace).spec.replicas == 3
        core.list_namespaced_pod(namespace)
        core.patch_namespaced_pod(f"{worker}-abc12", namespace, {"metadata": {"annotations": {
            "controller.kubernetes.io/pod-deletion-cost": "-100"}}})
        lease = leases.create_namespaced_lease(namespace, k8s.V1Lease(
            metadata=k8s.V1ObjectMeta(name="citerun-operator"),
            spec=k8s.V1LeaseSpec(holder_identity="test", lease_duration_seconds=15),
        ))
        lease = leases.read_namespaced_lease("citerun-operator", namespace)
        lease.spec.holder_identity = "test-2"
        leases.replace_namespaced_lease("citerun-operator", namespace, lease)

        # The access policy's binding, by name: the operator reads no Secret/ConfigMap
        # for a run unless it is installed.
        admission = k8s.AdmissionregistrationV1Api(as_operator)
        admission.read_validating_admission_policy_binding(
            f"{namespace}-{release}-citerun-run-access")

        # CANNOT: anything beyond that.
        _forbidden(lambda: admission.list_validating_admission_policy_binding())
        _forbidden(lambda: apps.delete_namespaced_deployment(worker, namespace))
        _forbidden(lambda: apps.list_namespaced_deployment(namespace))  # no name selector
        _forbidden(lambda: apps.patch_namespaced_deployment(
            worker, namespace, {"spec": {"template": {"spec": {"containers": []}}}}))
        _forbidden(lambda: core.list_namespaced_secret("kube-system"))
        _forbidden(lambda: core.read_namespaced_secret("pdf", other_namespace))
        _forbidden(lambda: core.list_namespaced_config_map(other_namespace))
        _forbidden(lambda: core.delete_namespaced_pod(f"{worker}-abc12", namespace))
        _forbidden(lambda: leases.create_namespaced_lease(other_namespace, k8s.V1Lease(
            metadata=k8s.V1ObjectMeta(name="elsewhere"))))
        _forbidden(lambda: objects.delete_namespaced_custom_object(
            cs.GROUP, cs.VERSION, other_namespace, cs.PLURAL, "thesis-1"))
        _forbidden(lambda: objects.create_namespaced_custom_object(
            cs.GROUP, cs.VERSION, other_namespace, cs.PLURAL,
            cs.citation_run("made-by-operator", cs.example_spec())))
        _forbidden(lambda: extensions.delete_custom_resource_definition(cs.CRD_NAME))
        _forbidden(lambda: k8s.RbacAuthorizationV1Api(as_operator).list_cluster_role())


def test_operator_reads_secrets_by_name_only_by_default(
    control_plane: controlplane.ControlPlane, namespace: str, other_namespace: str,
    api_client: k8s.ApiClient,
) -> None:
    cs.ensure_crd(control_plane)
    notes = cs.install_chart(control_plane, namespace, "citerun")
    for step in ("citerun upload", "kubectl apply -n <namespace> -f",
                 "kubectl get crun -n <namespace> -w", "citerun report <name>"):
        assert step in notes, notes
    k8s.CoreV1Api(api_client).create_namespaced_secret(
        other_namespace, k8s.V1Secret(metadata=k8s.V1ObjectMeta(name="pdf"), data={})
    )
    token = cs.operator_token(control_plane, namespace, "citerun")
    with control_plane.client(token) as as_operator:
        core = k8s.CoreV1Api(as_operator)
        cs.eventually(lambda: core.read_namespaced_secret("pdf", other_namespace))
        _forbidden(lambda: core.list_namespaced_secret(other_namespace))
        _forbidden(lambda: core.list_namespaced_secret("kube-system"))


def test_bundled_postgres_password_survives_upgrade(
    control_plane: controlplane.ControlPlane, namespace: str, api_client: k8s.ApiClient,
) -> None:
    cs.ensure_crd(control_plane)
    values: dict[str, object] = {"postgresql.enabled": True}
    cs.install_chart(control_plane, namespace, "pg", values=values)
    core = k8s.CoreV1Api(api_client)
    apps = k8s.AppsV1Api(api_client)

    def state() -> tuple[dict[str, str], str]:
        secrets = {
            s.metadata.name: s.data
            for s in core.list_namespaced_secret(namespace).items
            if s.metadata.name.startswith("pg-")
        }
        worker = apps.read_namespaced_deployment("pg-citerun-worker", namespace)
        checksum = worker.spec.template.metadata.annotations["checksum/config"]
        return {n: d.get("url") or d["password"] for n, d in secrets.items()}, checksum

    before = state()
    assert set(before[0]) == {"pg-citerun-database", "pg-citerun-postgresql"}
    cs.install_chart(control_plane, namespace, "pg", values=values, upgrade=True)
    assert state() == before  # same password, same URL, and no needless rollout
    sts = apps.read_namespaced_stateful_set("pg-citerun-postgresql", namespace)
    assert sts.spec.volume_claim_templates[0].metadata.name == "data"


@pytest.mark.parametrize("values_file", SCENARIOS, ids=SCENARIO_IDS)
def test_rendered_env_is_accepted_by_the_settings_classes(
    control_plane: controlplane.ControlPlane, values_file: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The env each container gets parses into the settings it is meant for: a renamed
    or retyped setting fails here, not in a crash-looping pod."""
    from citerun.core import settings as core_settings
    from citerun.operator import settings as operator_settings
    from citerun.pipeline import settings as pipeline_settings

    objects = cs.manifests(
        cs.helm_template(control_plane, "ns", values_files=[values_file]).stdout
    )

    def load_env(suffix: str) -> None:
        for name in [n for n in os.environ if n.startswith("CITERUN_")]:
            monkeypatch.delenv(name)
        for name, value in _env(objects, suffix).items():
            # valueFrom (Secret, downward API) becomes a placeholder string.
            monkeypatch.setenv(name, value if isinstance(value, str) else f"from-{name}")

    # Each raises pydantic.ValidationError on an unknown or invalid setting.
    load_env("-operator")
    core_settings.Settings()
    autoscaler = operator_settings.OperatorSettings().autoscaler
    load_env("-worker")
    core_settings.Settings()
    pipeline = pipeline_settings.PipelineSettings()

    values = yaml.safe_load(values_file.read_text())
    assert autoscaler.enabled == values.get("autoscaling", {}).get("enabled", True)
    judge = values.get("pipeline", {}).get("judge", {})
    assert pipeline.judge.kind == judge.get("kind", "embedded")
    if judge.get("kind") == "openai":
        assert pipeline.judge.openai.model == judge["openai"]["model"]
        assert pipeline.judge.openai.api_key_env == "CITERUN_JUDGE_API_KEY"


def test_a_judge_profiles_own_port_is_open_to_public_addresses_or_its_cidrs_only(
    control_plane: controlplane.ControlPlane, tmp_path: pathlib.Path,
) -> None:
    """Issue 27 (Low): a profile's port rule had no `to:`, so the workers could reach any
    address on that port (the cloud metadata service, the cluster's own services)."""
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({
        "database": {"url": cs.PLACEHOLDER_DATABASE_URL},
        "judgeProfiles": {
            "hosted": {"baseUrl": "https://judge.example.org:8443/v1", "model": "m"},
            "inhouse": {"baseUrl": "http://vllm.judges:8000/v1", "model": "m",
                        "egressCIDRs": ["10.96.0.0/12", "10.244.3.7/32"]}}}))
    objects = cs.manifests(cs.helm_template(control_plane, "ns", values_files=[values]).stdout)
    worker_np = next(o for o in objects if o["kind"] == "NetworkPolicy"
                     and o["metadata"]["name"].endswith("-worker"))
    by_port = {rule["ports"][0]["port"]: rule for rule in worker_np["spec"]["egress"]}
    hosted = by_port[8443]["to"]
    assert [peer["ipBlock"]["cidr"] for peer in hosted] == ["0.0.0.0/0"]
    assert {"169.254.0.0/16", "10.0.0.0/8"} <= set(hosted[0]["ipBlock"]["except"])
    assert [peer["ipBlock"]["cidr"] for peer in by_port[8000]["to"]] == [
        "10.96.0.0/12", "10.244.3.7/32"]
    # A bad CIDR is refused by the chart's schema before anything is installed.
    values.write_text(yaml.safe_dump({
        "database": {"url": cs.PLACEHOLDER_DATABASE_URL},
        "judgeProfiles": {"x": {"baseUrl": "http://a:1", "model": "m",
                                "egressCIDRs": ["everywhere"]}}}))
    refused = cs.helm_template(control_plane, "ns", values_files=[values], check=False)
    assert refused.returncode != 0 and "egressCIDRs" in refused.stderr


def test_web_service_renders_least_privilege_and_only_when_enabled(
    crd: str, control_plane: controlplane.ControlPlane, namespace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 26: ``web.enabled`` adds citerun serve with the kubernetes backend, its
    Service, its own ServiceAccount whose Role may create, get and delete CitationRuns and
    nothing else, probes on /healthz, the other pods' security context, and a
    NetworkPolicy (its port in; DNS, the API server and the database out). Off by
    default."""
    from citerun.web.settings import ServeSettings

    base = {"database.url": cs.PLACEHOLDER_DATABASE_URL}
    off = cs.manifests(cs.helm_template(control_plane, namespace, values=base).stdout)
    assert not [o for o in off if o["metadata"]["name"].endswith("-web")]
    assert not [o for o in off if "web" in json.dumps(o.get("metadata", {}).get("labels", {}))]

    values = {"web.enabled": True, "postgresql.enabled": True,
              "web.trustedProxies[0]": "10.42.7.0/24", "web.maxActiveRuns": 5}
    rendered = cs.helm_template(control_plane, namespace, values=values).stdout
    objects = cs.manifests(rendered)
    out = _dry_run(control_plane, namespace, rendered)
    assert out.count("(server dry run)") == len(objects), out

    deployment = cs.find(objects, "Deployment", "-web")
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["command"][:4] == ["citerun", "serve", "--host", "0.0.0.0"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    operator = cs.find(objects, "Deployment", "-operator")["spec"]["template"]["spec"]
    assert pod["securityContext"] == operator["securityContext"]
    assert container["securityContext"] == operator["containers"][0]["securityContext"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["enableServiceLinks"] is False
    env = _env(objects, "-web")
    assert env["CITERUN_WEB__BACKEND"] == "kubernetes"
    assert env["CITERUN_WEB__NAMESPACE"] == namespace
    assert "secretKeyRef" in env["CITERUN_DATABASE_URL"]
    # The rendered env is what the service's settings accept (a typo would crash-loop).
    for name in [n for n in os.environ if n.startswith("CITERUN_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value if isinstance(value, str) else f"from-{name}")
    web = ServeSettings().web
    assert web.backend == "kubernetes" and web.namespace == namespace
    assert [str(n) for n in web.trusted_proxies] == ["10.42.7.0/24"]
    assert web.max_active_runs == 5

    service = cs.find(objects, "Service", "-web")
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    assert service["spec"]["selector"]["app.kubernetes.io/component"] == "web"
    account = cs.find(objects, "ServiceAccount", "-web")
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    role = cs.find(objects, "Role", "-web")
    assert role["metadata"]["namespace"] == namespace
    assert role["rules"] == [{"apiGroups": ["citerun.dev"], "resources": ["citationruns"],
                              "verbs": ["create", "get", "delete"]}]
    binding = cs.find(objects, "RoleBinding", "-web")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                    "namespace": namespace}]
    assert not [o for o in objects if o["kind"] in ("ClusterRole", "ClusterRoleBinding")
                and o["metadata"]["name"].endswith("-web")]

    policy = cs.find(objects, "NetworkPolicy", "-web")["spec"]
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    assert [p["port"] for rule in policy["ingress"] for p in rule["ports"]] == [8080]
    egress_ports = sorted({p["port"] for rule in policy["egress"] for p in rule["ports"]})
    assert egress_ports == [53, 443, 5432, 6443]
    database_rule = next(r for r in policy["egress"] if r["ports"][0]["port"] == 5432)
    assert database_rule["to"][0]["podSelector"]["matchLabels"][
        "app.kubernetes.io/component"] == "postgresql"
    postgres = cs.find(objects, "NetworkPolicy", "-postgresql")["spec"]
    assert "web" in [peer["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
                     for peer in postgres["ingress"][0]["from"]]

    # Per-user namespaces: the same three verbs, cluster-wide (no Role then).
    per_user = cs.manifests(cs.helm_template(control_plane, namespace, values={
        **base, "web.enabled": True, "web.namespaceTemplate": "thesis-{user}"}).stdout)
    cluster_role = cs.find(per_user, "ClusterRole", "-web")
    assert cluster_role["rules"] == role["rules"]
    assert cs.find(per_user, "ClusterRoleBinding", "-web")["subjects"][0]["name"] == \
        account["metadata"]["name"]
    assert _env(per_user, "-web")["CITERUN_WEB__NAMESPACE_TEMPLATE"] == "thesis-{user}"
    assert not [o for o in per_user if o["kind"] == "Role" and o["metadata"]["name"].endswith("-web")]
    # The whole internet as a trusted proxy is refused by the schema: anyone could name
    # themselves.
    refused = cs.helm_template(control_plane, namespace, values={
        **base, "web.enabled": True, "web.trustedProxies[0]": "0.0.0.0/0"}, check=False)
    assert refused.returncode != 0 and "trustedProxies" in refused.stderr
