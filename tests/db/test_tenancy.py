"""Tenancy at the database level (issue 12, attack 3 and 5): documents are referenced
only by the tenant that brought them, every byte counts against the tenant that brings
it, and pages and chunks go when no run of an owning tenant needs them."""

from __future__ import annotations

import uuid

import asyncpg

from citerun.core import flow, runs
from citerun.core.settings import QueueSettings

#: The queue settings the runs here are created with (the defaults).
QUEUE = QueueSettings()

PDF_A = b"%PDF-1.7 team-a's confidential thesis"
PDF_B = b"%PDF-1.7 team-b's own thesis"


def _request(tenant: str, thesis: runs.StagedDocument, **kw: object) -> runs.RunRequest:
    return runs.RunRequest(id=uuid.uuid4(), name="r", namespace=tenant, thesis=thesis,
                           sources=(), tenant=tenant, **kw)  # type: ignore[arg-type]


async def test_another_tenants_digest_is_refused_like_an_unknown_one(pool: asyncpg.Pool) -> None:
    doc = await runs.stage_document(pool, PDF_A, "a.pdf", tenant="team-a")
    stolen = await flow.create(pool, _request("team-b", doc, required_digests=(doc.digest,)),
                               settings=QUEUE)
    ghost = runs.StagedDocument("e" * 64, "ghost.pdf")
    unknown = await flow.create(pool, _request("team-b", ghost,
                                               required_digests=(ghost.digest,)), settings=QUEUE)
    assert not stolen.created and stolen.missing == (doc.digest,)
    assert not unknown.created and unknown.missing == (ghost.digest,)
    assert await pool.fetchval("SELECT count(*) FROM runs") == 0
    # The owner may use it.
    assert (await flow.create(pool, _request("team-a", doc, required_digests=(doc.digest,)),
                              settings=QUEUE)).created


async def test_bytes_count_against_each_tenant_that_brings_them(pool: asyncpg.Pool) -> None:
    await runs.stage_document(pool, b"%PDF-" + b"a" * 995, "big.pdf", tenant="team-a")
    thesis = await runs.stage_document(pool, PDF_B, "b.pdf", tenant="team-b")
    # team-b brings the same 1000 bytes team-a already stored: they are new to team-b.
    over = await flow.create(
        pool, _request("team-b", thesis, payloads=((b"%PDF-" + b"a" * 995, "big.pdf"),)),
        caps=runs.Caps(max_staged_bytes=1000), settings=QUEUE)
    assert not over.created and "team-b" in (over.over_capacity or "")


async def test_forged_tenant_column_is_what_the_caller_passes_namespace(
        pool: asyncpg.Pool) -> None:
    thesis = await runs.stage_document(pool, PDF_B, "b.pdf", tenant="team-b")
    caps = runs.Caps(max_active_runs=1)
    assert (await flow.create(pool, _request("team-b", thesis), caps=caps, settings=QUEUE)).created
    held = await flow.create(pool, _request("team-b", thesis), caps=caps, settings=QUEUE)
    assert not held.created and "team-b" in (held.over_capacity or "")


async def _parsed(pool: asyncpg.Pool, digest: str) -> None:
    await pool.execute("UPDATE documents SET state = 'parsed', raw = NULL, title = 'T' "
                       "WHERE digest = $1", digest)
    await pool.execute("INSERT INTO document_pages (digest, number, text) VALUES ($1, 1, 'x')",
                       digest)
    await pool.execute("INSERT INTO chunks (digest, ordinal, page_start, page_end, text, "
                       "embedding, embedding_model, embedding_dim) VALUES ($1, 0, 1, 1, 'x', "
                       "array_fill(0.1, ARRAY[256])::vector, 'test-model@256', 256)", digest)


async def test_pages_and_chunks_go_when_no_run_of_an_owner_needs_them(
        pool: asyncpg.Pool) -> None:
    digest = runs.digest_of(PDF_A)
    doc = runs.StagedDocument(digest, "a.pdf")
    # team-a's runs bring the bytes themselves (a ConfigMap, say); team-c uploaded them.
    first = _request("team-a", doc, payloads=((PDF_A, "a.pdf"),))
    second = _request("team-a", doc, payloads=((PDF_A, "a.pdf"),))
    for request in (first, second):
        assert (await flow.create(pool, request, settings=QUEUE)).created
    await runs.stage_document(pool, PDF_A, "a.pdf", tenant="team-c")
    await _parsed(pool, digest)

    await runs.finish(pool, first.id, "succeeded")  # second still needs it
    assert await pool.fetchval("SELECT count(*) FROM document_pages") == 1
    await runs.finish(pool, second.id, "succeeded")  # team-c's upload still owns it
    owners = {r["tenant"] for r in await pool.fetch("SELECT tenant FROM document_owners")}
    assert owners == {"team-c"}
    assert await pool.fetchval("SELECT count(*) FROM chunks") == 1
    # team-a may not use it any more without bringing the bytes again.
    again = await flow.create(pool, _request("team-a", doc, required_digests=(digest,)),
                              settings=QUEUE)
    assert again.missing == (digest,)

    # team-c's upload outlives its runs, until the staging TTL passes unused.
    third = _request("team-c", doc, required_digests=(digest,))
    assert (await flow.create(pool, third, settings=QUEUE)).created
    await runs.finish(pool, third.id, "failed", "x")
    assert await pool.fetchval("SELECT count(*) FROM document_pages") == 1
    await pool.execute("UPDATE document_owners SET owned_at = now() - interval '2 days'")
    await runs.drop_expired_bytes(pool, 24 * 3600)
    assert await pool.fetchval("SELECT count(*) FROM document_owners") == 0
    assert await pool.fetchval("SELECT count(*) FROM document_pages") == 0
    assert await pool.fetchval("SELECT count(*) FROM chunks") == 0
    state = await pool.fetchrow("SELECT state, raw, title FROM documents")
    assert dict(state) == {"state": "staged", "raw": None, "title": None}


async def test_an_upload_outlives_a_run_so_a_waiting_run_still_finds_it(
        pool: asyncpg.Pool) -> None:
    doc = await runs.stage_document(pool, PDF_B, "b.pdf", tenant="team-b")
    first = _request("team-b", doc, required_digests=(doc.digest,))
    assert (await flow.create(pool, first, settings=QUEUE)).created
    await runs.finish(pool, first.id, "succeeded")
    later = await flow.create(pool, _request("team-b", doc, required_digests=(doc.digest,)),
                              settings=QUEUE)
    assert later.created and not later.missing


async def test_a_runs_own_judge_key_is_deleted_when_it_finishes(pool: asyncpg.Pool) -> None:
    doc = await runs.stage_document(pool, PDF_B, "b.pdf", tenant="team-b")
    request = _request("team-b", doc, judge_api_key="sk-run-key")
    assert "sk-run-key" not in repr(request)
    assert (await flow.create(pool, request, settings=QUEUE)).created
    assert await pool.fetchval("SELECT judge_api_key FROM run_secrets") == "sk-run-key"
    await runs.finish(pool, request.id, "succeeded")
    assert await pool.fetchval("SELECT count(*) FROM run_secrets") == 0


async def test_url_downloads_count_against_the_cap_the_run_was_admitted_with(
        pool: asyncpg.Pool) -> None:
    from citerun.core import sql

    over_cap = sql.load("citerun.worker", "fetching.sql")["tenant_over_byte_cap"]
    thesis = await runs.stage_document(pool, b"%PDF-" + b"t" * 95, "t.pdf", tenant="team-a")
    request = _request("team-a", thesis, required_digests=(thesis.digest,))
    assert (await flow.create(pool, request, caps=runs.Caps(max_staged_bytes=300),
                              settings=QUEUE)).created
    # 100 bytes held; a 250-byte download would make 350.
    assert await pool.fetchval(over_cap, request.id, 250, "a" * 64) is True
    assert await pool.fetchval(over_cap, request.id, 150, "a" * 64) is False
    # Bytes the tenant already owns are not new.
    assert await pool.fetchval(over_cap, request.id, 250, thesis.digest) is False
