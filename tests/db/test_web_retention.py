"""Issue 47: ``web.keep_days`` is enforced. The service deletes its users' runs that ended
over ``keep_days`` ago as their owner's Delete would (:func:`citerun.web.deletion.expire`):
the run, its rows, its shares and its uploaded documents that nothing else uses; a run
that ended lately, one still running, and a document another run still uses stay.
Before: nothing deleted a web user's run, ever (the cleaner runs with the operator only)."""

from __future__ import annotations

import asyncpg

from citerun.core import runs
from citerun.core.settings import Settings
from citerun.web import deletion, store
from citerun.web.backend import LocalBackend, Upload

CAPS = store.UserCaps(10, 10**9)


def _pdf(tag: str) -> bytes:
    return b"%PDF-1.4\n% " + tag.encode() + b"\n" + b"x" * 200


async def _count(pool: asyncpg.Pool, sql: str, *args: object) -> int:
    return int(await pool.fetchval(sql, *args))


async def test_runs_past_keep_days_are_deleted_with_their_files(pool: asyncpg.Pool) -> None:
    backend = LocalBackend(pool, Settings(), CAPS)
    shared_source = Upload("shared.pdf", _pdf("shared source"))
    old = await backend.submit("alice", Upload("old.pdf", _pdf("old thesis")), [shared_source])
    recent = await backend.submit("alice", Upload("recent.pdf", _pdf("recent thesis")),
                                  [shared_source])
    running = await backend.submit("bob", Upload("running.pdf", _pdf("running thesis")), [])
    assert await store.share(pool, old, "alice", "carol")
    for run_id in (old, recent):
        await runs.cancel(pool, run_id, "cancelled for the test")
    await pool.execute("UPDATE runs SET finished_at = now() - interval '31 days' "
                       "WHERE id = $1", old)
    old_thesis = await pool.fetchval("SELECT digest FROM run_sources WHERE run_id = $1 "
                                     "AND role = 'thesis'", old)

    assert await deletion.expire(pool, backend, keep_days=30) == 1
    assert await _count(pool, "SELECT count(*) FROM runs WHERE id = $1", old) == 0
    assert await _count(pool, "SELECT count(*) FROM web_runs WHERE run_id = $1", old) == 0
    assert await _count(pool, "SELECT count(*) FROM web_shares WHERE run_id = $1", old) == 0
    assert await store.shared_with(pool, "carol", 10) == []
    assert await _count(pool, "SELECT count(*) FROM documents WHERE digest = $1",
                        old_thesis) == 0
    # The source the recent run uses too stays, as do the recent and the running run.
    assert await _count(pool, "SELECT count(*) FROM documents WHERE digest = $1",
                        shared_source.digest) == 1
    assert {r["id"] for r in await store.runs_of(pool, "alice", 10)} == {recent}
    assert [r["id"] for r in await store.runs_of(pool, "bob", 10)] == [running]
    assert await deletion.expire(pool, backend, keep_days=30) == 0

    # The owner's own Delete: a running run is refused, another user's is not found.
    assert await deletion.delete(pool, backend, running, "bob") == \
        "the run is still running: cancel it first"
    assert await deletion.delete(pool, backend, recent, "bob") == "not found"
    assert await deletion.delete(pool, backend, recent, "alice") is None
    assert await _count(pool, "SELECT count(*) FROM documents WHERE digest = $1",
                        shared_source.digest) == 0
