"""The queue protocol against a real Postgres, statement by statement."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from citerun.core import db, queue, retry

NO_BACKOFF = retry.RetryPolicy(base_s=0, cap_s=0)


async def _claim(pool: asyncpg.Pool, worker: str = "w1", limit: int = 10,
                 lease_s: float = 30, kinds: tuple[str, ...] = ("k",)) -> list[queue.ClaimedTask]:
    return await queue.claim(pool, worker_id=worker, kinds=kinds, limit=limit, lease_s=lease_s)


async def test_notify_is_sent_only_when_the_enqueue_commits(pool: asyncpg.Pool,
                                                            database_url: str) -> None:
    heard: list[str] = []
    listener = await db.connect(database_url)
    await listener.add_listener(queue.TASKS_CHANNEL, lambda *a: heard.append(a[3]))
    async with pool.acquire() as conn:
        tx = conn.transaction()
        await tx.start()
        await queue.enqueue(conn, [queue.NewTask("k")])
        await asyncio.sleep(0.2)
        assert heard == []
        await tx.rollback()
        await asyncio.sleep(0.2)
        assert heard == [] and await conn.fetchval("SELECT count(*) FROM tasks") == 0
        await queue.enqueue(conn, [queue.NewTask("k"), queue.NewTask("k")])
    for _ in range(50):
        if heard:
            break
        await asyncio.sleep(0.05)
    assert heard == ["k"]
    await listener.close()


async def test_claim_takes_a_batch_in_priority_order_and_respects_run_after(
        pool: asyncpg.Pool) -> None:
    ids = await queue.enqueue(pool, [
        queue.NewTask("k", {"n": 1}, priority=5),
        queue.NewTask("k", {"n": 2}, priority=1),
        queue.NewTask("k", {"n": 3}, priority=1, delay_s=3600),
        queue.NewTask("other", {"n": 4}, priority=0),
    ])
    assert len(ids) == 4
    claimed = await _claim(pool, limit=10)
    assert [t.payload["n"] for t in claimed] == [2, 1]
    assert all(t.attempt == 1 for t in claimed)
    assert await _claim(pool) == []


async def test_concurrent_claims_never_share_a_task(pool: asyncpg.Pool) -> None:
    await queue.enqueue(pool, [queue.NewTask("k", {"i": i}) for i in range(300)])
    batches = await asyncio.gather(*(_claim(pool, worker=f"w{i}", limit=7) for i in range(8)))
    while any(batches[-8:]):
        more = await asyncio.gather(*(_claim(pool, worker=f"w{i}", limit=7) for i in range(8)))
        batches.extend(more)
    ids = [t.id for batch in batches for t in batch]
    assert len(ids) == 300 == len(set(ids))


async def test_dedupe_key_skips_a_second_enqueue(pool: asyncpg.Pool) -> None:
    first = await queue.enqueue(pool, [queue.NewTask("k", dedupe_key="run1:parse:abc")])
    second = await queue.enqueue(pool, [queue.NewTask("k", dedupe_key="run1:parse:abc"),
                                        queue.NewTask("k", dedupe_key="run1:parse:def")])
    assert len(first) == 1 and len(second) == 1
    assert await pool.fetchval("SELECT count(*) FROM tasks") == 2


async def test_a_stale_writer_is_fenced_out_after_reclaim(pool: asyncpg.Pool) -> None:
    await queue.enqueue(pool, [queue.NewTask("k")])
    [stale] = await _claim(pool, worker="old", lease_s=0.1)
    await asyncio.sleep(0.3)
    swept = await queue.sweep_stalled(pool, backoff=NO_BACKOFF)
    assert swept.requeued == (stale.id,)
    [fresh] = await _claim(pool, worker="new")
    assert fresh.id == stale.id and fresh.attempt == 2
    with pytest.raises(queue.LeaseLost):
        async with pool.acquire() as conn:
            async with queue.fenced(conn, stale, worker_id="old") as tx:
                await tx.execute("CREATE TABLE must_not_exist (x int)")
    assert await pool.fetchval("SELECT to_regclass('must_not_exist')") is None
    assert await queue.complete_many(pool, [stale], worker_id="old") == set()
    assert await queue.fail(pool, stale, worker_id="old", error="x", delay_s=0) is None
    await queue.complete(pool, fresh, worker_id="new")
    row = await queue.get(pool, fresh.id)
    assert row is not None and row["state"] == "succeeded" and row["attempt"] == 2


async def test_heartbeat_extends_held_leases_and_reports_lost_ones(pool: asyncpg.Pool) -> None:
    await queue.register_worker(pool, worker_id="w1", version="t", capabilities={})
    await queue.enqueue(pool, [queue.NewTask("k"), queue.NewTask("k")])
    a, b = await _claim(pool, lease_s=5)
    await pool.execute("UPDATE tasks SET state = 'cancelled' WHERE id = $1", b.id)
    before = await pool.fetchval("SELECT lease_expires_at FROM tasks WHERE id = $1", a.id)
    kept = await queue.heartbeat(pool, [a, b], worker_id="w1", lease_s=60)
    assert kept == {a.id}
    after = await pool.fetchval("SELECT lease_expires_at FROM tasks WHERE id = $1", a.id)
    assert (after - before).total_seconds() > 50
    assert await pool.fetchval("SELECT busy FROM workers WHERE id = 'w1'") == 2


async def test_busy_workers_counts_what_each_holds_now_not_at_its_last_heartbeat(
        pool: asyncpg.Pool) -> None:
    # The autoscaler's pod-deletion-costs come from this: a worker that claimed since its
    # last heartbeat must not look idle (found on the real node: the ReplicaSet deleted the
    # pod running two long tasks and kept one that had gone idle).
    for w in ("idle-now", "busy-now", "gone"):
        await queue.register_worker(pool, worker_id=w, version="t", capabilities={})
    await queue.enqueue(pool, [queue.NewTask("k") for _ in range(3)])
    early = await _claim(pool, worker="idle-now", limit=1)
    assert await queue.heartbeat(pool, early, worker_id="idle-now", lease_s=30)
    await queue.complete(pool, early[0], worker_id="idle-now")   # idle; busy = 1 in its row
    await queue.heartbeat(pool, [], worker_id="busy-now", lease_s=30)   # busy = 0 in its row
    assert len(await _claim(pool, worker="busy-now", limit=2)) == 2
    await pool.execute("UPDATE workers SET heartbeat_at = now() - interval '10 minutes' "
                       "WHERE id = 'gone'")
    assert await queue.busy_workers(pool, fresh_s=120) == {"idle-now": 0, "busy-now": 2}


async def test_failures_back_off_then_dead_letter_with_the_error_kept(pool: asyncpg.Pool) -> None:
    await queue.enqueue(pool, [queue.NewTask("k", max_attempts=2)])
    [t1] = await _claim(pool)
    assert await queue.fail(pool, t1, worker_id="w1", error="first", delay_s=3600) == "queued"
    assert await _claim(pool) == []  # backing off
    await pool.execute("UPDATE tasks SET run_after = now()")
    [t2] = await _claim(pool)
    assert await queue.fail(pool, t2, worker_id="w1", error="second", delay_s=0) == "failed"
    row = await queue.get(pool, t2.id)
    assert row is not None and row["state"] == "failed" and row["last_error"] == "second"


async def test_sweeper_dead_letters_after_max_attempts(pool: asyncpg.Pool) -> None:
    run_id = uuid.uuid4()
    await pool.execute("INSERT INTO runs (id, name, spec) VALUES ($1, 'r', '{}')", run_id)
    await queue.enqueue(pool, [queue.NewTask("k", max_attempts=2, run_id=run_id)])
    for expected in ("queued", "failed"):
        await _claim(pool, lease_s=0.05)
        await asyncio.sleep(0.1)
        result = await queue.sweep_stalled(pool, backoff=NO_BACKOFF)
        assert (result.requeued if expected == "queued" else result.dead)
    assert result.dead_run_ids == (run_id,)
    row = await pool.fetchrow("SELECT state, last_error FROM tasks")
    assert row["state"] == "failed" and "lease expired" in row["last_error"]


async def test_release_is_not_charged_and_keeps_the_fencing_token_fresh(
        pool: asyncpg.Pool) -> None:
    await queue.enqueue(pool, [queue.NewTask("k", max_attempts=1)])
    [held] = await _claim(pool, worker="draining")
    assert await queue.release_many(pool, [held], worker_id="draining") == [held.id]
    [again] = await _claim(pool, worker="other")
    assert again.attempt == 2 and again.charged_attempts == 1 and not again.attempt == held.attempt
    assert await queue.complete_many(pool, [held], worker_id="draining") == set()
    assert await queue.fail(pool, again, worker_id="other", error="x", delay_s=0) == "failed"


async def test_cancel_run_fences_out_the_running_worker(pool: asyncpg.Pool) -> None:
    run_id = uuid.uuid4()
    await pool.execute("INSERT INTO runs (id, name, spec) VALUES ($1, 'r', '{}')", run_id)
    await queue.enqueue(pool, [queue.NewTask("k", run_id=run_id), queue.NewTask("k", run_id=run_id)])
    [running] = await _claim(pool, limit=1)
    assert len(await queue.cancel_run(pool, run_id, "deleted")) == 2
    with pytest.raises(queue.LeaseLost):
        await queue.complete(pool, running, worker_id="w1")
    assert await _claim(pool) == []


async def test_a_requeue_only_sweep_leaves_exhausted_tasks_for_the_workers(
        pool: asyncpg.Pool) -> None:
    await queue.enqueue(pool, [queue.NewTask("k", {"n": 1}, max_attempts=1),
                               queue.NewTask("k", {"n": 2}, max_attempts=3)])
    await _claim(pool, lease_s=0.05, limit=2)
    await asyncio.sleep(0.1)
    partial = await queue.sweep_stalled(pool, backoff=NO_BACKOFF,
                                        requeue_only=True)
    assert len(partial.requeued) == 1 and partial.dead == ()
    states = dict(await pool.fetch("SELECT payload->>'n', state FROM tasks"))
    assert states == {"1": "running", "2": "queued"}
    full = await queue.sweep_stalled(pool, backoff=NO_BACKOFF)
    assert len(full.dead) == 1


async def test_the_sweeps_backoff_is_the_retry_policys(pool: asyncpg.Pool) -> None:
    # The sweep computes the delay in SQL; RetryPolicy.delay_s owns the formula.
    attempts = range(1, 9)
    await queue.enqueue(pool, [queue.NewTask("k", {"n": n}, max_attempts=20) for n in attempts])
    await _claim(pool, lease_s=30, limit=len(attempts))
    await pool.execute("UPDATE tasks SET attempt = (payload->>'n')::int, "
                       "lease_expires_at = now() - interval '1 second'")
    exact = retry.RetryPolicy(base_s=1.5, cap_s=40.0, jitter=0)
    async with pool.acquire() as conn, conn.transaction():
        swept = await queue.sweep_stalled(conn, backoff=exact)
        delays = dict(await conn.fetch(  # now(): the sweep's own transaction time
            "SELECT attempt, extract(epoch FROM run_after - now())::float8 FROM tasks"))
    assert len(swept.requeued) == len(attempts)
    assert delays == pytest.approx({n: exact.delay_s(n) for n in attempts})

    jittered = retry.RetryPolicy(base_s=1.5, cap_s=40.0, jitter=0.5)
    await pool.execute("UPDATE tasks SET state = 'running', "
                       "lease_expires_at = now() - interval '1 second'")
    async with pool.acquire() as conn, conn.transaction():
        await queue.sweep_stalled(conn, backoff=jittered)
        delays = dict(await conn.fetch(
            "SELECT attempt, extract(epoch FROM run_after - now())::float8 FROM tasks"))
    for n, delay in delays.items():
        assert exact.delay_s(n) * 0.5 <= delay <= exact.delay_s(n) * 1.5
