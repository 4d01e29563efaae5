"""The CitationRun CRD, validated by the real API server: the example is accepted, every
invalid spec is rejected with a message that names the problem (schema or CEL rule),
the printer columns are served, and status is written only through /status."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s

import chart_support as cs
import controlplane

pytestmark = pytest.mark.cluster

DIGEST = "ab" * 32


@pytest.fixture
def objects(api_client: k8s.ApiClient) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(api_client)


def _create(
    objects: k8s.CustomObjectsApi, namespace: str, name: str, spec: dict[str, Any]
) -> dict[str, Any]:
    return objects.create_namespaced_custom_object(  # type: ignore[no-any-return]
        cs.GROUP, cs.VERSION, namespace, cs.PLURAL, cs.citation_run(name, spec)
    )


def test_example_run_is_accepted_with_defaults(
    crd: str, control_plane: controlplane.ControlPlane, namespace: str,
    objects: k8s.CustomObjectsApi,
) -> None:
    cs.eventually(
        lambda: control_plane.kubectl(
            "apply", "--namespace", namespace, "-f", str(cs.EXAMPLE_RUN)
        )
    )
    got = objects.get_namespaced_custom_object(
        cs.GROUP, cs.VERSION, namespace, cs.PLURAL, "urban-heat-demo"
    )
    assert got["spec"]["thesis"]["name"] == "thesis.pdf"
    assert len(got["spec"]["sources"]) == 4

    # A minimal run gets the schema's defaults.
    minimal = {
        "thesis": {"name": "t.pdf", "digest": DIGEST},
        "sources": [{"name": "s.pdf", "url": "https://example.org/s.pdf", "keys": ["12"]}],
    }
    created = cs.eventually(lambda: _create(objects, namespace, "minimal", minimal))
    assert created["spec"] == {**minimal, "fetchSources": False}  # issue 51: off unless asked
    # A self-declared tenant, priority or judge URL is not part of the schema: the API
    # server prunes it, so it can never reach the operator (issue 12, attacks 1 and 5).
    forged = {**minimal, "tenant": "team-b", "priority": 100,
              "judge": {"kind": "openai", "openai": {"baseUrl": "http://127.0.0.1:9/?x=",
                                                     "model": "m"}}}
    pruned = _create(objects, namespace, "forged", forged)["spec"]
    assert "tenant" not in pruned and "priority" not in pruned
    assert pruned["judge"] == {"kind": "openai", "openai": {"profile": "default"}}
    assert "judge" not in created["spec"]  # kind defaults only inside a given judge
    with_judge = {**minimal, "judge": {}}
    assert _create(objects, namespace, "judged", with_judge)["spec"]["judge"] == {
        "kind": "embedded"
    }


def _without_thesis(spec: dict[str, Any]) -> None:
    del spec["thesis"]


def _two_document_sources(spec: dict[str, Any]) -> None:
    spec["thesis"]["url"] = "https://example.org/thesis.pdf"


def _no_document_source(spec: dict[str, Any]) -> None:
    del spec["sources"][0]["digest"]


def _bad_digest(spec: dict[str, Any]) -> None:
    spec["thesis"]["digest"] = "ABC123"


def _bad_profile_name(spec: dict[str, Any]) -> None:
    spec["judge"] = {"kind": "openai", "openai": {"profile": "Not A Label"}}


def _duplicate_source_names(spec: dict[str, Any]) -> None:
    spec["sources"][1]["name"] = spec["sources"][0]["name"]


def _ftp_url(spec: dict[str, Any]) -> None:
    del spec["sources"][0]["digest"]
    spec["sources"][0]["url"] = "ftp://example.org/a.pdf"


def _no_sources(spec: dict[str, Any]) -> None:
    spec["sources"] = []


def _long_key(spec: dict[str, Any]) -> None:
    spec["sources"][0]["keys"] = ["k" * 65]


def _top_k_zero(spec: dict[str, Any]) -> None:
    spec["retrieval"] = {"topK": 0}


INVALID: dict[str, tuple[Callable[[dict[str, Any]], None], list[str]]] = {
    "missing-thesis": (_without_thesis, ["spec.thesis", "Required value"]),
    "two-document-sources": (
        _two_document_sources,
        ["spec.thesis", "exactly one of url, configMapKeyRef, secretKeyRef or digest"],
    ),
    "no-document-source": (
        _no_document_source,
        ["spec.sources[0]", "exactly one of url, configMapKeyRef, secretKeyRef or digest"],
    ),
    "bad-digest": (_bad_digest, ["spec.thesis.digest", "^[0-9a-f]{64}$"]),
    "bad-profile-name": (_bad_profile_name, ["spec.judge.openai.profile", "Not A Label"]),
    "duplicate-source-names": (
        _duplicate_source_names, ["spec.sources[1]", "Duplicate value"]
    ),
    "ftp-url": (_ftp_url, ["spec.sources[0].url", "^https?://"]),
    "no-sources": (_no_sources, ["spec", "give at least one source, or set fetchSources: true"]),
    "long-key": (_long_key, ["spec.sources[0].keys[0]", "64"]),
    "top-k-zero": (_top_k_zero, ["spec.retrieval.topK", "greater than or equal to 1"]),
}


@pytest.mark.parametrize("case", list(INVALID))
def test_invalid_run_is_rejected_naming_the_problem(
    crd: str, namespace: str, objects: k8s.CustomObjectsApi, case: str
) -> None:
    mutate, expected = INVALID[case]
    spec = copy.deepcopy(cs.example_spec())
    mutate(spec)

    def rejected() -> k8s.ApiException:
        try:
            _create(objects, namespace, case, spec)
        except k8s.ApiException as err:
            if err.status == 404:  # endpoints not served yet: retry
                raise
            return err
        raise AssertionError(f"{case}: accepted")

    err = cs.eventually(rejected)
    assert err.status == 422, err.body
    message = json.loads(err.body)["message"]
    for fragment in expected:
        assert fragment in message, f"{fragment!r} not in {message!r}"


def test_printer_columns(
    crd: str, control_plane: controlplane.ControlPlane, namespace: str,
    objects: k8s.CustomObjectsApi,
) -> None:
    cs.eventually(lambda: _create(objects, namespace, "columns", cs.example_spec()))
    objects.patch_namespaced_custom_object_status(
        cs.GROUP, cs.VERSION, namespace, cs.PLURAL, "columns",
        {"status": {"phase": "Running", "progress": "12/40",
                    "counts": {"supported": 9, "unsupported": 2}}},
    )
    out = control_plane.kubectl("get", "crun", "--namespace", namespace, "-o", "wide").stdout
    header, row = out.splitlines()[:2]
    columns = header.split()
    wanted = ["PHASE", "PROGRESS", "SUPPORTED", "UNSUPPORTED", "AGE"]
    assert [c for c in columns if c in wanted] == wanted, header
    assert row.split()[:5] == ["columns", "Running", "12/40", "9", "2"], row
    # The short name and the category resolve too.
    assert "columns" in control_plane.kubectl("get", "citerun", "-n", namespace).stdout


def test_status_subresource(
    crd: str, namespace: str, objects: k8s.CustomObjectsApi
) -> None:
    cs.eventually(lambda: _create(objects, namespace, "status", cs.example_spec()))
    args = (cs.GROUP, cs.VERSION, namespace, cs.PLURAL, "status")

    # Status sent with the main resource is dropped...
    objects.patch_namespaced_custom_object(*args, {"status": {"phase": "Succeeded"}})
    assert "status" not in objects.get_namespaced_custom_object(*args)

    # ...and kept when written through /status, without a new generation.
    status = {
        "phase": "Running",
        "observedGeneration": 1,
        "runId": "5de68f13",
        "progress": "3/10",
        "counts": {"citations": 10, "judged": 3, "supported": 2, "contradicted": 1},
        "conditions": [
            {"type": "Admitted", "status": "True", "reason": "WithinQuota",
             "message": "tenant default: 1 of 5 active runs",
             "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1},
        ],
        "startedAt": "2026-01-01T00:00:00Z",
        "report": {"runId": "5de68f13", "command": f"citerun report status -n {namespace}"},
        "message": "judging citations",
        "unknownField": "pruned",
    }
    objects.patch_namespaced_custom_object_status(*args, {"status": status})
    got = objects.get_namespaced_custom_object(*args)
    expected = {k: v for k, v in status.items() if k != "unknownField"}
    assert got["status"] == expected
    assert got["metadata"]["generation"] == 1

    # The status schema is enforced too.
    with pytest.raises(k8s.ApiException) as bad_phase:
        objects.patch_namespaced_custom_object_status(
            *args, {"status": {"phase": "Exploded"}}
        )
    assert bad_phase.value.status == 422
    assert "status.phase" in json.loads(bad_phase.value.body)["message"]
