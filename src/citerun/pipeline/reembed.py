"""Re-embedding stored chunks with the configured embedder (``citerun reembed``).

Each chunk records the model that made its vector (``chunks.embedding_model``), and
retrieval refuses documents embedded by another model than the worker's (see
:mod:`citerun.pipeline.retrieval`). After the embedding settings change, this
module brings the stored vectors to the new model: batch by batch in id order, each batch
one transaction, so it can run while workers serve (a judge that meets a document half-way
through gets :class:`~citerun.pipeline.retrieval.ModelMismatch`, a retried task
error, and succeeds once the document is done). See ``docs/architecture.md``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import asyncpg
import numpy as np

from citerun.core import sql
from citerun.pipeline import embed

logger = logging.getLogger(__name__)

_Q = sql.load("citerun.pipeline", "reembed.sql")


async def reembed(pool: asyncpg.Pool, embedder: embed.Embedder, *, everything: bool = False,
                  batch_size: int = 256,
                  progress: Callable[[int], None] | None = None) -> int:
    """Re-embed every chunk not made by ``embedder`` (every chunk with ``everything``);
    return how many chunks were updated."""
    done = 0
    after = 0
    while True:
        rows = await pool.fetch(_Q["chunk_stale_batch"], embedder.name, after, everything,
                                batch_size)
        if not rows:
            return done
        vectors = await asyncio.to_thread(embedder.embed, [r["text"] for r in rows])
        async with pool.acquire() as conn, conn.transaction():
            await conn.executemany(_Q["chunk_reembed"], [
                (r["id"], np.asarray(v, dtype=np.float32), embedder.name)
                for r, v in zip(rows, vectors)])
        done += len(rows)
        after = rows[-1]["id"]
        logger.info("re-embedded %d chunks with %s", done, embedder.name,
                    extra={"action": "reembed", "chunks": done, "model": embedder.name})
        if progress is not None:
            progress(done)
