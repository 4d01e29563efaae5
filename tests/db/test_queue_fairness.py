"""Fair share and tenant caps in the claim, statement by statement on a real Postgres."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg

from citerun.core import db, queue


async def _run(pool: asyncpg.Pool, tenant: str) -> uuid.UUID:
    run_id = uuid.uuid4()
    await pool.execute("INSERT INTO runs (id, name, tenant, spec) VALUES ($1, 'r', $2, '{}')",
                       run_id, tenant)
    return run_id


async def _enqueue(pool: asyncpg.Pool, run_id: uuid.UUID, n: int, *, priority: int = 0,
                   kind: str = "k") -> list[int]:
    return await queue.enqueue(pool, [queue.NewTask(kind, {"i": i}, priority=priority,
                                                    run_id=run_id) for i in range(n)])


async def _claim(pool: asyncpg.Pool, limit: int, *, caps: queue.TenantCaps = queue.NO_CAPS,
                 worker: str = "w", run_id: uuid.UUID | None = None,
                 kinds: tuple[str, ...] = ("k",)) -> list[queue.ClaimedTask]:
    return await queue.claim(pool, worker_id=worker, kinds=kinds, limit=limit, lease_s=30,
                             caps=caps, run_id=run_id)


async def test_a_small_run_of_the_same_tenant_is_not_queued_behind_a_large_one(
        pool: asyncpg.Pool) -> None:
    large, small = await _run(pool, "dept"), await _run(pool, "dept")
    await _enqueue(pool, large, 300)
    await _enqueue(pool, small, 5)
    first = await _claim(pool, 10)
    # Runs take turns: the small run's 5 tasks come within the first 10, not after 300.
    assert sum(t.run_id == small for t in first) == 5
    assert sum(t.run_id == large for t in first) == 5


async def test_a_tenant_with_a_smaller_backlog_goes_first(pool: asyncpg.Pool) -> None:
    busy_runs = [await _run(pool, "busy") for _ in range(10)]
    for run_id in busy_runs:
        await _enqueue(pool, run_id, 80)
    lone = await _run(pool, "lone")
    await _enqueue(pool, lone, 80)
    # The busy tenant's first run was enqueued when its backlog was as small as the lone
    # tenant's is now, so the two share; the other 720 tasks wait behind the lone run.
    first = await _claim(pool, 160)
    assert sum(t.run_id == lone for t in first) == 80
    assert {t.run_id for t in first} == {lone, busy_runs[0]}
    # Then the busy tenant's runs enqueued at the next backlog band (160 and 240 open
    # tasks: band 7) take turns.
    nxt = await _claim(pool, 20)
    assert sorted(str(t.run_id) for t in nxt) == sorted(
        [str(busy_runs[1])] * 10 + [str(busy_runs[2])] * 10)


async def test_priority_still_wins_over_fair_share(pool: asyncpg.Pool) -> None:
    busy, lone = await _run(pool, "busy"), await _run(pool, "lone")
    await _enqueue(pool, busy, 400)
    await _enqueue(pool, lone, 3)
    urgent = await _enqueue(pool, busy, 2, priority=-1)
    first = await _claim(pool, 5)
    assert [t.id for t in first[:2]] == urgent
    assert {t.run_id for t in first[2:]} == {lone}


async def test_a_cap_bounds_a_tenants_running_tasks_and_others_still_run(
        pool: asyncpg.Pool) -> None:
    capped, free = await _run(pool, "capped"), await _run(pool, "free")
    await _enqueue(pool, capped, 50)
    await _enqueue(pool, free, 50)
    caps = queue.TenantCaps({"capped": 3})
    first = await _claim(pool, 40, caps=caps)
    assert sum(t.tenant == "capped" for t in first) == 3
    assert sum(t.tenant == "free" for t in first) == 37
    second = await _claim(pool, 40, caps=caps)
    assert {t.tenant for t in second} == {"free"}
    # A finished task frees one place, and only one.
    held = [t for t in first if t.tenant == "capped"]
    await queue.complete(pool, held[0], worker_id="w")
    third = await _claim(pool, 10, caps=caps)
    assert [t.tenant for t in third] == ["capped"]


async def test_the_default_cap_applies_to_unnamed_tenants(pool: asyncpg.Pool) -> None:
    a, b = await _run(pool, "a"), await _run(pool, "b")
    await _enqueue(pool, a, 20)
    await _enqueue(pool, b, 20)
    claimed = await _claim(pool, 40, caps=queue.TenantCaps({"b": 5}, default=2))
    assert sorted(t.tenant for t in claimed) == ["a"] * 2 + ["b"] * 5


async def test_eight_racing_claimers_never_exceed_a_cap(pool: asyncpg.Pool,
                                                        database_url: str) -> None:
    runs = [await _run(pool, "dept") for _ in range(4)] + [await _run(pool, "other")]
    for run_id in runs:
        await _enqueue(pool, run_id, 100)
    caps = queue.TenantCaps({"dept": 7})
    conns = [await db.connect(database_url) for _ in range(8)]
    try:
        for _ in range(5):
            claims = await asyncio.gather(*(
                queue.claim(c, worker_id=f"w{i}", kinds=["k"], limit=5, lease_s=30, caps=caps)
                for i, c in enumerate(conns)))
            running = await pool.fetchval(
                "SELECT count(*) FROM tasks WHERE state = 'running' AND tenant = 'dept'")
            assert running == 7
            claimed = [t for batch in claims for t in batch]
            assert len({t.id for t in claimed}) == len(claimed)
            # Free two places of dept; the next round must fill exactly those two.
            done = [t for t in claimed if t.tenant == "dept"][:2] or [
                queue.ClaimedTask(**dict(r)) for r in await pool.fetch(
                    "SELECT id, kind, payload, attempt, releases, max_attempts, run_id, "
                    "created_at, run_after, claimed_at, tenant FROM tasks "
                    "WHERE state = 'running' AND tenant = 'dept' LIMIT 2")]
            for t in done:
                await pool.execute("UPDATE tasks SET state = 'succeeded' WHERE id = $1", t.id)
    finally:
        for c in conns:
            await c.close()


async def test_a_run_filter_claims_only_that_runs_tasks(pool: asyncpg.Pool) -> None:
    mine, theirs = await _run(pool, "t"), await _run(pool, "t")
    await _enqueue(pool, theirs, 5)
    await _enqueue(pool, mine, 3)
    claimed = await _claim(pool, 10, run_id=mine)
    assert len(claimed) == 3 and {t.run_id for t in claimed} == {mine}


async def test_claim_takes_every_kind_it_serves_in_one_order(pool: asyncpg.Pool) -> None:
    run_id = await _run(pool, "t")
    a = await _enqueue(pool, run_id, 3, kind="a", priority=2)
    b = await _enqueue(pool, run_id, 3, kind="b", priority=1)
    await _enqueue(pool, run_id, 3, kind="c")
    claimed = await _claim(pool, 5, kinds=("a", "b"))
    assert [t.id for t in claimed] == b + a[:2]
