"""Issue 48, low finding: concurrent staging and cancels deadlocked in Postgres and the web
answered 500, with no retry. Staging a document locks its ``documents`` row, then its
``document_owners`` row; a cancel (and any run's end) lets go of the owners' rows first,
then of the documents' bytes: the other way round. Postgres breaks such a cycle by
aborting one transaction, and nobody ran it again.

Real Postgres and the web's own calls (``LocalBackend.submit`` and ``.cancel``). Each
cycle is made to happen, not hoped for: another transaction takes the other order's
first lock, waits until the web's call waits on it, then asks for what the call holds;
its ``deadlock_timeout`` is long, so the web's call is the one Postgres aborts. Before:
``DeadlockDetectedError`` out of ``submit`` and ``cancel`` (the web's 500). Now each is
run again (``db.retrying_conflicts``, one retry policy) and ends as asked once the other
transaction is gone. ``tests/e2e/test_web_deadlock_retry.py`` runs the pattern of the
finding through the service.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable

import asyncpg

from citerun.core import db
from citerun.core.settings import Settings
from citerun.web import backend, store
from tests.support.web_user import SOURCES, THESIS

CAPS = store.UserCaps(max_active_runs=10, max_staged_bytes=100 << 20)


def _uploads() -> tuple[backend.Upload, list[backend.Upload]]:
    return (backend.Upload(THESIS.name, THESIS.read_bytes()),
            [backend.Upload(p.name, p.read_bytes()) for p in SOURCES])


async def _when_waiting(pool: asyncpg.Pool, other_pid: int, call: Awaitable[object]
                        ) -> asyncio.Task[object]:
    """``call`` started, returned once its backend waits for a lock (held by ``other``)."""
    task = asyncio.ensure_future(call)
    deadline = time.monotonic() + 10
    while not await pool.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND pid <> $1 AND datname = current_database()", other_pid):
        assert not task.done(), task
        assert time.monotonic() < deadline, "the call never waited"
        await asyncio.sleep(0.005)
    return task


async def _other(database_url: str) -> asyncpg.Connection:
    """Another transaction, which Postgres never picks to abort (its check comes last)."""
    conn = await asyncpg.connect(database_url)
    await conn.execute("SET deadlock_timeout = '60s'")
    await conn.execute("BEGIN")
    return conn


async def test_a_staging_that_deadlocks_with_a_release_is_run_again(
        database_url: str) -> None:
    pool = await db.create_pool(database_url, min_size=2, max_size=4)
    local = backend.LocalBackend(pool, Settings(), CAPS)
    thesis, sources = _uploads()
    # Two documents an upload stages one after the other, whichever order it takes
    # (as given, or by digest).
    given = [u.digest for u in (thesis, *sources)]
    first, second = next((a, b) for n, a in enumerate(given) for b in given[n + 1:] if a < b)
    try:
        await local.submit("alice", thesis, sources)  # the documents exist, owned
        other = await _other(database_url)
        try:
            # A run's end letting go: an owner's row first (the second document's) ...
            await other.execute("DELETE FROM document_owners WHERE digest = $1", second)
            started = time.monotonic()
            # ... while a new upload stages the first document and waits for the second's
            upload = await _when_waiting(pool, other.get_server_pid(),
                                         local.submit("bob", thesis, sources))
            # ... then the first document's bytes, which the upload holds: a cycle.
            await other.execute("UPDATE documents SET raw = NULL WHERE digest = $1", first)
            await other.execute("COMMIT")
        finally:
            await other.close()
        # (before: asyncpg.exceptions.DeadlockDetectedError: deadlock detected)
        run_id = await upload
        print(f"the upload, aborted once by Postgres, staged in {time.monotonic() - started:.2f} s")
        assert isinstance(run_id, uuid.UUID)
        assert await pool.fetchval("SELECT state FROM runs WHERE id = $1", run_id) == "running"
        assert await pool.fetchval(
            "SELECT count(*) FROM document_owners WHERE digest = ANY($1::text[])",
            [first, second]) == 2
    finally:
        await pool.close()


async def test_a_cancel_that_deadlocks_with_a_staging_is_run_again(
        database_url: str) -> None:
    pool = await db.create_pool(database_url, min_size=2, max_size=4)
    local = backend.LocalBackend(pool, Settings(), CAPS)
    thesis, sources = _uploads()
    first = min(u.digest for u in (thesis, *sources))
    try:
        run_id = await local.submit("alice", thesis, sources)
        other = await _other(database_url)
        try:
            # An upload staging the first document (its row locked) ...
            await other.execute("UPDATE documents SET filename = filename WHERE digest = $1",
                                first)
            # ... while the run is cancelled: its owners' rows go, then its bytes wait ...
            cancel = await _when_waiting(pool, other.get_server_pid(), local.cancel(run_id))
            # ... and the upload goes on to the first document's owner: a cycle.
            await other.execute(
                "UPDATE document_owners SET owned_at = now() WHERE digest = $1", first)
            await other.execute("COMMIT")
        finally:
            await other.close()
        # (before: asyncpg.exceptions.DeadlockDetectedError: deadlock detected)
        await cancel
        assert await pool.fetchval("SELECT state FROM runs WHERE id = $1", run_id) == "cancelled"
    finally:
        await pool.close()


async def test_a_conflict_is_retried_a_few_times_then_is_the_callers() -> None:
    attempts = 0

    async def always() -> None:
        nonlocal attempts
        attempts += 1
        raise asyncpg.DeadlockDetectedError("deadlock detected")

    try:
        await db.retrying_conflicts("a transaction that always deadlocks", always)
    except asyncpg.DeadlockDetectedError:
        pass
    else:
        raise AssertionError("not raised")
    assert attempts == db.CONFLICT_RETRY.max_attempts
