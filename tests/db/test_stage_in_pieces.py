"""Issue 48 (Medium, uploads): a large document goes to Postgres in pieces of
``runs.PIECE_BYTES`` and is put together by the statement that stages it, so the driver
never encodes and writes one 110 MB parameter on the web service's event loop. What is
stored is the document's bytes exactly, whichever way it was staged, by every path that
stages (``stage_document`` with a pool or inside a transaction, a run's payloads); the
pieces never outlive their transaction, committed or not."""

from __future__ import annotations

import hashlib
import os
import uuid

import asyncpg
import pytest

from citerun.core import flow, runs
from citerun.core.settings import QueueSettings


def _pdf(size: int, seed: int) -> bytes:
    body = hashlib.shake_256(seed.to_bytes(4, "big")).digest(size - 9)
    return b"%PDF-1.7\n" + body


async def _stored(pool: asyncpg.Pool, digest: str) -> bytes:
    raw = await pool.fetchval("SELECT raw FROM documents WHERE digest = $1", digest)
    assert isinstance(raw, bytes)
    return raw


@pytest.mark.parametrize("size", [runs.PIECE_BYTES, runs.PIECE_BYTES + 1,
                                  3 * runs.PIECE_BYTES + 12_345])
async def test_a_document_staged_in_pieces_is_stored_byte_for_byte(pool: asyncpg.Pool,
                                                                   size: int) -> None:
    data = _pdf(size, size)
    doc = await runs.stage_document(pool, data, "big.pdf", tenant="t")
    assert doc.digest == hashlib.sha256(data).hexdigest()
    assert await _stored(pool, doc.digest) == data
    row = await pool.fetchrow("SELECT size_bytes, state FROM documents WHERE digest = $1",
                              doc.digest)
    assert (row["size_bytes"], row["state"]) == (size, "staged")
    assert await pool.fetchval("SELECT count(*) FROM document_owners WHERE digest = $1",
                               doc.digest) == 1
    assert await pool.fetchval("SELECT count(*) FROM document_pieces") == 0


async def test_the_pieces_of_an_aborted_staging_are_gone(pool: asyncpg.Pool) -> None:
    data = _pdf(2 * runs.PIECE_BYTES + 7, 1)
    with pytest.raises(RuntimeError, match="the request went away"):
        async with pool.acquire() as conn, conn.transaction():
            await runs.stage_document(conn, data, "big.pdf", tenant="t")
            raise RuntimeError("the request went away")
    assert await pool.fetchval("SELECT count(*) FROM document_pieces") == 0
    assert await pool.fetchval("SELECT count(*) FROM documents") == 0


async def test_the_same_large_document_staged_again_keeps_one_copy(pool: asyncpg.Pool) -> None:
    data = _pdf(2 * runs.PIECE_BYTES + 99, 2)
    first = await runs.stage_document(pool, data, "a.pdf", tenant="t")
    second = await runs.stage_document(pool, data, "b.pdf", tenant="u")
    assert first.digest == second.digest
    assert await pool.fetchval("SELECT count(*) FROM documents") == 1
    assert await _stored(pool, first.digest) == data
    assert await pool.fetchval("SELECT count(*) FROM document_owners") == 2
    assert await pool.fetchval("SELECT count(*) FROM document_pieces") == 0


async def test_a_runs_large_payload_is_staged_in_pieces(pool: asyncpg.Pool) -> None:
    thesis = _pdf(runs.PIECE_BYTES + 5, 3)
    source = os.urandom(64)
    digest = hashlib.sha256(thesis).hexdigest()
    admission = await flow.create(pool, runs.RunRequest(
        id=uuid.uuid4(), name="r", thesis=runs.StagedDocument(digest, "t.pdf"), sources=(),
        tenant="t", payloads=((thesis, "t.pdf"), (source, "s.pdf"))), settings=QueueSettings())
    assert admission.created
    assert await _stored(pool, digest) == thesis
    assert await _stored(pool, hashlib.sha256(source).hexdigest()) == source
    assert await pool.fetchval("SELECT count(*) FROM document_pieces") == 0
