"""The embedding model's name and width are stored with every vector; retrieval refuses
documents of another model, and `reembed` brings them to the configured one."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import numpy as np
import pytest

from citerun.core import runs
from citerun.pipeline import embed, reembed, retrieval
from citerun.pipeline.settings import RetrievalConfig

REPO = Path(__file__).resolve().parents[2]
TEXTS = ["Aspirin lowers the risk of a second heart attack in adults.",
         "Regular exercise improves sleep quality in older people.",
         "Coffee consumption is not linked to higher blood pressure."]
OTHER_MODEL = "openai/text-embedding-3-small@256"


async def _store(pool: asyncpg.Pool, embedder: embed.Embedder, model: str) -> str:
    doc = await runs.stage_document(pool, b"%PDF-1.7 source", "s.pdf")
    vectors = embedder.embed(TEXTS)
    await pool.executemany(
        "INSERT INTO chunks (digest, ordinal, page_start, page_end, text, embedding, "
        "embedding_model, embedding_dim) VALUES ($1, $2, 1, 1, $3, $4, $5, $6)",
        [(doc.digest, i, t, np.asarray(v, dtype=np.float32), model, embedder.dim)
         for i, (t, v) in enumerate(zip(TEXTS, vectors))])
    await pool.execute("UPDATE documents SET state = 'parsed', raw = NULL")
    return doc.digest


async def test_the_vector_column_has_the_embedders_width(pool: asyncpg.Pool) -> None:
    column = await pool.fetchval(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'")
    assert column == f"vector({embed.EMBEDDING_DIM})"


def test_the_migration_names_the_default_embedder_for_old_rows() -> None:
    text = next((REPO / "src" / "citerun" / "core" / "migrations").glob("0002_*.sql")).read_text(encoding="utf-8")
    assert f"embedding_model = '{embed.WordLlamaEmbedder.name}'" in text


async def test_retrieval_refuses_another_model_until_reembedded(pool: asyncpg.Pool) -> None:
    embedder = embed.WordLlamaEmbedder()
    digest = await _store(pool, embedder, OTHER_MODEL)
    finder = retrieval.Retriever(embedder, RetrievalConfig())
    with pytest.raises(retrieval.ModelMismatch, match="citerun reembed"):
        await finder.search(pool, "aspirin and heart attacks", [digest])

    assert await reembed.reembed(pool, embedder, batch_size=2) == len(TEXTS)
    models = await pool.fetch("SELECT DISTINCT embedding_model, embedding_dim FROM chunks")
    assert [tuple(r) for r in models] == [(embedder.name, embedder.dim)]
    passages = await finder.search(pool, "aspirin and heart attacks", [digest])
    assert passages and passages[0].text == TEXTS[0]
    assert await reembed.reembed(pool, embedder) == 0  # nothing left to do
    assert await reembed.reembed(pool, embedder, everything=True) == len(TEXTS)


def test_the_reembed_command_brings_stored_vectors_to_the_configured_model(
        database_url: str, tmp_path: Path) -> None:
    import asyncio
    import os
    import subprocess

    from citerun.core import db
    from tests.conftest import citerun_command

    async def seed() -> None:
        pool = await db.create_pool(database_url, min_size=1, max_size=2)
        try:
            await _store(pool, embed.WordLlamaEmbedder(), OTHER_MODEL)
        finally:
            await pool.close()

    asyncio.run(seed())
    env = {**os.environ, "CITERUN_DATABASE_URL": database_url,
           "CITERUN_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([*citerun_command(), "reembed"], env=env, capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"re-embedded {len(TEXTS)} chunk(s) with {embed.WordLlamaEmbedder.name}" in done.stdout
