"""Issue 48, low finding: the 20-reader share cap raced. The insert counted a run's
readers in its own snapshot, so shares sent at once each saw fewer than 20 and all went
in: 60 concurrent shares left 22 readers.

Real Postgres, the web's own call (``store.share``, what the share routes run) from 60
concurrent requests on 30 connections, five runs over: each run ends with exactly
``MAX_READERS`` readers, 20 shares answered yes and 40 no; a reader already there is
still a yes at the cap, and another owner's run takes none.
"""

from __future__ import annotations

import asyncio
import uuid

import asyncpg

from citerun.core import db
from citerun.web import store

SHARES = 60
ROUNDS = 5


async def _run_of(pool: asyncpg.Pool, owner: str) -> uuid.UUID:
    run_id = uuid.uuid4()
    await pool.execute("INSERT INTO web_runs (run_id, owner, name) VALUES ($1, $2, 'thesis')",
                       run_id, owner)
    return run_id


async def test_sixty_concurrent_shares_leave_at_most_twenty_readers(database_url: str) -> None:
    pool = await db.create_pool(database_url, min_size=30, max_size=30)
    try:
        counts = []
        for _ in range(ROUNDS):
            run_id = await _run_of(pool, "alice")
            answers = await asyncio.gather(*(
                store.share(pool, run_id, "alice", f"reader{n}") for n in range(SHARES)))
            readers = await store.readers_of(pool, run_id)
            counts.append(len(readers))
            assert sum(answers) == len(readers)
            assert {f"reader{n}" for n, yes in enumerate(answers) if yes} == set(readers)
        print(f"readers after {SHARES} concurrent shares, {ROUNDS} runs: {counts}")
        # (before: [31, 31, 31, 35, 38], over the cap in every run)
        assert counts == [store.MAX_READERS] * ROUNDS
        # At the cap: a reader already there is a yes, a new one a no, a stranger none.
        assert await store.share(pool, run_id, "alice", readers[0])
        assert not await store.share(pool, run_id, "alice", "one-more")
        assert not await store.share(pool, run_id, "mallory", "mallory2")
        assert len(await store.readers_of(pool, run_id)) == store.MAX_READERS
    finally:
        await pool.close()
