"""The pure parts of hybrid retrieval, and retrieval over chunks held in memory.

Okapi BM25 (bm25s) over chunk texts, cosine similarity over embedding vectors, and
reciprocal rank fusion of the two: :mod:`citerun.pipeline.retrieval` runs the vector leg
in Postgres (pgvector) and takes BM25 and the fusion from here; :class:`MemoryRetriever`
runs both legs over numpy arrays, for the recipe's :func:`~citerun.pipeline.recipe.verify`
(unit tests, benches) where no database is.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Sequence
from dataclasses import dataclass

import bm25s
import numpy as np

from citerun.pipeline import embed, judge
from citerun.pipeline.judging import german
from citerun.pipeline.pdf import Chunk
from citerun.pipeline.settings import RetrievalConfig


@dataclass(frozen=True)
class Bm25Index:
    """A BM25 index over chunks; ``ids`` are the chunks' ids in index order.
    ``retriever`` is None where no chunk holds a word (a text layer of replacement
    characters or stop words only): nothing can match, and bm25s cannot index it."""

    ids: tuple[int, ...]
    retriever: bm25s.BM25 | None


def build_bm25(ids: Sequence[int], texts: Sequence[str]) -> Bm25Index:
    """The BM25 index of ``texts`` (English stop words left out)."""
    tokens = bm25s.tokenize(list(texts), stopwords="en", show_progress=False)
    if not tokens.vocab:
        return Bm25Index(tuple(ids), None)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    return Bm25Index(tuple(ids), retriever)


def bm25_rank(index: Bm25Index, query: str, k: int) -> list[tuple[int, float]]:
    """Chunk ids and BM25 scores of the best ``k`` matches of ``query`` (score > 0)."""
    k = min(k, len(index.ids))
    if index.retriever is None or k <= 0:
        return []
    tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
    if not tokens.vocab:
        return []
    docs, scores = index.retriever.retrieve(tokens, k=k, show_progress=False)
    return [(index.ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0]) if s > 0]


def rrf(rankings: Sequence[tuple[float, Sequence[tuple[int, float]]]],
        k: float) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of weighted rankings: sum of weight / (k + rank)."""
    fused: dict[int, float] = collections.defaultdict(float)
    for weight, ranking in rankings:
        for rank, (item, _score) in enumerate(ranking, start=1):
            fused[item] += weight / (k + rank)
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


def fuse(config: RetrievalConfig, by_vector: Sequence[tuple[int, float]],
         by_bm25: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """The two legs fused with the weights and constant of ``config``."""
    return rrf([(config.vector_weight, by_vector), (config.bm25_weight, by_bm25)], config.rrf_k)


def query_of(claim: str) -> str:
    """What a claim is looked for by: a German claim by its English gloss (the sources
    are English, and BM25 finds no German word in them; the judge glosses it again,
    then choosing among a word's translations by the passages found)."""
    return german.gloss(claim) if german.is_german(claim) else claim


def cosine_rank(vectors: np.ndarray, ids: Sequence[int], query: np.ndarray,
                k: int) -> list[tuple[int, float]]:
    """Chunk ids and cosine similarities of the ``k`` rows of ``vectors`` nearest
    ``query``, best first (ties by id)."""
    norms = np.linalg.norm(vectors, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
    scores = (vectors @ query) / np.maximum(norms, 1e-12)
    order = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), ids[i]))[:k]
    return [(ids[i], float(scores[i])) for i in order]


class MemoryRetriever:
    """Hybrid retrieval inside the cited sources, their chunks and vectors in memory:
    the BM25 leg and the fusion of :mod:`citerun.pipeline.retrieval`, an exact cosine
    search in place of pgvector's."""

    def __init__(self, embedder: embed.Embedder, config: RetrievalConfig) -> None:
        self.embedder = embedder
        self.config = config
        self._chunks: dict[int, tuple[str, Chunk]] = {}
        self._vectors: dict[int, np.ndarray] = {}
        self._bm25: dict[tuple[str, ...], Bm25Index] = {}

    def add(self, source: str, chunks: Sequence[Chunk]) -> None:
        """Index the chunks of the document ``source`` (ids follow on from the last)."""
        for chunk, vector in zip(chunks, self.embedder.embed([c.text for c in chunks])
                                 if chunks else []):
            chunk_id = len(self._chunks) + 1
            self._chunks[chunk_id] = (source, chunk)
            self._vectors[chunk_id] = np.asarray(vector, dtype=np.float32)

    async def search(self, claim: str, sources: Sequence[str]) -> list[judge.Passage]:
        """The ``top_k`` fused passages of ``sources`` for ``claim``, best first."""
        key = tuple(sorted(set(sources)))
        ids = [i for i, (source, _) in self._chunks.items() if source in key]
        if not ids:
            return []
        query = await asyncio.to_thread(query_of, claim)
        vector = np.asarray(self.embedder.embed([query])[0], dtype=np.float32)
        n = self.config.candidates
        by_vector = cosine_rank(np.stack([self._vectors[i] for i in ids]), ids, vector, n)
        if key not in self._bm25:
            self._bm25[key] = build_bm25(ids, [self._chunks[i][1].text for i in ids])
        fused = fuse(self.config, by_vector, bm25_rank(self._bm25[key], query, n))
        return [judge.Passage(chunk_id=i, text=self._chunks[i][1].text,
                              page_start=self._chunks[i][1].page_start,
                              page_end=self._chunks[i][1].page_end, score=score)
                for i, score in fused[: self.config.top_k]]
