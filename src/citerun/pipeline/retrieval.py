"""Hybrid retrieval inside the cited sources: pgvector and BM25, fused by RRF.

The vector leg is a pgvector cosine search in Postgres (HNSW, with iterative scans so a
filter on the cited documents still returns enough rows). The BM25 leg is Okapi BM25
(bm25s) over the same chunk rows; its in-memory index is only a cache keyed by the set
of documents, rebuilt from the rows on a miss, because chunks of a content-addressed
document never change. Reciprocal rank fusion combines the two rankings with the
weights in :class:`~citerun.pipeline.settings.RetrievalConfig`. BM25, the fusion and the
query a claim is looked for by are :mod:`citerun.pipeline.ranking`'s, which also
retrieves from chunks held in memory.

Every chunk records the embedding model that made its vector; a search whose documents
were embedded by another model than this worker's raises :class:`ModelMismatch`
instead of comparing vectors of two models (``citerun reembed`` fixes the data).
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Sequence

import asyncpg
import numpy as np

from citerun.core import errors, sql
from citerun.pipeline import embed, judge, ranking
from citerun.pipeline.settings import RetrievalConfig

_Q = sql.load("citerun.pipeline", "retrieval.sql")


class ModelMismatch(errors.CiterunError):
    """The documents were embedded by another model than this worker's."""


class Bm25Cache:
    """A small LRU of BM25 indexes, one per set of documents."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._indexes: collections.OrderedDict[tuple[str, ...], ranking.Bm25Index] = (
            collections.OrderedDict())
        self._lock = threading.Lock()
        self.misses = 0

    async def get(self, conn: asyncpg.Connection | asyncpg.Pool,
                  digests: tuple[str, ...]) -> ranking.Bm25Index | None:
        with self._lock:
            index = self._indexes.get(digests)
            if index is not None:
                self._indexes.move_to_end(digests)
                return index
        rows = await conn.fetch(_Q["chunk_texts_of_documents"], list(digests))
        if not rows:
            return None
        index = await asyncio.to_thread(ranking.build_bm25, [r["id"] for r in rows],
                                        [r["text"] for r in rows])
        with self._lock:
            self.misses += 1
            self._indexes[digests] = index
            while len(self._indexes) > self._size:
                self._indexes.popitem(last=False)
        return index


async def check_models(conn: asyncpg.Connection | asyncpg.Pool, digests: Sequence[str],
                       model: str) -> None:
    """Raise :class:`ModelMismatch` if a chunk of ``digests`` was embedded by another model."""
    other = {r["embedding_model"]: r["digests"]
             for r in await conn.fetch(_Q["chunk_models_of_documents"], list(digests))
             if r["embedding_model"] != model}
    if other:
        found = "; ".join(f"{m}: {', '.join(d[:12] for d in ds)}" for m, ds in sorted(other.items()))
        raise ModelMismatch(
            f"documents embedded by another model than this worker's {model!r} ({found}); "
            "vectors of two models cannot be compared: run `citerun reembed` with the "
            "workers' embedding settings")


async def vector_rank(conn: asyncpg.Connection, query_vector: np.ndarray,
                      digests: Sequence[str], k: int, model: str) -> list[tuple[int, float]]:
    """Chunk ids and cosine similarities of the ``k`` nearest chunks of ``digests``
    embedded by ``model``."""
    async with conn.transaction():
        await conn.execute(_Q["hnsw_iterative_scan"])
        await conn.execute(_Q["hnsw_ef_search"], str(max(40, k)))
        rows = await conn.fetch(_Q["chunk_vector_search"], query_vector, list(digests), k,
                                model)
    return [(r["id"], float(r["score"])) for r in rows]


class Retriever:
    """Finds the passages of some documents that bear on a claim."""

    def __init__(self, embedder: embed.Embedder, config: RetrievalConfig,
                 cache: Bm25Cache | None = None) -> None:
        self.embedder = embedder
        self.config = config
        self.cache = cache or Bm25Cache()

    async def embed_query(self, text: str) -> np.ndarray:
        vectors = await asyncio.to_thread(self.embedder.embed, [text])
        return np.asarray(vectors[0], dtype=np.float32)

    async def rankings(self, pool: asyncpg.Pool, claim: str, digests: Sequence[str], *,
                       candidates: int | None = None,
                       ) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        """The vector and the BM25 ranking of the chunks of ``digests`` for ``claim``."""
        n = candidates or self.config.candidates
        key = tuple(sorted(set(digests)))
        vector = await self.embed_query(claim)
        async with pool.acquire() as conn:
            await check_models(conn, key, self.embedder.name)
            by_vector = await vector_rank(conn, vector, key, n, self.embedder.name)
        index = await self.cache.get(pool, key)
        by_bm25 = ranking.bm25_rank(index, claim, n) if index is not None else []
        return by_vector, by_bm25

    def fuse(self, by_vector: Sequence[tuple[int, float]],
             by_bm25: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
        return ranking.fuse(self.config, by_vector, by_bm25)

    async def search(self, pool: asyncpg.Pool, claim: str,
                     digests: Sequence[str]) -> list[judge.Passage]:
        """The ``top_k`` fused passages of ``digests`` for ``claim``, best first.

        A German claim is looked for by its English gloss: the sources are English, and
        BM25 finds no German word in them (the judge glosses it again, then choosing
        among a word's translations by the passages found)."""
        if not digests:
            return []
        query = await asyncio.to_thread(ranking.query_of, claim)
        by_vector, by_bm25 = await self.rankings(pool, query, digests)
        fused = self.fuse(by_vector, by_bm25)[: self.config.top_k]
        rows = {r["id"]: r for r in await pool.fetch(_Q["chunk_get_many"],
                                                      [i for i, _ in fused])}
        return [judge.Passage(chunk_id=i, text=rows[i]["text"], page_start=rows[i]["page_start"],
                              page_end=rows[i]["page_end"], score=score)
                for i, score in fused if i in rows]
