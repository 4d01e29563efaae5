"""The CitationRun spec: one pydantic model, the single owner of its shape and rules.

* The CRD's openAPI schema (``crds/citationrun.yaml`` and the chart's copy) is generated
  from :class:`RunSpec` by ``scripts/gen-crd`` (:mod:`citerun.operator.crd`); a test
  fails when the committed files differ from the generator's output.
* The operator validates every CitationRun's spec with it (an operator must not trust
  that the CRD installed is the one it expects).
* The run row stores the validated spec as jsonb (:meth:`RunSpec.to_json`) and the
  worker reads it back typed (:meth:`RunSpec.from_json`).

What the spec deliberately does NOT carry (see docs/security.md): the
tenant (it is the CitationRun's namespace), the priority (per-namespace policy in the
operator's configuration) and the judge's endpoint (a run chooses one of the judge
*profiles* the operator's configuration names; the URL comes from the profile only).
"""

from __future__ import annotations

from typing import Any, Literal

import pydantic

from citerun.core import citekeys

GROUP = "citerun.dev"
VERSION = "v1alpha1"
PLURAL = "citationruns"
KIND = "CitationRun"

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DIGEST = r"^[0-9a-f]{64}$"


def _cel(rule: str, message: str) -> dict[str, Any]:
    """A CEL rule the API server checks (emitted into the CRD as x-kubernetes-validations)."""
    return {"x-kubernetes-validations": [{"rule": rule, "message": message}]}


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class KeyRef(_Model):
    """A key of a Secret or ConfigMap in the run's namespace."""

    name: str = pydantic.Field(min_length=1, max_length=253)
    key: str = pydantic.Field(min_length=1, max_length=253)


_EXACTLY_ONE = _cel(
    "[has(self.url), has(self.configMapKeyRef), has(self.secretKeyRef), has(self.digest)]"
    ".filter(x, x).size() == 1",
    "exactly one of url, configMapKeyRef, secretKeyRef or digest must be set")


class DocumentRef(_Model):
    """A PDF. Exactly one of url, configMapKeyRef, secretKeyRef or digest says where its
    bytes are."""

    model_config = pydantic.ConfigDict(json_schema_extra=_EXACTLY_ONE)

    name: str = pydantic.Field(min_length=1, max_length=255,
                               description="File name of the document, shown in the report.")
    url: str | None = pydantic.Field(
        None, pattern=r"^https?://", max_length=2048,
        description="An http(s) URL the worker downloads the PDF from (public addresses "
        "only, unless the operator's allow-list says otherwise).")
    config_map_key_ref: KeyRef | None = pydantic.Field(
        None, alias="configMapKeyRef",
        description="A key of a ConfigMap (binaryData) in the run's namespace; the creator "
        "of the run must be allowed to get that ConfigMap.")
    secret_key_ref: KeyRef | None = pydantic.Field(
        None, alias="secretKeyRef",
        description="A key of a Secret in the run's namespace; the creator of the run must "
        "be allowed to get that Secret.")
    digest: str | None = pydantic.Field(
        None, pattern=DIGEST,
        description="sha256 (64 lowercase hex digits) of a PDF this namespace stored "
        "before (`citerun upload`).")

    @pydantic.model_validator(mode="after")
    def _exactly_one(self) -> DocumentRef:
        given = [x for x in (self.url, self.config_map_key_ref, self.secret_key_ref, self.digest)
                 if x is not None]
        if len(given) != 1:
            raise ValueError(f"document {self.name!r}: exactly one of url, configMapKeyRef, "
                             "secretKeyRef or digest must be set")
        return self

    def key_refs(self) -> list[tuple[str, KeyRef]]:
        """The Secret/ConfigMap keys this document is read from: ("secret"|"configmap", ref)."""
        out: list[tuple[str, KeyRef]] = []
        if self.secret_key_ref is not None:
            out.append(("secret", self.secret_key_ref))
        if self.config_map_key_ref is not None:
            out.append(("configmap", self.config_map_key_ref))
        return out


class SourceRef(DocumentRef):
    """A cited source, one PDF."""

    model_config = pydantic.ConfigDict(json_schema_extra=_EXACTLY_ONE)

    keys: tuple[pydantic.constr(min_length=1, max_length=64), ...] = pydantic.Field(  # type: ignore[valid-type]
        (), max_length=20,
        description='Citation keys that point at this source (e.g. "12" or "smith2020"); '
        "they take precedence over fuzzy matching of the reference list.")


class OpenAISpec(_Model):
    """The OpenAI-compatible judge of this run."""

    profile: str = pydantic.Field(
        "default", min_length=1, max_length=63, pattern=DNS_LABEL,
        description="Name of a judge profile of the operator's configuration (chart value "
        "judgeProfiles); the profile fixes the endpoint URL and the model.")
    api_key_secret_ref: KeyRef | None = pydantic.Field(
        None, alias="apiKeySecretRef",
        description="Secret key in the run's namespace holding the API key to use with "
        "the profile's endpoint instead of the profile's own key; the creator of the run "
        "must be allowed to get that Secret.")
    token_budget: int | None = pydantic.Field(
        None, ge=0, alias="tokenBudget",
        description="Most tokens the run may spend, within the profile's maxTokensPerRun; "
        "0 or unset: the profile's cap (never unlimited).")
    timeout_seconds: float | None = pydantic.Field(
        None, gt=0, le=600, alias="timeoutSeconds",
        description="Timeout of one request, in seconds.")


#: The judges a run may choose (``spec.judge.kind``), the default first: the one list of
#: them. The CRD is generated from it; the chart's values.schema.json
#: (``pipeline.judge.kind``) and the workers' settings, which know one more judge
#: (:data:`citerun.pipeline.judging.factory.JudgeKind`), are checked against it
#: (tests/unit/test_judge_kinds.py).
RunJudgeKind = Literal["embedded", "openai"]


class JudgeSpec(_Model):
    """Which judge decides whether a source supports a claim."""

    kind: RunJudgeKind = pydantic.Field(
        "embedded", description="embedded (no network, the default) or openai (a judge "
        "profile's OpenAI-compatible chat-completions endpoint).")
    openai: OpenAISpec | None = None


class RetrievalSpec(_Model):
    """Hybrid retrieval inside a cited source (vector + BM25, fused by RRF)."""

    top_k: int | None = pydantic.Field(None, ge=1, le=50, alias="topK",
                                       description="Passages handed to the judge per citation.")
    vector_weight: float | None = pydantic.Field(
        None, ge=0, alias="vectorWeight", description="Weight of the vector ranking in the fusion.")
    bm25_weight: float | None = pydantic.Field(
        None, ge=0, alias="bm25Weight", description="Weight of the BM25 ranking in the fusion.")
    rrf_k: float | None = pydantic.Field(
        None, gt=0, alias="rrfK", description="The k of reciprocal rank fusion, 1/(k + rank).")


class RunSpec(_Model):
    """What to verify and how. Immutable in effect once the run is admitted."""

    # A thesis alone is checked only against what fetchSources finds (issue 51).
    model_config = pydantic.ConfigDict(json_schema_extra=_cel(
        "size(self.sources) > 0 || (has(self.fetchSources) && self.fetchSources)",
        "give at least one source, or set fetchSources: true"))

    thesis: DocumentRef
    sources: tuple[SourceRef, ...] = pydantic.Field(
        max_length=500, description="The cited sources, one PDF each; may be empty with "
        "fetchSources: true (the works the thesis cites are then looked for).",
        # Unique names: a map-typed list keyed by name makes the API server reject a
        # duplicate in O(n) (a CEL rule would be O(n^2) and over the cost budget).
        json_schema_extra={"x-kubernetes-list-type": "map",
                           "x-kubernetes-list-map-keys": ["name"]})
    judge: JudgeSpec | None = None
    retrieval: RetrievalSpec | None = None
    fetch_sources: bool = pydantic.Field(
        False, alias="fetchSources",
        description="Look for an open-access copy (a PDF, else an abstract) of each cited "
        "work no source matches, by its DOI, arXiv id, PubMed ids or title, and judge its "
        "citations on it (issue 51). The identifiers of the cited works go to the services "
        "the operator configured; nothing is fetched unless the workers allow it "
        "(openaccess.enabled).")

    @pydantic.model_validator(mode="after")
    def _some_source(self) -> RunSpec:
        if not self.sources and not self.fetch_sources:
            raise ValueError("give at least one source, or set fetchSources: true")
        return self

    @pydantic.model_validator(mode="after")
    def _unique_sources(self) -> RunSpec:
        names = [s.name for s in self.sources]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"source names must be unique; repeated: {', '.join(duplicates)}")
        return self

    @pydantic.model_validator(mode="after")
    def _usable_keys(self) -> RunSpec:
        # Keys are compared folded: two sources' keys that fold to one key would fail
        # the extraction on every attempt, and one that folds to nothing never matches.
        citekeys.check_explicit((s.name, s.keys) for s in self.sources)
        return self

    @pydantic.model_validator(mode="after")
    def _one_secret_one_configmap(self) -> RunSpec:
        # The apiserver's access policy asks its authorizer once per object (each check
        # is costly in CEL), so a run's documents come from at most one Secret and one
        # ConfigMap (any number of keys of each).
        for kind in ("secret", "configmap"):
            names = {ref.name for doc in self.documents() for k, ref in doc.key_refs()
                     if k == kind}
            if len(names) > 1:
                raise ValueError(f"documents may come from one {kind} only; named: "
                                 + ", ".join(sorted(names)))
        return self

    @property
    def judge_spec(self) -> JudgeSpec:
        return self.judge or JudgeSpec()

    def documents(self) -> list[DocumentRef]:
        return [self.thesis, *self.sources]

    def to_json(self) -> dict[str, Any]:
        """The jsonb form stored with the run (camelCase, as in the CRD)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def from_json(cls, data: Any) -> RunSpec | None:
        """The spec stored with a run; None for a run without one (a local run)."""
        if not isinstance(data, dict) or not isinstance(data.get("thesis"), dict):
            return None
        return cls.model_validate(data)


#: The key of a run's stored spec that asks for its cited works without a PDF to be looked
#: for (issue 51): a CitationRun's ``spec.fetchSources``, and the local spec that
#: ``citerun verify --fetch-sources`` and the web's form store.
FETCH_SOURCES = "fetchSources"


def fetches_sources(spec: Any) -> bool:
    """Whether the run whose stored spec is ``spec`` asked for sources to be fetched."""
    return isinstance(spec, dict) and spec.get(FETCH_SOURCES) is True


def validation_message(err: pydantic.ValidationError) -> str:
    """One readable line per problem: ``spec.sources.0.digest: String should match ...``."""
    lines = []
    for problem in err.errors():
        where = ".".join(str(p) for p in ("spec", *problem["loc"]))
        lines.append(f"{where}: {problem['msg']}")
    return "; ".join(lines)


# -- judge profiles: the endpoints runs may choose from ------------------------------------

JUDGE_PROFILES_ENV = "CITERUN_JUDGE_PROFILES"


class JudgeProfile(_Model):
    """One judge endpoint the operator's configuration allows (chart value judgeProfiles).

    The worker sends requests to ``baseUrl`` only; a run can pick a profile by name and
    bring its own key for it (``apiKeySecretRef``), never a URL.
    """

    base_url: str = pydantic.Field(alias="baseUrl", pattern=r"^https?://[^?#]+$",
                                   max_length=2048)
    model: str = pydantic.Field(min_length=1, max_length=256)
    api_key_env: str | None = pydantic.Field(
        None, alias="apiKeyEnv", pattern=r"^[A-Z_][A-Z0-9_]*$",
        description="Environment variable of the worker holding the profile's own key.")
    max_tokens_per_run: int = pydantic.Field(
        1_000_000, ge=1, alias="maxTokensPerRun",
        description="Most tokens one run may spend on this profile's endpoint; a run's "
        "tokenBudget may lower it, never lift it (issue 27: 0 meant unlimited spend on the "
        "installation's key).")
    namespaces: list[str] | None = pydantic.Field(
        None, max_length=1000,
        description="Namespaces whose runs may use this profile; [\"*\"]: every namespace; "
        "null or empty: none (issue 41: a profile without a list was open to every "
        "namespace). Local runs (citerun verify, the web service's local backend) are not "
        "kept by it.")
    max_tokens_per_namespace: int = pydantic.Field(
        10_000_000, ge=1, alias="maxTokensPerNamespace",
        description="Most tokens the runs of one namespace may spend on this profile's "
        "endpoint in one budgetPeriod, on top of maxTokensPerRun (ten runs at the default "
        "per-run cap a day); a run that finds it spent fails (judge_spend_exhausted).")
    budget_period: Literal["day", "week", "month"] = pydantic.Field(
        "day", alias="budgetPeriod",
        description="The period maxTokensPerNamespace counts over (UTC, calendar): tokens "
        "count to the period they are spent in, whenever their run was created (issue 48).")

    def allows(self, namespace: str) -> bool:
        """Whether runs of ``namespace`` may use this profile."""
        return bool(self.namespaces) and ("*" in (self.namespaces or ())
                                          or namespace in (self.namespaces or ()))

    def budget(self, asked: int | None) -> int:
        """The run's token budget: what it asked for, within the profile's cap."""
        return min(asked or self.max_tokens_per_run, self.max_tokens_per_run)


def judge_profiles(environ: dict[str, str] | None = None) -> dict[str, JudgeProfile]:
    """The configured judge profiles (``CITERUN_JUDGE_PROFILES``, a JSON object name ->
    profile); empty when unset. A malformed value raises (a misconfiguration must not
    silently fall back to anything)."""
    import json
    import os

    raw = (environ if environ is not None else os.environ).get(JUDGE_PROFILES_ENV, "").strip()
    if not raw:
        return {}
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError(f"{JUDGE_PROFILES_ENV} must be a JSON object of name -> profile")
    return {str(name): JudgeProfile.model_validate(value) for name, value in data.items()}
