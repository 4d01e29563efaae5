"""The CitationRun spec as pydantic models: the handler's own validation.

The CRD's schema rejects most bad specs at the API server; these models check the same
rules again (an operator must not trust that the CRD installed is the one it expects)
and turn the spec into what ``citerun.runs`` needs.
"""

from __future__ import annotations

from typing import Any, Literal

import pydantic

GROUP = "citerun.dev"
VERSION = "v1alpha1"
PLURAL = "citationruns"
KIND = "CitationRun"


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class KeyRef(_Model):
    name: str = pydantic.Field(min_length=1, max_length=253)
    key: str = pydantic.Field(min_length=1, max_length=253)


class DocumentRef(_Model):
    name: str = pydantic.Field(min_length=1, max_length=255)
    url: str | None = pydantic.Field(None, pattern=r"^https?://", max_length=2048)
    config_map_key_ref: KeyRef | None = pydantic.Field(None, alias="configMapKeyRef")
    secret_key_ref: KeyRef | None = pydantic.Field(None, alias="secretKeyRef")
    digest: str | None = pydantic.Field(None, pattern=r"^[0-9a-f]{64}$")

    @pydantic.model_validator(mode="after")
    def _exactly_one(self) -> DocumentRef:
        given = [x for x in (self.url, self.config_map_key_ref, self.secret_key_ref, self.digest)
                 if x is not None]
        if len(given) != 1:
            raise ValueError(f"document {self.name!r}: exactly one of url, configMapKeyRef, "
                             "secretKeyRef or digest must be set")
        return self


class SourceRef(DocumentRef):
    keys: tuple[str, ...] = pydantic.Field((), max_length=20)


class OpenAISpec(_Model):
    base_url: str | None = pydantic.Field(None, alias="baseUrl")
    model: str | None = None
    api_key_secret_ref: KeyRef | None = pydantic.Field(None, alias="apiKeySecretRef")
    token_budget: int | None = pydantic.Field(None, ge=0, alias="tokenBudget")
    timeout_seconds: float | None = pydantic.Field(None, gt=0, le=600, alias="timeoutSeconds")


class JudgeSpec(_Model):
    kind: Literal["embedded", "openai"] = "embedded"
    openai: OpenAISpec | None = None

    @pydantic.model_validator(mode="after")
    def _openai_complete(self) -> JudgeSpec:
        if self.kind == "openai" and (self.openai is None or not self.openai.base_url
                                      or not self.openai.model):
            raise ValueError("judge.openai.baseUrl and judge.openai.model are required "
                             "when judge.kind is openai")
        return self


class RetrievalSpec(_Model):
    top_k: int | None = pydantic.Field(None, ge=1, le=50, alias="topK")
    vector_weight: float | None = pydantic.Field(None, ge=0, alias="vectorWeight")
    bm25_weight: float | None = pydantic.Field(None, ge=0, alias="bm25Weight")
    rrf_k: float | None = pydantic.Field(None, gt=0, alias="rrfK")


class CitationRunSpec(_Model):
    thesis: DocumentRef
    sources: tuple[SourceRef, ...] = pydantic.Field(min_length=1, max_length=500)
    judge: JudgeSpec = JudgeSpec()
    retrieval: RetrievalSpec = RetrievalSpec()
    tenant: str = pydantic.Field("default", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                                 max_length=63)
    priority: int = pydantic.Field(0, ge=-100, le=100)

    @pydantic.model_validator(mode="after")
    def _unique_sources(self) -> CitationRunSpec:
        names = [s.name for s in self.sources]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"source names must be unique; repeated: {', '.join(duplicates)}")
        return self

    def pipeline_spec(self) -> dict[str, Any]:
        """The run's overrides of the pipeline settings, as worker/tasks.py reads them."""
        spec: dict[str, Any] = {}
        if self.judge.kind != "embedded" or self.judge.openai is not None:
            judge: dict[str, Any] = {"kind": self.judge.kind}
            o = self.judge.openai
            if o is not None:
                openai = {k: v for k, v in {
                    "base_url": o.base_url, "model": o.model, "token_budget": o.token_budget,
                    "timeout_s": o.timeout_seconds}.items() if v is not None}
                if o.api_key_secret_ref is not None:
                    # Workers read the key from the env var the chart maps from this Secret.
                    openai["api_key_env"] = "CITERUN_JUDGE_API_KEY"
                judge["openai"] = openai
            spec["judge"] = judge
        retrieval = {k: v for k, v in {
            "top_k": self.retrieval.top_k, "vector_weight": self.retrieval.vector_weight,
            "bm25_weight": self.retrieval.bm25_weight, "rrf_k": self.retrieval.rrf_k}.items()
            if v is not None}
        if retrieval:
            spec["retrieval"] = retrieval
        return spec


def validation_message(err: pydantic.ValidationError) -> str:
    """One readable line per problem: ``spec.sources.0.digest: String should match ...``."""
    lines = []
    for problem in err.errors():
        where = ".".join(str(p) for p in ("spec", *problem["loc"]))
        lines.append(f"{where}: {problem['msg']}")
    return "; ".join(lines)
