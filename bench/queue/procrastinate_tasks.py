"""procrastinate's side of the queue benchmark: the same ``noop`` and ``stamp`` tasks.

``python -m bench.queue.procrastinate_tasks --concurrency 20`` runs one worker the way
``procrastinate worker`` does (``App.run_worker_async``, LISTEN/NOTIFY on, the asyncio
event loop, its defaults otherwise); the DSN comes from ``BENCH_PROCRASTINATE_DSN``.
``stamp`` records ``clock_timestamp()`` next to the enqueue time procrastinate itself
stored (its ``deferred`` event, written by a trigger in the defer's transaction), in one
INSERT through a pool of its own, as the citerun and pgqueuer handlers do.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

_STAMP = ("INSERT INTO bench_stamps (task_id, enqueued_at, started_at) "
          "SELECT job_id, at, clock_timestamp() FROM procrastinate_events "
          "WHERE job_id = $1 AND type = 'deferred'")


def make_app(dsn: str) -> Any:
    """A procrastinate ``App`` on a psycopg pool, with the bench's two tasks."""
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))
    state: dict[str, Any] = {}

    @app.task(name="noop")
    async def noop() -> None:
        """Do nothing."""

    @app.task(name="stamp", pass_context=True)
    async def stamp(context: Any) -> None:
        import asyncpg

        if "pool" not in state:
            state["pool"] = await asyncpg.create_pool(dsn, min_size=1, max_size=4)
        async with state["pool"].acquire() as conn:
            await conn.execute(_STAMP, context.job.id)

    return app


async def _work(concurrency: int) -> None:
    app = make_app(os.environ["BENCH_PROCRASTINATE_DSN"])
    async with app.open_async():
        await app.run_worker_async(concurrency=concurrency, install_signal_handlers=True)


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.queue.procrastinate_tasks")
    p.add_argument("--concurrency", type=int, default=20)
    args = p.parse_args(argv)
    asyncio.run(_work(args.concurrency))


if __name__ == "__main__":
    main(sys.argv[1:])
