"""Issue 27: a Postgres switchover mid-run loses and duplicates nothing.

The database is an embedded primary with a streaming standby (tests/support/replica.py).
Real ``citerun worker`` processes reach it through one URL naming both servers with
``target_session_attrs=read-write``. Halfway through 300 tasks, the primary stops (fast
shutdown: every committed transaction is sent to the standby first) and the standby is
promoted: the workers' connections, their LISTEN connection and their leases break, they
reconnect to whichever server accepts writes, and every task ends done exactly once.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from citerun.core import db, queue
from citerun.local import embedded
from tests.support import replica
from tests.support import tasks as test_tasks

pytestmark = pytest.mark.chaos

TASKS = 300


async def _done(url: str) -> int:
    conn = await db.connect(url, timeout=5)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM test_done"))
    finally:
        await conn.close()


async def test_a_switchover_to_a_promoted_standby_loses_and_duplicates_nothing(
        spawn_worker: Any) -> None:
    root = Path(tempfile.mkdtemp(prefix="citerun-switch-"))
    root.chmod(0o755)  # the servers run as their own system user
    primary = embedded.EmbeddedPostgres(root / "a")
    standby: embedded.EmbeddedPostgres | None = None
    try:
        url = primary.start()
        await db.migrate(url)
        pool = await db.create_pool(url)
        await pool.execute(test_tasks.SCHEMA)
        standby = replica.standby_of(primary, root / "b")
        either = replica.either_url(primary, standby)
        workers = [spawn_worker(f"sw{i}", url=either, env={
            "CITERUN_WORKER__CONCURRENCY": "4", "CITERUN_QUEUE__LEASE_S": "5",
            "CITERUN_QUEUE__HEARTBEAT_S": "1"}) for i in range(2)]
        await queue.enqueue(pool, [queue.NewTask("work", {"seconds": 0.2})
                                   for _ in range(TASKS)])
        await pool.close()
        deadline = time.monotonic() + 60
        while await _done(either) < TASKS // 3:
            assert time.monotonic() < deadline, [w.log()[-2000:] for w in workers]
            await asyncio.sleep(0.2)

        before = await _done(either)
        primary.stop("fast")
        replica.promote(standby)
        switched_at = time.monotonic()

        deadline = time.monotonic() + 120
        while await _done(either) < TASKS:
            assert time.monotonic() < deadline, (
                f"{await _done(either)} of {TASKS} done\n"
                + "\n".join(w.log()[-3000:] for w in workers))
            for w in workers:
                assert w.proc.poll() is None, w.log()[-3000:]
            await asyncio.sleep(0.2)
        print({"done_before_switch": before,
               "s_to_finish_after_switch": round(time.monotonic() - switched_at, 1)})

        pool = await db.create_pool(either)
        try:
            assert await pool.fetchval("SELECT pg_is_in_recovery()") is False
            assert await pool.fetchval("SELECT count(*) FROM tasks") == TASKS
            assert await pool.fetchval(
                "SELECT count(*) FROM tasks WHERE state = 'succeeded'") == TASKS
            # Nothing lost, nothing done twice: one fenced completion per task.
            assert await pool.fetchval("SELECT count(*) FROM test_done") == TASKS
            assert await pool.fetchval("SELECT count(DISTINCT task_id) FROM test_done") == TASKS
            # The tasks cut off by the switchover ran again (a new attempt), never beside
            # a completed one: each task's completion is from its last attempt.
            stale = await pool.fetchval(
                "SELECT count(*) FROM test_done d JOIN tasks t ON t.id = d.task_id "
                "WHERE d.attempt <> t.attempt")
            assert stale == 0
            rerun = await pool.fetchval("SELECT count(*) FROM tasks WHERE attempt > 1")
            print({"tasks_run_again_after_the_switch": rerun})
        finally:
            await pool.close()
        for w in workers:
            w.signal(signal.SIGTERM)
        assert [w.wait() for w in workers] == [0, 0]
    finally:
        if standby is not None:
            standby.stop("immediate")
        primary.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
