"""Runs at the database level: idempotent create, caps, staged bytes."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg

from citerun.core import flow, runs
from citerun.core.settings import QueueSettings

#: The queue settings the runs here are created with (the defaults).
QUEUE = QueueSettings()


def _request(run_id: uuid.UUID, thesis: runs.StagedDocument, tenant: str = "t",
             **kw: object) -> runs.RunRequest:
    return runs.RunRequest(id=run_id, name="r", thesis=thesis, sources=(), tenant=tenant,
                           **kw)  # type: ignore[arg-type]


async def test_create_is_idempotent_even_when_raced(pool: asyncpg.Pool) -> None:
    doc = await runs.stage_document(pool, b"%PDF-1.7 thesis", "t.pdf")
    run_id = uuid.uuid4()
    results = await asyncio.gather(*(flow.create(pool, _request(run_id, doc), settings=QUEUE)
                                     for _ in range(5)))
    assert sum(r.created for r in results) == 1
    assert await pool.fetchval("SELECT count(*) FROM runs") == 1
    assert await pool.fetchval("SELECT count(*) FROM tasks WHERE kind = 'parse_document'") == 1


async def test_caps_hold_under_concurrent_admission(pool: asyncpg.Pool) -> None:
    doc = await runs.stage_document(pool, b"%PDF-1.7 thesis", "t.pdf")
    caps = runs.Caps(max_active_runs=2)
    results = await asyncio.gather(*(flow.create(pool, _request(uuid.uuid4(), doc), caps=caps,
                                                 settings=QUEUE)
                                     for _ in range(6)))
    assert sum(r.created for r in results) == 2
    assert all("cap is 2" in (r.over_capacity or "") for r in results if not r.created)


async def test_staged_bytes_cap_counts_new_bytes_only(pool: asyncpg.Pool) -> None:
    doc = await runs.stage_document(pool, b"x" * 100, "t.pdf", tenant="t")
    over = await flow.create(pool, _request(uuid.uuid4(), doc, payloads=((b"y" * 200, "s.pdf"),)),
                             caps=runs.Caps(max_staged_bytes=250), settings=QUEUE)
    assert not over.created and "would stage 300 bytes" in (over.over_capacity or "")
    fits = await flow.create(pool, _request(uuid.uuid4(), doc, payloads=((b"x" * 100, "t.pdf"),)),
                             caps=runs.Caps(max_staged_bytes=250), settings=QUEUE)
    assert fits.created  # the same bytes again are not new bytes


async def test_missing_digest_is_reported_not_created(pool: asyncpg.Pool) -> None:
    ghost = runs.StagedDocument("f" * 64, "ghost.pdf")
    result = await flow.create(pool, _request(uuid.uuid4(), ghost,
                                              required_digests=(ghost.digest,)), settings=QUEUE)
    assert not result.created and result.missing == (ghost.digest,)


async def test_cancel_drops_bytes_only_no_other_active_run_needs(pool: asyncpg.Pool) -> None:
    shared = await runs.stage_document(pool, b"%PDF shared", "shared.pdf")
    own = await runs.stage_document(pool, b"%PDF own", "own.pdf")
    first, second = uuid.uuid4(), uuid.uuid4()
    await flow.create(pool, runs.RunRequest(id=first, name="a", thesis=shared, sources=(own,)),
                      settings=QUEUE)
    await flow.create(pool, runs.RunRequest(id=second, name="b", thesis=shared, sources=()),
                      settings=QUEUE)
    await runs.cancel(pool, first, "test")
    kept = dict(await pool.fetch("SELECT filename, raw IS NOT NULL FROM documents"))
    assert kept == {"shared.pdf": True, "own.pdf": False}
    await runs.cancel(pool, second, "test", drop_bytes=False)
    assert await pool.fetchval("SELECT count(*) FROM documents WHERE raw IS NOT NULL") == 1


async def test_the_staging_ttl_drops_only_expired_unused_bytes(pool: asyncpg.Pool) -> None:
    await runs.stage_document(pool, b"%PDF old", "old.pdf")
    used = await runs.stage_document(pool, b"%PDF used", "used.pdf")
    await flow.create(pool, runs.RunRequest(id=uuid.uuid4(), name="r", thesis=used, sources=()),
                      settings=QUEUE)
    await runs.stage_document(pool, b"%PDF new", "new.pdf")
    await pool.execute("UPDATE documents SET staged_at = now() - interval '2 days' "
                       "WHERE filename IN ('old.pdf', 'used.pdf')")
    assert await runs.drop_expired_bytes(pool, 24 * 3600) == 1
    left = dict(await pool.fetch("SELECT filename, raw IS NOT NULL FROM documents"))
    assert left == {"old.pdf": False, "used.pdf": True, "new.pdf": True}
