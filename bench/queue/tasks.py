"""Task handlers of the queue benchmark, for citerun and for pgqueuer side by side.

Both queues get the same two kinds of work:

* ``noop`` does nothing (throughput). citerun completes it with the runtime's batched
  completion; pgqueuer with its batched status log.
* ``stamp`` inserts ``(task id, enqueue time, clock_timestamp())`` into ``bench_stamps``
  (latency). The enqueue time is the database's ``now()`` of the enqueue transaction as
  the queue recorded it (citerun ``tasks.created_at``, pgqueuer ``pgqueuer.created``), so
  both sides of the difference come from the same clock.

citerun serves ``registry`` (``python -m citerun worker --tasks bench.queue.tasks:registry``).
pgqueuer runs ``pgqueuer_factory`` through ``pgqueuer.run`` -- the supervisor behind
``pgq run`` -- with the event loop ``pgq run`` picks (uvloop when installed):
``python -m bench.queue.tasks --batch-size 10 --max-concurrent-tasks 20``, DSN from
``BENCH_PGQ_DSN``. (``pgq run`` itself fails in pgqueuer 1.6.0 before it starts: its
``--log-level`` option reaches ``setup_fancy_logger`` as a str, not a ``LogLevel``.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pydantic

from citerun.worker import registry as registry_mod

STAMP_TABLE = """
CREATE TABLE IF NOT EXISTS bench_stamps (
    task_id     bigint NOT NULL,
    enqueued_at timestamptz NOT NULL,
    started_at  timestamptz NOT NULL)
"""

_STAMP = ("INSERT INTO bench_stamps (task_id, enqueued_at, started_at) "
          "VALUES ($1, $2, clock_timestamp())")

registry = registry_mod.Registry()


class Nothing(pydantic.BaseModel):
    pass


@registry.task("noop", payload=Nothing)
async def noop(ctx: registry_mod.TaskContext, payload: Nothing) -> None:
    """Do nothing: the runtime completes the task (batched)."""


@registry.task("stamp", payload=Nothing)
async def stamp(ctx: registry_mod.TaskContext, payload: Nothing) -> None:
    """Record when the handler started, next to when the task was enqueued."""
    async with ctx.pool.acquire() as conn:
        await conn.execute(_STAMP, ctx.task.id, ctx.task.created_at)


@contextlib.asynccontextmanager
async def pgqueuer_factory() -> AsyncIterator[Any]:
    """A pgqueuer ``QueueManager`` on one asyncpg connection, as pgqueuer's docs build it.

    The ``stamp`` handler writes through a pool of its own, so its insert never waits
    for pgqueuer's connection lock. The pool holds one idle connection otherwise.
    """
    import asyncpg
    from pgqueuer import AsyncpgDriver, QueueManager
    from pgqueuer.models import Job
    from pgqueuer.queries import Queries

    dsn = os.environ["BENCH_PGQ_DSN"]
    connection = await asyncpg.connect(dsn)
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=4)
    assert pool is not None
    qm = QueueManager(Queries(AsyncpgDriver(connection)))

    @qm.entrypoint("noop")
    async def pgq_noop(job: Job) -> None:
        """Do nothing."""

    @qm.entrypoint("stamp")
    async def pgq_stamp(job: Job) -> None:
        async with pool.acquire() as conn:
            await conn.execute(_STAMP, job.id, job.created)

    try:
        yield qm
    finally:
        await pool.close()
        await connection.close()


def run_pgqueuer(argv: list[str]) -> None:
    """Run one pgqueuer worker until SIGTERM, as ``pgq run`` would."""
    import pgqueuer

    p = argparse.ArgumentParser(prog="python -m bench.queue.tasks")
    p.add_argument("--batch-size", type=int, default=10)
    p.add_argument("--max-concurrent-tasks", type=int, default=None)
    p.add_argument("--dequeue-timeout", type=float, default=30.0)
    p.add_argument("--heartbeat-timeout", type=float, default=30.0)
    args = p.parse_args(argv)
    main = pgqueuer.run(
        pgqueuer_factory, batch_size=args.batch_size,
        max_concurrent_tasks=args.max_concurrent_tasks,
        dequeue_timeout=timedelta(seconds=args.dequeue_timeout),
        heartbeat_timeout=timedelta(seconds=args.heartbeat_timeout))
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


if __name__ == "__main__":
    run_pgqueuer(sys.argv[1:])
