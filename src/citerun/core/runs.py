"""Runs: staging documents, creating a run idempotently, locking and finishing it.

A run is created in one transaction with its documents and its first tasks, keyed by
the run id (a CitationRun's uid on a cluster), so a retried or duplicated create
changes nothing. This module knows no stage of the pipeline: which tasks a run starts
with and which follow is :mod:`citerun.core.flow`'s, handed in as ``start``. Transitions
that involve several tasks lock the run's row first (:func:`lock`,
:func:`lock_by_documents`), so two tasks finishing at once cannot both miss, or both
take, the transition. See ``docs/architecture.md``.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg

import citerun
from citerun.core import db, errors, queue, sql
from citerun.core.states import RunState

_Q = sql.load("citerun.core", "runs.sql")

#: The readers' version (the parse children's code: ``pipeline.pdf``, ``pipeline.writer``),
#: recorded with a document's refusal (:func:`fail_document`): the same bytes staged under
#: another version are parsed again, once no running run holds the refusal (issue 48). The
#: package's version, so a release tries again what an older one refused.
PARSER_VERSION: str = citerun.__version__

#: Enqueues a new run's first tasks; called inside the create transaction with the run's
#: row locked (see :meth:`citerun.core.flow.Flow.start`).
StartHook = Callable[[asyncpg.Connection, "RunRequest"], Awaitable[None]]


class RunError(errors.CiterunError):
    """The run could not be created or changed."""


@dataclass(frozen=True)
class StagedDocument:
    digest: str
    filename: str
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class FetchRequest:
    """A document a worker downloads for the run (it has no digest until then)."""

    url: str
    filename: str
    role: str = "source"
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Caps:
    """Per-tenant admission limits (None: unlimited)."""

    max_active_runs: int | None = None
    max_staged_bytes: int | None = None


@dataclass(frozen=True)
class Admission:
    created: bool
    over_capacity: str | None = None
    missing: tuple[str, ...] = ()  # required digests that are not stored


@dataclass(frozen=True)
class RunRequest:
    """Everything needed to start a run."""

    id: uuid.UUID
    name: str
    thesis: StagedDocument
    sources: tuple[StagedDocument, ...]
    spec: dict[str, Any] = field(default_factory=dict)
    tenant: str = "default"
    namespace: str | None = None
    generation: int = 1
    priority: int = 0
    resource_uid: uuid.UUID | None = None
    fetches: tuple[FetchRequest, ...] = ()
    # Bytes to stage in the same transaction as the run (ConfigMap/Secret documents).
    payloads: tuple[tuple[bytes, str], ...] = ()
    # Digests that must already be stored (documents referenced by digest).
    required_digests: tuple[str, ...] = ()
    # The run's own judge API key (spec.judge.openai.apiKeySecretRef), after the access check.
    judge_api_key: str | None = field(default=None, repr=False)


def run_id_for(uid: str, generation: int) -> uuid.UUID:
    """The run of one generation of a CitationRun: the uid itself for generation 1 (so
    whoever created the resource, the operator or the web service, knows the run's id
    from the uid alone); a name-based uuid of the uid for later generations."""
    base = uuid.UUID(uid)
    return base if generation <= 1 else uuid.uuid5(base, f"generation-{generation}")


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


#: Bytes beyond which :func:`digest_off_loop` hashes in a thread.
HASH_IN_THREAD_BYTES = 1 << 20


async def digest_off_loop(data: bytes) -> str:
    """:func:`digest_of`, in a thread for large data: hashing a 110 MB upload on the event
    loop held every other request of the web service up (issue 48)."""
    if len(data) < HASH_IN_THREAD_BYTES:
        return digest_of(data)
    return await asyncio.to_thread(digest_of, data)


async def stage_document(conn: asyncpg.Connection | asyncpg.Pool, data: bytes, filename: str,
                         *, tenant: str = "default", via: str = "upload") -> StagedDocument:
    """Store a PDF's bytes under its sha256 (a document seen before is reused); the
    tenant owns the digest from now on (see src/citerun/core/migrations/0003_tenancy.sql), by
    upload or for a run (``via`` ``"run"``: a downloaded source)."""
    digest = await digest_off_loop(data)
    if isinstance(conn, asyncpg.Pool):
        async with conn.acquire() as one:
            await store_under(one, digest, filename, data, tenant, via)
    else:
        await store_under(conn, digest, filename, data, tenant, via)
    return StagedDocument(digest, filename)


#: A document larger than this is sent to Postgres in pieces of this size, put together by
#: the statement that stages it (``document_pieces``, migration 0025): the driver encoded
#: and wrote a 110 MB parameter on the event loop in one go, a third of a second in which
#: the web service answered nothing else (issue 48). A piece costs a round trip.
PIECE_BYTES = 1 << 20


async def store_under(conn: asyncpg.Connection, digest: str, filename: str, data: bytes,
                      tenant: str, via: str) -> None:
    """:func:`stage_document` under a digest the caller gives (a bench keys its corpus by
    document id)."""
    if len(data) <= PIECE_BYTES:
        await conn.fetchval(_Q["document_stage"], digest, filename, len(data), data, tenant,
                            via, PARSER_VERSION, None)
        return
    upload = uuid.uuid4()
    view = memoryview(data)
    async with conn.transaction():
        for seq, start in enumerate(range(0, len(data), PIECE_BYTES)):
            await conn.execute(_Q["document_piece_insert"], upload, seq,
                               view[start:start + PIECE_BYTES])
        await conn.fetchval(_Q["document_stage"], digest, filename, len(data), None, tenant,
                            via, PARSER_VERSION, upload)


async def create(pool: asyncpg.Pool, request: RunRequest, *, start: StartHook,
                 caps: Caps | None = None) -> Admission:
    """Admit and create the run with its first tasks (``start``) in one transaction.

    Idempotent by run id: an existing run is left alone (``created=False``). With
    ``caps``, the tenant's active runs and staged bytes are checked under a per-tenant
    advisory lock, so two operators admitting at once cannot overshoot; a run over a cap
    is not created and ``over_capacity`` says why.

    The transaction is run again when Postgres aborts it for a conflict (a deadlock with
    a cancel letting go of the same documents: :func:`db.retrying_conflicts`); the
    documents are staged in the order of their digests, as every create stages them.
    """
    # Hashed once, outside the transaction and its retries.
    payloads = sorted([(await digest_off_loop(data), data, filename)
                       for data, filename in request.payloads], key=lambda p: p[0])
    return await db.retrying_conflicts(
        f"creating run {request.id}",
        lambda: _create(pool, request, payloads, start=start, caps=caps))


async def _create(pool: asyncpg.Pool, request: RunRequest,
                  payloads: list[tuple[str, bytes, str]], *, start: StartHook,
                  caps: Caps | None) -> Admission:
    async with pool.acquire() as conn, conn.transaction():
        if await conn.fetchrow(_Q["run_get"], request.id) is not None:
            return Admission(created=False)
        if request.required_digests:
            # Only digests this tenant owns: another tenant's document is "missing" in
            # exactly the words a digest nobody stored gets.
            owned = {r["digest"] for r in await conn.fetch(
                _Q["documents_owned_touch"], request.tenant, list(request.required_digests))}
            missing = sorted(set(request.required_digests) - owned)
            if missing:
                return Admission(created=False, missing=tuple(missing))
        if caps is not None:
            reason = await _over_capacity(conn, request, payloads, caps)
            if reason is not None:
                return Admission(created=False, over_capacity=reason)
        for digest, data, filename in payloads:
            await store_under(conn, digest, filename, data, request.tenant, "run")
        created = await conn.fetchval(
            _Q["run_insert"], request.id, request.name, request.namespace, request.tenant,
            request.generation, request.spec, request.priority, request.resource_uid,
            caps.max_staged_bytes if caps is not None else None)
        if created is None:
            return Admission(created=False)
        if request.judge_api_key is not None:
            await conn.execute(_Q["run_secret_insert"], request.id, request.judge_api_key)
        rows = [(request.id, request.thesis.digest, "thesis", request.thesis.filename,
                 list(request.thesis.keys))] if request.thesis.digest else []
        rows += [(request.id, s.digest, "source", s.filename, list(s.keys))
                 for s in request.sources]
        await conn.executemany(_Q["run_source_insert"], rows)
        await conn.fetchrow(_Q["run_lock"], request.id)
        await start(conn, request)
        await conn.execute(_Q["run_touch"], request.id)
    return Admission(created=True)


async def _over_capacity(conn: asyncpg.Connection, request: RunRequest,
                         payloads: list[tuple[str, bytes, str]], caps: Caps) -> str | None:
    await conn.execute(_Q["tenant_admission_lock"], request.tenant)
    usage = await conn.fetchrow(_Q["tenant_usage"], request.tenant)
    if caps.max_active_runs is not None and usage["active_runs"] >= caps.max_active_runs:
        return (f"tenant {request.tenant!r} has {usage['active_runs']} active run(s), "
                f"the cap is {caps.max_active_runs}")
    if caps.max_staged_bytes is not None:
        owned = {r["digest"] for r in await conn.fetch(
            _Q["documents_owned"], request.tenant, [digest for digest, _, _ in payloads])}
        new_bytes = sum(len(data) for digest, data, _ in payloads if digest not in owned)
        if usage["staged_bytes"] + new_bytes > caps.max_staged_bytes:
            return (f"tenant {request.tenant!r} would stage {usage['staged_bytes'] + new_bytes} "
                    f"bytes, the cap is {caps.max_staged_bytes}")
    return None


async def documents_pending(conn: asyncpg.Connection, run_id: uuid.UUID) -> list[str]:
    """Digests of the run's documents that are neither parsed nor failed."""
    return [r["digest"] for r in await conn.fetch(_Q["run_documents_pending"], run_id)]


async def fail_for_run(conn: asyncpg.Connection, run_id: uuid.UUID, digest: str,
                       reason: str, error: str) -> None:
    """The run cannot use the document for a reason of the moment; the document stays as
    it is (staged, its bytes kept), so another run parses it again."""
    await conn.execute(_Q["run_source_fail"], run_id, digest, reason, error[:2000])


async def tasks_open(conn: asyncpg.Connection, run_id: uuid.UUID, kinds: Sequence[str]) -> bool:
    """Whether the run has a queued or running task of one of ``kinds``."""
    return bool(await conn.fetchval(_Q["run_tasks_open"], run_id, list(kinds)))


async def lock_by_documents(conn: asyncpg.Connection,
                            digests: Sequence[str]) -> list[tuple[uuid.UUID, int]]:
    """Lock every running run that uses one of ``digests`` (in id order, so two callers
    cannot deadlock); return their ids and priorities."""
    return [(r["id"], r["priority"])
            for r in await conn.fetch(_Q["run_lock_by_documents"], list(digests))]


async def fail_document(conn: asyncpg.Connection, digest: str, reason: str,
                        error: str) -> None:
    """Record why a document cannot be used (unless it was parsed meanwhile) and drop its
    staged bytes. A refusal by the readers is remembered with their version
    (:data:`PARSER_VERSION`); ``missing`` bytes are no refusal: staged again, they are
    parsed."""
    await conn.execute(_Q["document_mark_failed"], digest, reason, error[:2000],
                       None if reason == "missing" else PARSER_VERSION)


async def finish(conn: asyncpg.Connection | asyncpg.Pool, run_id: uuid.UUID, state: RunState,
                 error: str | None = None, *, release: bool = True) -> None:
    """Move the run to ``state`` (succeeded, failed, cancelled) and notify.

    With ``release``, the run's tenant stops owning the documents no other active run of
    the tenant needs, and documents nobody owns lose their bytes, pages and chunks; the
    run's own judge key is deleted either way.
    """
    await conn.execute(_Q["run_finish"], run_id, state, error)
    await conn.execute(_Q["run_secret_delete"], run_id)
    if release:
        released = [r["digest"] for r in await conn.fetch(_Q["run_release_documents"], run_id)]
        await erase_unowned(conn, released)


async def erase_unowned(conn: asyncpg.Connection | asyncpg.Pool, digests: Sequence[str]) -> None:
    """Of ``digests``, the documents no tenant owns and no active run uses lose their
    bytes, pages and chunks and go back to 'staged'; a failed document stays failed."""
    if digests:
        await conn.execute(_Q["documents_erase_unowned"], list(digests))


async def touch(conn: asyncpg.Connection, run_id: uuid.UUID) -> None:
    """Tell ``citerun_runs`` listeners that the run's progress changed."""
    await conn.execute(_Q["run_touch"], run_id)


async def lock(conn: asyncpg.Connection, run_id: uuid.UUID) -> asyncpg.Record | None:
    return await conn.fetchrow(_Q["run_lock"], run_id)


async def get(conn: asyncpg.Connection | asyncpg.Pool, run_id: uuid.UUID) -> asyncpg.Record | None:
    return await conn.fetchrow(_Q["run_get"], run_id)


async def progress(conn: asyncpg.Connection | asyncpg.Pool,
                   run_id: uuid.UUID) -> asyncpg.Record | None:
    """State and counts of a run (citations, judged, per verdict, open tasks)."""
    return await conn.fetchrow(_Q["run_progress"], run_id)


async def report(conn: asyncpg.Connection | asyncpg.Pool,
                 run_id: uuid.UUID) -> asyncpg.Record | None:
    return await conn.fetchrow(_Q["report_get"], run_id)


async def active_of_resource(conn: asyncpg.Connection | asyncpg.Pool,
                             resource_uid: uuid.UUID) -> list[uuid.UUID]:
    """The unfinished runs of one CitationRun."""
    return [r["id"] for r in await conn.fetch(_Q["run_active_of_resource"], resource_uid)]


async def active_with_resource(conn: asyncpg.Connection | asyncpg.Pool) -> list[asyncpg.Record]:
    """Unfinished runs that belong to a CitationRun."""
    return list(await conn.fetch(_Q["run_active_with_resource"]))


async def cancel(pool: asyncpg.Pool, run_id: uuid.UUID, reason: str, *,
                 drop_bytes: bool = True) -> list[int]:
    """Cancel a run: its open tasks, its state, and (with ``drop_bytes``) the staged bytes
    only it needed. A run replaced by a new generation keeps them for its successor.
    Run again when Postgres aborts it for a conflict (:func:`db.retrying_conflicts`)."""
    async def transaction() -> list[int]:
        async with pool.acquire() as conn, conn.transaction():
            await conn.fetchrow(_Q["run_lock"], run_id)
            cancelled = await queue.cancel_run(conn, run_id, reason)
            await finish(conn, run_id, RunState.CANCELLED, reason, release=drop_bytes)
            if drop_bytes:
                await conn.fetch(_Q["run_drop_staged_bytes"], run_id)
        return cancelled

    return await db.retrying_conflicts(f"cancelling run {run_id}", transaction)


async def drop_expired_bytes(conn: asyncpg.Connection | asyncpg.Pool, ttl_s: float) -> int:
    """The staging TTL, a safety net: drop bytes staged over ``ttl_s`` ago that no active
    run needs (uploads never used, runs replaced and never restarted); end ownership by
    upload unused for ``ttl_s`` and erase the documents nobody owns any more."""
    dropped = len(await conn.fetch(_Q["document_drop_expired_bytes"], ttl_s))
    expired = [r["digest"] for r in await conn.fetch(_Q["owners_expire_uploads"], ttl_s)]
    await erase_unowned(conn, expired)
    return dropped
