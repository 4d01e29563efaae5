"""The pipeline's settings: documents, embeddings, retrieval, matching and the judge.

Read from the same ``CITERUN_*`` environment as :class:`citerun.settings.Settings`
(``CITERUN_EMBEDDING__PROVIDER=openai``, ``CITERUN_JUDGE__KIND=openai``, ...). They live
here, beside the stages that use them, because the core package must not import the
worker. A run's spec may override ``judge`` and ``retrieval`` for that run alone.
"""

from __future__ import annotations

import pydantic
from pydantic_settings import BaseSettings, SettingsConfigDict

from citerun.worker.pipeline import citations, embed
from citerun.worker.pipeline import judge as judges


class DocumentSettings(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True)

    max_bytes: int = pydantic.Field(
        100 * 1024 * 1024, ge=1, description="Largest PDF accepted, in bytes: 100 MiB holds "
        "any text thesis; bigger files are almost always scans.")
    fetch_timeout_s: float = pydantic.Field(
        120.0, gt=0, description="Seconds a worker may spend downloading one document from "
        "a URL, start to finish.")
    fetch_allow_networks: tuple[str, ...] = pydantic.Field(
        (), description="Networks (CIDR) URL documents may be fetched from although they are "
        "loopback, private or link-local (e.g. an internal mirror); empty: public only.")
    fetch_deny_networks: tuple[str, ...] = pydantic.Field(
        (), description="Extra networks (CIDR) URL documents are never fetched from: the "
        "cluster's pod and service ranges when they are not private addresses.")
    chunk_chars: int = pydantic.Field(
        900, ge=200, description="Target chunk length in characters (about a paragraph).")
    overlap_chars: int = pydantic.Field(
        150, ge=0, description="Characters of the previous chunk repeated at the start of the "
        "next, so evidence cut by a chunk border is still found whole.")


class RetrievalConfig(pydantic.BaseModel):
    """Hybrid retrieval: vector and BM25 legs fused by reciprocal rank fusion."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    top_k: int = pydantic.Field(5, ge=1, le=50, description="Passages handed to the judge.")
    candidates: int = pydantic.Field(
        30, ge=1, le=500, description="Passages each leg ranks before fusion.")
    rrf_k: float = pydantic.Field(
        60.0, gt=0, description="RRF constant: 60 is the value of Cormack et al. (2009); "
        "larger flattens the difference between ranks.")
    vector_weight: float = pydantic.Field(1.0, ge=0, description="Weight of the vector leg.")
    bm25_weight: float = pydantic.Field(1.0, ge=0, description="Weight of the BM25 leg.")


class PipelineSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CITERUN_", env_nested_delimiter="__",
                                      frozen=True, extra="ignore")

    documents: DocumentSettings = pydantic.Field(default_factory=DocumentSettings)
    embedding: embed.EmbeddingConfig = pydantic.Field(default_factory=embed.EmbeddingConfig)
    retrieval: RetrievalConfig = pydantic.Field(default_factory=RetrievalConfig)
    match: citations.MatchConfig = pydantic.Field(default_factory=citations.MatchConfig)
    judge: judges.JudgeConfig = pydantic.Field(default_factory=judges.JudgeConfig)
