"""Real worker processes, real signals, a real Postgres that restarts."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from citerun.core import db, queue
from citerun.local import embedded
from tests.support import tasks as test_tasks

pytestmark = pytest.mark.chaos


async def _setup(pool: asyncpg.Pool) -> None:
    await pool.execute(test_tasks.SCHEMA)


async def _until(check: Callable[[], Awaitable[bool]], timeout: float, what: str,
                 workers: Sequence[Any] = ()) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.1)
    logs = "\n".join(f"--- {w.name}\n{w.log()[-3000:]}" for w in workers)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{logs}")


async def _count(pool: asyncpg.Pool, sql: str, *args: Any) -> int:
    return int(await pool.fetchval(sql, *args))


async def test_eight_workers_drain_5000_tasks_each_exactly_once(pool: asyncpg.Pool,
                                                               spawn_worker: Any) -> None:
    await _setup(pool)
    await queue.enqueue(pool, [queue.NewTask("work") for _ in range(5000)])
    workers = [spawn_worker(f"w{i}", env={"CITERUN_WORKER__CONCURRENCY": "8"}) for i in range(8)]

    async def done() -> bool:
        return await _count(pool, "SELECT count(*) FROM tasks WHERE state = 'succeeded'") == 5000

    await _until(done, 240, "5000 tasks to succeed", workers)
    assert await _count(pool, "SELECT count(*) FROM test_done") == 5000
    assert await _count(pool, "SELECT count(DISTINCT task_id) FROM test_done") == 5000
    # No task ever started twice: nothing was double-claimed or lost and retried.
    assert await _count(pool, "SELECT count(*) FROM test_starts") == 5000
    assert await _count(pool, "SELECT count(*) FROM tasks WHERE attempt <> 1") == 0
    busy = await _count(pool, "SELECT count(DISTINCT worker_id) FROM test_done")
    assert busy >= 4, f"only {busy} of 8 workers took part"
    for w in workers:
        w.signal(signal.SIGTERM)
    assert [w.wait() for w in workers] == [0] * 8


async def test_sigkilled_workers_tasks_rerun_after_lease_and_late_write_is_fenced(
        pool: asyncpg.Pool, spawn_worker: Any) -> None:
    await _setup(pool)
    ids = await queue.enqueue(pool, [queue.NewTask("work", {"seconds": 60}) for _ in range(3)])
    victim = spawn_worker("victim", env={"CITERUN_WORKER__CONCURRENCY": "3"})

    async def held() -> bool:
        return await _count(pool, "SELECT count(*) FROM test_starts WHERE worker_id = 'victim'") == 3

    await _until(held, 30, "the victim to hold 3 tasks", [victim])
    stale = [queue.ClaimedTask(**dict(r)) for r in await pool.fetch(
        "SELECT id, kind, payload, attempt, releases, max_attempts, run_id, created_at, "
        "run_after, claimed_at FROM tasks WHERE worker_id = 'victim'")]
    killed_at = time.monotonic()
    victim.signal(signal.SIGKILL)
    victim.wait()
    await pool.execute("UPDATE tasks SET payload = '{\"seconds\": 0}'")
    rescuer = spawn_worker("rescuer")

    async def rerun() -> bool:
        return await _count(pool, "SELECT count(*) FROM test_done WHERE worker_id = 'rescuer'") == 3

    await _until(rerun, 30, "the rescuer to re-run the tasks", [rescuer])
    waited = time.monotonic() - killed_at
    assert waited >= 2 * 0.9, "tasks were re-run before the 2 s lease expired"
    rows = await pool.fetch("SELECT id, attempt, state FROM tasks ORDER BY id")
    assert [(r["id"], r["attempt"], r["state"]) for r in rows] == [(i, 2, "succeeded") for i in ids]
    # The killed attempt comes back late: every write is rejected by the fence.
    for task in stale:
        with pytest.raises(queue.LeaseLost):
            async with pool.acquire() as conn:
                async with queue.fenced(conn, task, worker_id="victim") as tx:
                    await tx.execute("INSERT INTO test_done VALUES ($1, $2, 'victim')",
                                     task.id, task.attempt)
    assert await queue.complete_many(pool, stale, worker_id="victim") == set()
    assert await _count(pool, "SELECT count(*) FROM test_done WHERE worker_id = 'victim'") == 0
    rescuer.signal(signal.SIGTERM)
    assert rescuer.wait() == 0


async def test_sigterm_finishes_short_tasks_and_releases_long_ones_at_once(
        pool: asyncpg.Pool, spawn_worker: Any) -> None:
    await _setup(pool)
    short = await queue.enqueue(pool, [queue.NewTask("work", {"seconds": 0.5}, priority=0)
                                       for _ in range(2)])
    long = await queue.enqueue(pool, [queue.NewTask("work", {"seconds": 120}, priority=1)
                                      for _ in range(2)])
    w = spawn_worker("drainer", env={"CITERUN_WORKER__CONCURRENCY": "4",
                                     "CITERUN_QUEUE__LEASE_S": "60",
                                     "CITERUN_QUEUE__HEARTBEAT_S": "5"})

    async def all_started() -> bool:
        return await _count(pool, "SELECT count(*) FROM test_starts") == 4

    await _until(all_started, 30, "4 tasks to start", [w])
    sent = time.monotonic()
    w.signal(signal.SIGTERM)
    assert w.wait(30) == 0
    drained_in = time.monotonic() - sent
    assert drained_in < 10, f"drain took {drained_in:.1f}s"
    # The log says why and what: the signal began the drain, the long tasks went back.
    log = w.log()
    assert "worker drainer draining on SIGTERM" in log, log[-3000:]
    assert log.index("draining on SIGTERM") < log.index("released 2 tasks on drain"), log[-3000:]
    states = dict(await pool.fetch("SELECT id, state FROM tasks"))
    assert all(states[i] == "succeeded" for i in short)
    rows = await pool.fetch("SELECT state, attempt, releases, lease_expires_at FROM tasks "
                            "WHERE id = ANY($1)", long)
    assert all(r["state"] == "queued" and r["releases"] == 1 and r["lease_expires_at"] is None
               for r in rows), rows
    # Handed over at once: another worker starts them without waiting for the 60 s lease.
    await pool.execute("UPDATE tasks SET payload = '{\"seconds\": 0}' WHERE id = ANY($1)", long)
    taker = spawn_worker("taker")
    t0 = time.monotonic()

    async def taken() -> bool:
        return await _count(pool, "SELECT count(*) FROM tasks WHERE state = 'succeeded'") == 4

    await _until(taken, 20, "the released tasks to be taken over", [taker])
    assert time.monotonic() - t0 < 15
    assert await _count(pool, "SELECT max(attempt - releases) FROM tasks") == 1
    taker.signal(signal.SIGTERM)
    assert taker.wait() == 0


async def test_ten_processes_migrate_an_empty_database_once(fresh_database_url: str,
                                                            tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.conftest import REPO, citerun_command
    procs = [subprocess.Popen([*citerun_command(), "migrate"], cwd=REPO,
                              env={"CITERUN_DATABASE_URL": fresh_database_url,
                                   "PATH": "/usr/bin:/bin"},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(10)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 10, outputs
    said = sorted(out.strip() for out, _ in outputs)
    assert said.count("applied 0 migration(s)") == 9, said
    conn = await db.connect(fresh_database_url)
    try:
        assert await conn.fetchval("SELECT count(*) FROM schema_migrations") == len(
            db.available_migrations())
    finally:
        await conn.close()


async def test_lost_notify_is_recovered_by_rescan_and_poll(pool: asyncpg.Pool,
                                                           spawn_worker: Any) -> None:
    await _setup(pool)
    w = spawn_worker("listener", env={"CITERUN_WORKER__POLL_S": "3"})

    async def listening() -> bool:
        return await _count(pool, "SELECT count(*) FROM pg_stat_activity WHERE "
                            "query LIKE 'LISTEN%' AND datname = current_database()") == 1

    await _until(listening, 30, "the worker to LISTEN", [w])
    # 1. The listener connection is killed, and work is enqueued while it is down.
    async with pool.acquire() as conn:
        await conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                           "query LIKE 'LISTEN%' AND datname = current_database()")
        await queue.enqueue(conn, [queue.NewTask("work")])
    await _until(lambda: _count_done(pool, 1), 10, "work after the listener was killed", [w])
    # 2. Work inserted with no NOTIFY at all: only the poll can find it.
    await pool.execute("INSERT INTO tasks (kind, max_attempts) VALUES ('work', 5)")
    t0 = time.monotonic()
    await _until(lambda: _count_done(pool, 2), 15, "un-notified work via the poll", [w])
    assert time.monotonic() - t0 <= 3 * 1.2 + 2
    w.signal(signal.SIGTERM)
    assert w.wait() == 0
    assert "LISTEN connection lost" in w.log()


async def _count_done(pool: asyncpg.Pool, n: int) -> bool:
    return await _count(pool, "SELECT count(*) FROM test_done") == n


async def test_worker_survives_a_postgres_restart(spawn_worker: Any) -> None:
    import shutil
    import tempfile
    data_dir = Path(tempfile.mkdtemp(prefix="citerun-restart-pg-"))
    server = embedded.EmbeddedPostgres(data_dir)
    url = server.start()
    try:
        await db.migrate(url)
        pool = await db.create_pool(url)
        await _setup(pool)
        w = spawn_worker("survivor", url=url)
        await queue.enqueue(pool, [queue.NewTask("work") for _ in range(5)])
        await _until(lambda: _count_done(pool, 5), 20, "work before the restart", [w])
        await pool.close()
        server.restart()
        pool = await db.create_pool(url)
        await queue.enqueue(pool, [queue.NewTask("work", {"seconds": 0.1}) for _ in range(5)])
        await _until(lambda: _count_done(pool, 10), 40, "work after the restart", [w])
        assert w.proc.poll() is None, "the worker exited when Postgres restarted"
        w.signal(signal.SIGTERM)
        assert w.wait() == 0
        await pool.close()
    finally:
        server.stop("immediate")
        shutil.rmtree(data_dir, ignore_errors=True)


async def test_bad_input_ends_in_a_stored_error_and_the_worker_lives(
        pool: asyncpg.Pool, spawn_worker: Any) -> None:
    await _setup(pool)
    unknown, invalid, raising = await queue.enqueue(pool, [
        queue.NewTask("no_such_kind", max_attempts=2),
        queue.NewTask("strict", {"count": "many", "extra": 1}),
        queue.NewTask("boom", max_attempts=3),
    ])
    w = spawn_worker("robust", env={"CITERUN_WORKER__KINDS": '["no_such_kind", "strict", "boom", "work"]'})

    async def settled() -> bool:
        return await _count(pool, "SELECT count(*) FROM tasks WHERE state = 'failed'") == 3

    await _until(settled, 30, "all bad tasks to be dead-lettered", [w])
    rows = {r["id"]: r for r in await pool.fetch("SELECT id, attempt, last_error FROM tasks")}
    assert "unknown task kind 'no_such_kind'" in rows[unknown]["last_error"]
    assert rows[unknown]["attempt"] == 2
    assert "invalid payload for strict" in rows[invalid]["last_error"]
    assert rows[invalid]["attempt"] == 1  # a payload that fails validation is not retried
    assert "the boom handler always fails" in rows[raising]["last_error"]
    assert "RuntimeError" in rows[raising]["last_error"] and rows[raising]["attempt"] == 3
    await queue.enqueue(pool, [queue.NewTask("work")])
    await _until(lambda: _count_done(pool, 1), 10, "good work after bad", [w])
    assert w.proc.poll() is None
    w.signal(signal.SIGTERM)
    assert w.wait() == 0
