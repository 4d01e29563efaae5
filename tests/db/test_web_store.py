"""The web service's listings (``citerun.web.store``): one query serves a user's own runs
and the runs shared with them, by role, with the same columns either way."""

from __future__ import annotations

import uuid

import asyncpg

from citerun.web import store


async def _submission(pool: asyncpg.Pool, owner: str, name: str, minutes_ago: int) -> uuid.UUID:
    """A user's run as the cluster backend records it before the operator admits it."""
    run_id = uuid.uuid4()
    await pool.execute(
        "INSERT INTO web_runs (run_id, owner, name, created_at) "
        "VALUES ($1, $2, $3, now() - make_interval(mins => $4))",
        run_id, owner, name, minutes_ago)
    return run_id


async def test_own_and_shared_runs_come_from_one_listing(pool: asyncpg.Pool) -> None:
    older = await _submission(pool, "alice", "older", 10)
    newer = await _submission(pool, "alice", "newer", 1)
    theirs = await _submission(pool, "bob", "bobs", 5)
    assert await store.share(pool, older, "alice", "carol")
    assert await store.share(pool, theirs, "bob", "carol")

    own = await store.runs_of(pool, "alice", 10)
    assert [r["id"] for r in own] == [newer, older]  # the newest first
    assert [r["id"] for r in await store.runs_of(pool, "alice", 1)] == [newer]
    assert await store.runs_of(pool, "carol", 10) == []

    shared = await store.shared_with(pool, "carol", 10)
    assert [(r["id"], r["owner"]) for r in shared] == [(theirs, "bob"), (older, "alice")]
    assert await store.shared_with(pool, "alice", 10) == []
    assert list(own[0].keys()) == list(shared[0].keys())
    row = dict(own[0])
    assert (row["state"], row["pending"], row["documents"], row["citations"]) == (
        "running", True, 0, 0)


async def test_the_listing_answers_alike_under_a_generic_plan(pool: asyncpg.Pool) -> None:
    """asyncpg prepares the statement; after five runs Postgres may plan it once for any
    role: the role still picks the rows."""
    mine = await _submission(pool, "alice", "mine", 2)
    shared = await _submission(pool, "bob", "shared", 3)
    assert await store.share(pool, shared, "bob", "alice")
    async with pool.acquire() as conn:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        for _ in range(3):
            assert [r["id"] for r in await store.runs_of(conn, "alice", 10)] == [mine]
            assert [r["id"] for r in await store.shared_with(conn, "alice", 10)] == [shared]
        await conn.execute("RESET plan_cache_mode")
