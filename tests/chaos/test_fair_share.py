"""Fair share and tenant caps with real worker processes on a real Postgres."""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid
from typing import Any

import asyncpg
import pytest

from citerun.core import queue
from tests.chaos.test_workers import _setup, _until

pytestmark = pytest.mark.chaos


async def _run(pool: asyncpg.Pool, tenant: str) -> uuid.UUID:
    run_id = uuid.uuid4()
    await pool.execute("INSERT INTO runs (id, name, tenant, spec) VALUES ($1, 'r', $2, '{}')",
                       run_id, tenant)
    return run_id


async def _work(pool: asyncpg.Pool, run_id: uuid.UUID, n: int, seconds: float) -> list[int]:
    return await queue.enqueue(pool, [queue.NewTask("work", {"seconds": seconds},
                                                    run_id=run_id) for _ in range(n)])


async def test_a_small_runs_tasks_are_claimed_before_a_large_run_drains(
        pool: asyncpg.Pool, spawn_worker: Any) -> None:
    await _setup(pool)
    large, small = await _run(pool, "dept"), await _run(pool, "dept")
    await _work(pool, large, 300, 0.05)
    workers = [spawn_worker(f"w{i}", env={"CITERUN_WORKER__CONCURRENCY": "4"})
               for i in range(2)]

    async def large_started() -> bool:
        return int(await pool.fetchval("SELECT count(*) FROM test_done")) >= 16

    await _until(large_started, 60, "the large run to be under way", workers)
    small_ids = await _work(pool, small, 8, 0.05)

    async def small_done() -> bool:
        return int(await pool.fetchval("SELECT count(*) FROM test_done WHERE task_id = ANY($1)",
                                       small_ids)) == 8

    await _until(small_done, 60, "the small run to finish", workers)
    large_open = int(await pool.fetchval(
        "SELECT count(*) FROM tasks WHERE run_id = $1 AND state = 'queued'", large))
    # FIFO would start the small run after all 300; fair share starts it at once.
    assert large_open >= 150, f"the small run waited until the large one had {large_open} left"
    small_first = await pool.fetchval(
        "SELECT min(at) FROM test_starts WHERE task_id = ANY($1)", small_ids)
    large_after = int(await pool.fetchval(
        "SELECT count(*) FROM test_starts s JOIN tasks t ON t.id = s.task_id "
        "WHERE t.run_id = $1 AND s.at < $2", large, small_first))
    assert large_after <= 40
    for w in workers:
        w.signal(signal.SIGTERM)
    assert [w.wait() for w in workers] == [0, 0]


async def test_a_tenant_never_exceeds_its_cap_with_eight_workers_racing(
        pool: asyncpg.Pool, spawn_worker: Any) -> None:
    await _setup(pool)
    cap = 5
    dept = [await _run(pool, "dept") for _ in range(3)]
    other = await _run(pool, "other")
    for run_id in dept:
        await _work(pool, run_id, 40, 0.05)
    await _work(pool, other, 60, 0.05)
    env = {"CITERUN_WORKER__CONCURRENCY": "4",
           "CITERUN_QUEUE__TENANT_CAPS": json.dumps({"dept": cap})}
    workers = [spawn_worker(f"w{i}", env=env) for i in range(8)]
    peak = 0

    async def sample() -> None:
        nonlocal peak
        while True:
            n = int(await pool.fetchval(
                "SELECT count(*) FROM tasks WHERE tenant = 'dept' AND state = 'running'"))
            peak = max(peak, n)
            await asyncio.sleep(0.005)

    sampler = asyncio.create_task(sample())

    async def all_done() -> bool:
        return int(await pool.fetchval("SELECT count(*) FROM test_done")) == 180

    started = time.monotonic()
    try:
        await _until(all_done, 120, "all 180 tasks to finish", workers)
    finally:
        sampler.cancel()
        await asyncio.gather(sampler, return_exceptions=True)
    assert 0 < peak <= cap
    # What the handlers saw, independent of the queue's own rows: at no instant were more
    # than `cap` dept handlers between their start and their fenced completion.
    overlap = int(await pool.fetchval("""
        WITH spans AS (
            SELECT s.at AS started, d.at AS done FROM test_starts s
            JOIN test_done d USING (task_id, attempt) JOIN tasks t ON t.id = s.task_id
            WHERE t.tenant = 'dept')
        SELECT max(n) FROM (
            SELECT (SELECT count(*) FROM spans b WHERE b.started <= a.started
                    AND b.done > a.started) AS n FROM spans a) AS x"""))
    assert overlap <= cap
    assert overlap >= cap - 1, f"the cap was never reached (peak {overlap}): a vacuous test"
    # The other tenant was not held back: its 60 tasks ran up to 32 at once, so they were
    # done long before dept's 120 (which take >= 120 * 0.05 / 5 = 1.2 s).
    other_last = await pool.fetchval(
        "SELECT max(d.at) FROM test_done d JOIN tasks t ON t.id = d.task_id "
        "WHERE t.tenant = 'other'")
    dept_last = await pool.fetchval(
        "SELECT max(d.at) FROM test_done d JOIN tasks t ON t.id = d.task_id "
        "WHERE t.tenant = 'dept'")
    assert other_last < dept_last
    # And the cap was used, not merely respected: over dept's span, on average at least
    # 40 % of its places were busy (workers idling until a timer after every cap hit
    # leave them mostly empty).
    busy = float(await pool.fetchval("""
        SELECT sum(extract(epoch FROM d.at - s.at))
               / extract(epoch FROM max(d.at) - min(s.at)) FROM test_starts s
        JOIN test_done d USING (task_id, attempt) JOIN tasks t ON t.id = s.task_id
        WHERE t.tenant = 'dept'"""))
    assert busy >= 0.4 * cap, f"on average only {busy:.1f} of dept's {cap} places were busy"
    assert int(await pool.fetchval("SELECT count(DISTINCT task_id) FROM test_done")) == 180
    assert int(await pool.fetchval("SELECT count(*) FROM tasks WHERE attempt <> 1")) == 0
    assert time.monotonic() - started < 120
    for w in workers:
        w.signal(signal.SIGTERM)
    assert [w.wait() for w in workers] == [0] * 8
