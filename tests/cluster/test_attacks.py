"""Issue 12's Kubernetes attacks, replayed as an attacker would: a user who may only
create CitationRuns in one namespace, against the real apiserver, the chart installed
with its RBAC and access policy, the operator running as the chart's ServiceAccount with
the chart's environment, and real workers.

1. a run cannot send the judge (and the chart's key) to its own server;
2. a run cannot make the operator read a Secret its creator may not read, and non-PDF
   bytes are refused before they are hashed or stored;
3. a run cannot use another namespace's document by digest;
5. a self-declared tenant or priority has no effect;
8. the operator's JSON logs parse line by line.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import http.server
import json
import pathlib
import re
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest
from kubernetes import client as k8s

import chart_support
import operator_support as ops

pytestmark = pytest.mark.cluster

PIPELINE = "citerun.worker.tasks:registry"
PROFILE_KEY = "sk-profile-key"
RUN_KEY = "sk-run-own-key"
ANSWER = {"verdict": "supported", "confidence": 0.9, "evidence": [], "rationale": "ok"}


class _Recorder(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint that records who called it."""

    hits: list[dict[str, str]]

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.hits.append({"path": self.path, "auth": self.headers.get("Authorization", "")})
        body = json.dumps({"id": "x", "object": "chat.completion", "model": "m",
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": json.dumps(ANSWER)}}],
                           "usage": {"prompt_tokens": 5, "completion_tokens": 5,
                                     "total_tokens": 10}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST  # noqa: N815 - an internal endpoint answers anything

    def log_message(self, *args: object) -> None:
        pass


def _serve(host: str) -> tuple[http.server.ThreadingHTTPServer, list[dict[str, str]]]:
    hits: list[dict[str, str]] = []
    handler = type("Handler", (_Recorder,), {"hits": hits})
    httpd = http.server.ThreadingHTTPServer((host, 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, hits


def _env_of(api: k8s.ApiClient, namespace: str, deployment: str) -> dict[str, str]:
    """The literal env values the chart gives a Deployment's container."""
    dep = k8s.AppsV1Api(api).read_namespaced_deployment(deployment, namespace)
    return {e.name: e.value for e in dep.spec.template.spec.containers[0].env or []
            if e.value is not None}


class Setup:
    def __init__(self, plane: Any, namespace: str, other: str, api: k8s.ApiClient,
                 database_url: str, tmp_path: pathlib.Path, spawn_worker: Any) -> None:
        self.plane, self.namespace, self.other, self.api = plane, namespace, other, api
        self.database_url, self.tmp_path, self.spawn_worker = database_url, tmp_path, spawn_worker
        self.judge, self.judge_hits = _serve("127.0.0.1")
        self.hostile, self.hostile_hits = _serve("127.0.0.1")
        core = k8s.CoreV1Api(api)
        core.create_namespaced_secret(namespace, k8s.V1Secret(
            metadata=k8s.V1ObjectMeta(name="judge-key"), string_data={"api-key": PROFILE_KEY}))
        release = "atk"
        self.kubeconfig = chart_support.operator_kubeconfig(
            plane, namespace, release, path=tmp_path / "operator.kubeconfig", values={
                "database.url": database_url,
                "judgeProfiles.default.baseUrl": f"http://127.0.0.1:{self.judge.server_address[1]}",
                "judgeProfiles.default.model": "judge-model",
                "judgeProfiles.default.apiKeySecret.name": "judge-key",
                "judgeProfiles.default.apiKeySecret.key": "api-key",
                "judgeProfiles.default.namespaces[0]": "*",  # issue 41: unset is none
                # A second profile on the same endpoint with another model: the judge
                # caches answers per (claim, passages, model), so a second run of the same
                # documents must use another model to be judged again.
                "judgeProfiles.other.baseUrl": f"http://127.0.0.1:{self.judge.server_address[1]}",
                "judgeProfiles.other.model": "judge-model-2",
                "judgeProfiles.other.apiKeySecret.name": "judge-key",
                "judgeProfiles.other.apiKeySecret.key": "api-key",
                "judgeProfiles.other.namespaces[0]": "*",
                f"tenancy.priorities.{namespace}": 50,
                "autoscaling.enabled": False})
        operator_env = _env_of(api, namespace, f"{release}-citerun-operator")
        worker_env = _env_of(api, namespace, f"{release}-citerun-worker")
        self.worker_env = {k: v for k, v in worker_env.items()
                           if k.startswith(("CITERUN_JUDGE", "CITERUN_DOCUMENTS", "CITERUN_LOG"))}
        # What the kubelet would fill in from the profiles' Secret.
        self.worker_env["CITERUN_JUDGE_PROFILE_KEY_DEFAULT"] = PROFILE_KEY
        self.worker_env["CITERUN_JUDGE_PROFILE_KEY_OTHER"] = PROFILE_KEY
        env = {k: v for k, v in operator_env.items()
               if k.startswith(("CITERUN_OPERATOR__", "CITERUN_JUDGE", "CITERUN_LOG"))
               and k != "CITERUN_OPERATOR__NAMESPACE"}
        env["CITERUN_AUTOSCALER__ENABLED"] = "false"
        self.operator_env = env
        self.release = release
        self.op = ops.OperatorProcess(self.kubeconfig, database_url, namespace, tmp_path, "op",
                                      env=env, clusterwide=True)
        ops.wait_access_policy(self.op)
        self.workers: list[Any] = []
        # alice may create and read CitationRuns in her namespace, nothing else.
        self.alice_token = plane.service_account_token(namespace, "alice")
        rbac = k8s.RbacAuthorizationV1Api(api)
        rbac.create_namespaced_role(namespace, k8s.V1Role(
            metadata=k8s.V1ObjectMeta(name="run-author"), rules=[k8s.V1PolicyRule(
                api_groups=["citerun.dev"], resources=["citationruns"],
                verbs=["create", "get", "list", "watch", "update", "patch", "delete"])]))
        rbac.create_namespaced_role_binding(namespace, k8s.V1RoleBinding(
            metadata=k8s.V1ObjectMeta(name="alice-run-author"),
            role_ref=k8s.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role",
                                   name="run-author"),
            subjects=[k8s.RbacV1Subject(kind="ServiceAccount", name="alice",
                                        namespace=namespace)]))

    def restart_operator(self, name: str) -> None:
        """Stop the operator and start another with the same settings (log ``name``)."""
        self.op.stop()
        self.op = ops.OperatorProcess(self.kubeconfig, self.database_url, self.namespace,
                                      self.tmp_path, name, env=self.operator_env,
                                      clusterwide=True)

    def start_workers(self, n: int = 2) -> None:
        self.workers += [self.spawn_worker(f"w{i}", env=self.worker_env, tasks=PIPELINE)
                         for i in range(n)]

    def logs(self) -> str:
        return "\n".join([self.op.log()[-4000:], *(w.log()[-2000:] for w in self.workers)])

    def close(self) -> None:
        self.op.stop()
        # The release's access policy is cluster-scoped: it would outlive the namespace
        # and check every later test's runs.
        admission = k8s.AdmissionregistrationV1Api(self.api)
        name = f"{self.namespace}-{self.release}-citerun-run-access"
        for delete in (admission.delete_validating_admission_policy_binding,
                       admission.delete_validating_admission_policy):
            try:
                delete(name)
            except k8s.ApiException as err:
                if err.status != 404:
                    raise
        for httpd in (self.judge, self.hostile):
            httpd.shutdown()
            httpd.server_close()


@pytest.fixture
def setup(control_plane: Any, namespace: str, api_client: k8s.ApiClient, database_url: str,
          tmp_path: pathlib.Path, spawn_worker: Any) -> Iterator[Setup]:
    other = f"other-{uuid.uuid4().hex[:8]}"
    control_plane.create_namespace(other)
    s = Setup(control_plane, namespace, other, api_client, database_url, tmp_path, spawn_worker)
    try:
        yield s
    finally:
        s.close()
        for ns in (namespace, other):
            ops.drop_finalizers(api_client, ns)
        control_plane.delete_namespace(other)


def _pdf_bytes() -> bytes:
    return (ops.EXAMPLES / "thesis.pdf").read_bytes()


def _status(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    return ((ops.get(api, namespace, name) or {}).get("status")) or {}


async def test_a_run_cannot_redirect_the_judge_or_take_the_charts_key(
        setup: Setup, pool: asyncpg.Pool) -> None:
    """Attack 1: the run names a hostile base URL (with the ?x= trick) and a model; the
    workers call only the chart's profile, with the run's own key once its creator may
    read that Secret."""
    ns = setup.namespace
    core = k8s.CoreV1Api(setup.api)
    core.create_namespaced_secret(ns, k8s.V1Secret(
        metadata=k8s.V1ObjectMeta(name="my-key"), string_data={"key": RUN_KEY}))
    digests = await ops.stage_demo(setup.database_url, tenant=ns)
    hostile = f"http://127.0.0.1:{setup.hostile.server_address[1]}/steal?x="
    body = ops.demo_body("judged", digests, judge={"kind": "openai", "openai": {
        "baseUrl": hostile, "model": "attacker-model",
        "apiKeySecretRef": {"name": "my-key", "key": "key"}}})
    ops.create(setup.api, ns, body)  # the admin may read my-key
    setup.start_workers()
    done = await ops.wait_succeeded(setup.api, ns, "judged", 180, setup.logs)
    assert setup.hostile_hits == []
    assert setup.judge_hits, "the profile's endpoint was never called"
    assert {h["path"] for h in setup.judge_hits} == {"/v1/chat/completions"}
    assert {h["auth"] for h in setup.judge_hits} == {f"Bearer {RUN_KEY}"}
    assert done["status"]["counts"]["judged"] == done["status"]["counts"]["citations"]
    # The run's key lives only as long as the run.
    assert await pool.fetchval("SELECT count(*) FROM run_secrets") == 0

    # Without a key of its own, the run uses the profile's key -- still never elsewhere.
    setup.judge_hits.clear()
    plain = ops.demo_body("judged-plain", digests, judge={
        "kind": "openai", "openai": {"profile": "other", "baseUrl": hostile}})
    ops.create(setup.api, ns, plain)
    await ops.wait_succeeded(setup.api, ns, "judged-plain", 180, setup.logs)
    assert setup.hostile_hits == []
    assert {h["auth"] for h in setup.judge_hits} == {f"Bearer {PROFILE_KEY}"}


async def test_the_operators_json_logs_parse_line_by_line(
        setup: Setup, pool: asyncpg.Pool) -> None:
    """Attack 8, with the chart's log format and the real operator's handlers."""
    assert setup.operator_env.get("CITERUN_LOG_FORMAT") == "json"
    digests = await ops.stage_demo(setup.database_url, tenant=setup.namespace)
    for i in range(3):
        ops.create(setup.api, setup.namespace, ops.demo_body(f"logged-{i}", digests))
    await ops.wait_for(lambda: all(ops.condition(ops.get(setup.api, setup.namespace,
                                                         f"logged-{i}"), "Admitted")
                                   for i in range(3)), 60, "three admitted runs", setup.logs)
    setup.op.stop()
    lines = [line for line in setup.op.log().splitlines() if line.strip()]
    assert len(lines) > 5
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise AssertionError(f"not a JSON line: {line!r}\n{setup.op.log()[-3000:]}") from None
        assert "message" in record and "level" in record
    assert not any("Logging error" in line for line in lines)


def _user_api(setup: Setup) -> Any:
    return setup.plane.client(token=setup.alice_token)


async def test_a_user_cannot_make_the_operator_read_a_secret_she_may_not_read(
        setup: Setup, pool: asyncpg.Pool) -> None:
    """Attack 2: alice may create CitationRuns but not get Secrets. Her run naming a
    Secret is refused by the apiserver, in the same words whether the Secret exists or
    not, and the operator never reads it; once she may get it, her run goes ahead."""
    ns = setup.namespace
    core = k8s.CoreV1Api(setup.api)
    pdf = _pdf_bytes()
    core.create_namespaced_secret(ns, k8s.V1Secret(
        metadata=k8s.V1ObjectMeta(name="thesis-secret"),
        data={"thesis.pdf": base64.b64encode(pdf).decode()}))
    digests = await ops.stage_demo(setup.database_url, tenant=ns)
    messages = []
    with _user_api(setup) as alice:
        for secret in ("thesis-secret", "no-such-secret"):
            body = ops.demo_body(f"steal-{secret}", digests)
            body["spec"]["thesis"] = {"name": "thesis.pdf",
                                      "secretKeyRef": {"name": secret, "key": "thesis.pdf"}}
            with pytest.raises(k8s.ApiException) as err:
                ops.create(alice, ns, body)
            assert err.value.status in (403, 422), err.value.body
            messages.append(json.loads(err.value.body)["message"].replace(secret, "S"))
        assert messages[0] == messages[1]
        assert "may not get" in messages[0]
        # The same for the judge's key.
        keyed = ops.demo_body("steal-key", digests, judge={"kind": "openai", "openai": {
            "apiKeySecretRef": {"name": "judge-key", "key": "api-key"}}})
        with pytest.raises(k8s.ApiException):
            ops.create(alice, ns, keyed)
    assert await pool.fetchval("SELECT count(*) FROM runs") == 0
    assert await pool.fetchval("SELECT count(*) FROM documents WHERE digest = $1",
                               hashlib.sha256(pdf).hexdigest()) == 1  # the upload only
    assert "thesis-secret" not in setup.op.log()

    # Granted get on that one Secret, alice's run is admitted and the bytes are staged.
    rbac = k8s.RbacAuthorizationV1Api(setup.api)
    rbac.create_namespaced_role(ns, k8s.V1Role(
        metadata=k8s.V1ObjectMeta(name="thesis-reader"), rules=[k8s.V1PolicyRule(
            api_groups=[""], resources=["secrets"], resource_names=["thesis-secret"],
            verbs=["get"])]))
    rbac.create_namespaced_role_binding(ns, k8s.V1RoleBinding(
        metadata=k8s.V1ObjectMeta(name="alice-thesis-reader"),
        role_ref=k8s.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role",
                               name="thesis-reader"),
        subjects=[k8s.RbacV1Subject(kind="ServiceAccount", name="alice", namespace=ns)]))
    body = ops.demo_body("allowed", digests)
    body["spec"]["thesis"] = {"name": "thesis.pdf",
                              "secretKeyRef": {"name": "thesis-secret", "key": "thesis.pdf"}}
    with _user_api(setup) as alice:
        chart_support.eventually(lambda: ops.create(alice, ns, body))
    await ops.wait_for(lambda: ops.condition(ops.get(setup.api, ns, "allowed"), "Admitted"),
                       60, "alice's permitted run admitted", setup.logs)


def _policy_objects(setup: Setup) -> str:
    """The name of the access policy (and of its binding) of the test's release."""
    return f"{setup.namespace}-{setup.release}-citerun-run-access"


def _only_this_releases_policy(setup: Setup) -> None:
    """Delete the access policies other tests left (cluster-scoped, they outlive their
    namespaces and each binds every namespace), so only this release's policy checks."""
    admission = k8s.AdmissionregistrationV1Api(setup.api)
    ours = _policy_objects(setup)
    selector = "app.kubernetes.io/component=access-policy"
    for binding in admission.list_validating_admission_policy_binding(
            label_selector=selector).items:
        if binding.metadata.name != ours:
            admission.delete_validating_admission_policy_binding(binding.metadata.name)
    for policy in admission.list_validating_admission_policy(label_selector=selector).items:
        if policy.metadata.name != ours:
            admission.delete_validating_admission_policy(policy.metadata.name)


def _steal_body(digests: dict[str, str], name: str) -> dict[str, Any]:
    body = ops.demo_body(name, digests)
    body["spec"]["thesis"] = {"name": "thesis.pdf",
                              "secretKeyRef": {"name": "thesis-secret", "key": "thesis.pdf"}}
    return body


def _secret_thesis(setup: Setup) -> bytes:
    """A Secret alice may not get, holding a PDF no other document has (so whether the
    operator read it shows in the documents table)."""
    _only_this_releases_policy(setup)
    pdf = _pdf_bytes() + b"\n% secret copy\n"
    k8s.CoreV1Api(setup.api).create_namespaced_secret(setup.namespace, k8s.V1Secret(
        metadata=k8s.V1ObjectMeta(name="thesis-secret"),
        data={"thesis.pdf": base64.b64encode(pdf).decode()}))
    return pdf


async def _failed_unchecked(setup: Setup, name: str, words: str) -> dict[str, Any]:
    failed = await ops.wait_for(
        lambda: (c := ops.condition(ops.get(setup.api, setup.namespace, name), "Failed"))
        and c["status"] == "True" and c, 60, f"{name} failed as never checked", setup.logs)
    assert failed["reason"] == "AccessUnchecked", failed
    assert words in failed["message"], failed["message"]
    return failed


async def _secret_never_read(setup: Setup, pool: asyncpg.Pool, pdf: bytes) -> None:
    assert await pool.fetchval("SELECT count(*) FROM documents WHERE digest = $1",
                               hashlib.sha256(pdf).hexdigest()) == 0
    assert await pool.fetchval("SELECT count(*) FROM runs") == 0


async def test_a_run_admitted_while_the_binding_is_absent_fails_and_stays_failed(
        setup: Setup, pool: asyncpg.Pool) -> None:
    """Issue 27, access-check race: with the binding absent (an upgrade that enables the
    policy), alice's run naming a Secret she may not get is admitted by the API server.
    Before, it waited as DocumentUnreadable and was admitted, the Secret read, once the
    binding appeared; now it fails at once and stays failed when the binding comes back."""
    pdf = _secret_thesis(setup)
    digests = await ops.stage_demo(setup.database_url, tenant=setup.namespace)
    name = _policy_objects(setup)
    admission = k8s.AdmissionregistrationV1Api(setup.api)
    admission.delete_validating_admission_policy_binding(name)
    with _user_api(setup) as alice:
        # The API server stops enforcing a while after the binding is deleted.
        chart_support.eventually(lambda: ops.create(alice, setup.namespace,
                                                    _steal_body(digests, "early")), timeout=90)
    await _failed_unchecked(setup, "early", "is not in force")
    seen = ops.access_policy_epochs(setup.op)
    chart_support.apply_access_policy(setup.plane, setup.namespace, setup.release)
    # A new binding: a new configuration, a new epoch.
    ops.wait_access_policy(setup.op, seen=seen)
    # The operator looks at the run again (a resync, a touch of its metadata): still failed.
    k8s.CustomObjectsApi(setup.api).patch_namespaced_custom_object(
        ops.GROUP, ops.VERSION, setup.namespace, ops.PLURAL, "early",
        {"metadata": {"labels": {"touched": "yes"}}})
    await asyncio.sleep(5)
    await _failed_unchecked(setup, "early", "is not in force")
    await _secret_never_read(setup, pool, pdf)
    assert "thesis-secret" not in setup.op.log()


async def test_a_binding_kept_while_its_policy_is_deleted_is_not_trusted(
        setup: Setup, pool: asyncpg.Pool) -> None:
    """Issue 27: a run admitted unchecked (binding absent), then the policy deleted and
    the binding back: the binding exists and denies, but enforces nothing. Before, the
    operator trusted the binding alone and read the Secret at once."""
    pdf = _secret_thesis(setup)
    digests = await ops.stage_demo(setup.database_url, tenant=setup.namespace)
    name = _policy_objects(setup)
    setup.op.stop()
    admission = k8s.AdmissionregistrationV1Api(setup.api)
    admission.delete_validating_admission_policy_binding(name)
    with _user_api(setup) as alice:
        chart_support.eventually(lambda: ops.create(alice, setup.namespace,
                                                    _steal_body(digests, "no-policy")), timeout=90)
    admission.delete_validating_admission_policy(name)
    chart_support.apply_access_policy(setup.plane, setup.namespace, setup.release,
                                      only="ValidatingAdmissionPolicyBinding")
    assert "Deny" in admission.read_validating_admission_policy_binding(
        name).spec.validation_actions
    setup.restart_operator("op-binding-only")
    await _failed_unchecked(setup, "no-policy", "is not in force")
    await _secret_never_read(setup, pool, pdf)


async def test_a_run_created_before_the_policy_came_into_force_is_failed(
        setup: Setup, pool: asyncpg.Pool) -> None:
    """Issue 27: the policy and binding deleted, alice creates a run (unchecked), then
    both come back and are enforced before the operator sees the run (it was down). The
    objects exist and deny when the operator looks, but the run is older than the
    configuration's first refused probe: it fails as never checked (before: the Secret
    was read and became alice's thesis)."""
    pdf = _secret_thesis(setup)
    digests = await ops.stage_demo(setup.database_url, tenant=setup.namespace)
    name = _policy_objects(setup)
    setup.op.stop()
    admission = k8s.AdmissionregistrationV1Api(setup.api)
    admission.delete_validating_admission_policy_binding(name)
    admission.delete_validating_admission_policy(name)
    with _user_api(setup) as alice:
        chart_support.eventually(lambda: ops.create(alice, setup.namespace,
                                                    _steal_body(digests, "before")), timeout=90)
        chart_support.apply_access_policy(setup.plane, setup.namespace, setup.release)
        # Enforced again: alice's next try is refused by the API server.
        tries: list[str] = []

        def refuses() -> None:
            tries.append(f"again-{len(tries)}")
            try:
                ops.create(alice, setup.namespace, _steal_body(digests, tries[-1]))
            except k8s.ApiException as err:
                assert err.status in (403, 422) and "may not get" in err.body, err.body
                return
            raise AssertionError("admitted unchecked")
        chart_support.eventually(refuses, timeout=60)
    setup.restart_operator("op-after")
    await _failed_unchecked(setup, "before", "created before the access policy")
    await _secret_never_read(setup, pool, pdf)


async def test_non_pdf_secret_bytes_are_refused_before_hashing_or_storing(
        setup: Setup, pool: asyncpg.Pool) -> None:
    ns = setup.namespace
    password = b"hunter2-correct-horse"
    k8s.CoreV1Api(setup.api).create_namespaced_secret(ns, k8s.V1Secret(
        metadata=k8s.V1ObjectMeta(name="db-password"),
        data={"password": base64.b64encode(password).decode()}))
    digests = await ops.stage_demo(setup.database_url, tenant=ns)
    held: dict[str, str] = {}
    for name, ref in (("password", {"name": "db-password", "key": "password"}),
                      ("missing-key", {"name": "db-password", "key": "nope"}),
                      ("missing-secret", {"name": "nope", "key": "password"})):
        body = ops.demo_body(name, digests)
        body["spec"]["thesis"] = {"name": "thesis.pdf", "secretKeyRef": ref}
        ops.create(setup.api, ns, body)
        cond = await ops.wait_for(lambda n=name: (c := ops.condition(
            ops.get(setup.api, ns, n), "Admitted")) and c["status"] == "False" and c,
            60, f"{name} held", setup.logs)
        held[name] = cond["message"]
    digest = hashlib.sha256(password).hexdigest()
    assert "not a PDF" in held["password"] and digest not in held["password"]
    assert await pool.fetchval("SELECT count(*) FROM documents WHERE digest = $1", digest) == 0
    assert await pool.fetchval("SELECT count(*) FROM runs") == 0
    # A missing key and a missing Secret read the same: existence is not revealed.
    def names_out(text: str) -> str:
        return re.sub(r"'[^']*'", "X", text)

    assert names_out(held["missing-key"]) == names_out(held["missing-secret"])
    events = k8s.CoreV1Api(setup.api).list_namespaced_event(ns).items
    texts = [e.message or "" for e in events if e.involved_object.name.startswith("missing")]
    assert texts and not any("404" in t or "Not Found" in t or "has no key" in t for t in texts)


async def test_another_namespaces_digest_is_refused(setup: Setup, pool: asyncpg.Pool) -> None:
    """Attack 3: the other namespace names our documents by digest; it gets exactly what
    a digest nobody stored gets, and no run."""
    digests = await ops.stage_demo(setup.database_url, tenant=setup.namespace)
    ops.create(setup.api, setup.other, ops.demo_body("thief", digests))
    ghost = {n: hashlib.sha256(n.encode()).hexdigest() for n in digests}
    ops.create(setup.api, setup.other, ops.demo_body("ghost", ghost))
    messages = {}
    for name, known in (("thief", digests), ("ghost", ghost)):
        cond = await ops.wait_for(lambda n=name: (c := ops.condition(
            ops.get(setup.api, setup.other, n), "Admitted")) and c["status"] == "False" and c,
            60, f"{name} held", setup.logs)
        assert cond["reason"] == "DocumentMissing"
        text = cond["message"]
        for digest in known.values():
            text = text.replace(digest, "D")
        messages[name] = text
    assert messages["thief"] == messages["ghost"]
    assert await pool.fetchval("SELECT count(*) FROM runs") == 0
    # Our own namespace may use them.
    ops.create(setup.api, setup.namespace, ops.demo_body("owner", digests))
    await ops.wait_for(lambda: ops.condition(ops.get(setup.api, setup.namespace, "owner"),
                                             "Admitted"), 60, "the owner's run", setup.logs)


async def test_a_forged_tenant_and_priority_have_no_effect(
        setup: Setup, pool: asyncpg.Pool) -> None:
    """Attack 5: the other namespace claims our tenant and the top priority."""
    ours = await ops.stage_demo(setup.database_url, tenant=setup.namespace)
    theirs = await ops.stage_demo(setup.database_url, tenant=setup.other)
    forged = ops.demo_body("forged", theirs)
    forged["spec"].update({"tenant": setup.namespace, "priority": 100})
    ops.create(setup.api, setup.other, forged)
    ops.create(setup.api, setup.namespace, ops.demo_body("honest", ours))
    await ops.wait_for(lambda: pool.fetchval("SELECT count(*) FROM runs"), 60, "two runs",
                       setup.logs)
    await ops.wait_for(lambda: pool.fetchval("SELECT count(*) = 2 FROM runs"), 60, "two runs",
                       setup.logs)
    rows = {r["name"]: r for r in await pool.fetch("SELECT name, tenant, priority FROM runs")}
    assert (rows["forged"]["tenant"], rows["forged"]["priority"]) == (setup.other, 0)
    # The namespace policy (tenancy.priorities) decides: higher first, so -50 in the queue.
    assert (rows["honest"]["tenant"], rows["honest"]["priority"]) == (setup.namespace, -50)
    prios = {r["tenant"]: set(r["p"]) for r in await pool.fetch(
        "SELECT r.tenant, array_agg(DISTINCT t.priority) AS p FROM tasks t "
        "JOIN runs r ON r.id = t.run_id GROUP BY r.tenant")}
    assert prios[setup.other] == {0} and prios[setup.namespace] == {-50}


def _peak_rss_mib(pid: int) -> float:
    """The process's peak resident set (VmHWM) in MiB."""
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for pid {pid}")


async def test_500_sources_naming_one_big_key_stay_within_the_operators_memory(
        setup: Setup, pool: asyncpg.Pool) -> None:
    """Issue 27 (High): 500 sources naming one ~1 MB ConfigMap key. The operator read the
    key once per source and held every decoded copy until admission: 588 MiB against the
    chart's 256 Mi limit, an OOM kill for every tenant, and again after each restart. It
    reads each key once and holds its bytes once."""
    big = b"%PDF-1.7\n" + b"".join(
        hashlib.sha256(str(i).encode()).hexdigest().encode() for i in range(11_500))  # ~740 KB
    core = k8s.CoreV1Api(setup.api)
    core.create_namespaced_config_map(setup.namespace, k8s.V1ConfigMap(
        metadata=k8s.V1ObjectMeta(name="big"),
        binary_data={"doc": base64.b64encode(big).decode(),
                     "t": base64.b64encode(_pdf_bytes()).decode()}))
    spec = {"thesis": {"name": "t.pdf", "configMapKeyRef": {"name": "big", "key": "t"}},
            "sources": [{"name": f"s{i}.pdf", "configMapKeyRef": {"name": "big", "key": "doc"}}
                        for i in range(500)]}
    # Another tenant's ordinary run, at the same time (issue 27, Done-when).
    other_digests = await ops.stage_demo(setup.database_url, tenant=setup.other)
    setup.start_workers()
    started = time.monotonic()
    ops.create(setup.api, setup.namespace, chart_support.citation_run("big", spec))
    ops.create(setup.api, setup.other, ops.demo_body("neighbour", other_digests))
    await ops.wait_for(
        lambda: (c := ops.condition(ops.get(setup.api, setup.namespace, "big"), "Admitted"))
        and c["status"] == "True", 120, "the 500-source run admitted", setup.logs)
    admitted_s = time.monotonic() - started
    ended: dict[str, float] = {}

    def both_ended() -> bool:
        for ns, name in ((setup.namespace, "big"), (setup.other, "neighbour")):
            phase = _status(setup.api, ns, name).get("phase")
            if name not in ended and phase in ("Succeeded", "Failed"):
                ended[name] = time.monotonic() - started
        assert setup.op.proc.poll() is None, setup.logs()
        return len(ended) == 2
    await ops.wait_for(both_ended, 180, "the 500-source run and the neighbour's to end",
                       setup.logs)
    rss = {"operator": _peak_rss_mib(setup.op.proc.pid),
           **{w.name: _peak_rss_mib(w.proc.pid) for w in setup.workers}}
    print({"admitted_s": round(admitted_s, 1), **{k: round(v, 1) for k, v in ended.items()},
           "peak_rss_mib": {k: round(v) for k, v in rss.items()}})
    assert rss["operator"] < 256  # the chart's memory limits
    assert all(v < 2048 for k, v in rss.items() if k != "operator"), rss
    assert ended["big"] < 60 and ended["neighbour"] < 60, ended
    # A clear result: every citation of the thesis has its verdict (none of the 500
    # copies of one unreadable document is a source any citation names).
    big = _status(setup.api, setup.namespace, "big")
    assert big["phase"] == "Succeeded", big
    assert big["counts"]["judged"] == big["counts"]["citations"] > 0, big
    assert _status(setup.api, setup.other, "neighbour")["phase"] == "Succeeded"
    retried = await pool.fetch("SELECT kind, last_error FROM tasks WHERE attempt <> 1")
    assert not retried, [dict(r) for r in retried]  # heartbeats kept throughout


async def test_the_access_policy_stays_within_its_cost_for_500_sources(setup: Setup) -> None:
    """The authorizer is asked once per object, so the largest run the CRD allows
    (500 sources from one ConfigMap) is admitted; documents from two Secrets are not."""
    big = {"thesis": {"name": "t.pdf", "configMapKeyRef": {"name": "pdfs", "key": "t"}},
           "sources": [{"name": f"s{i}.pdf", "configMapKeyRef": {"name": "pdfs", "key": f"s{i}"}}
                       for i in range(500)]}
    ops.create(setup.api, setup.namespace, chart_support.citation_run("big", big))
    two = {"thesis": {"name": "t.pdf", "secretKeyRef": {"name": "a", "key": "t"}},
           "sources": [{"name": "s.pdf", "secretKeyRef": {"name": "b", "key": "s"}}]}
    with pytest.raises(k8s.ApiException) as err:
        ops.create(setup.api, setup.namespace, chart_support.citation_run("two", two))
    assert "one Secret only" in err.value.body
