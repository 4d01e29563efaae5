"""The three queues as the comparison drives them: schema, workers, enqueue, progress.

Each :class:`System` runs real worker processes (``python -m citerun worker``, pgqueuer's
supervisor in :mod:`bench.queue.tasks`, procrastinate's ``App.run_worker_async`` in
:mod:`bench.queue.procrastinate_tasks`) on a database of its own.
"""

from __future__ import annotations

import datetime as dt
import sys
from typing import Any

import asyncpg

from bench.queue import tasks
from bench.queue.processes import Processes, Worker, admin, free_port, with_application_name
from citerun.core import db, queue
from citerun.local import embedded

# pgqueuer's own defaults for these; it requires max_concurrent_tasks >= 2 * batch_size.
PGQ_BATCH_SIZE = 10
PGQ_DEQUEUE_TIMEOUT_S = 30.0


class System:
    """How the bench drives one queue: schema, workers, enqueue, progress."""

    name = ""

    def __init__(self, server: embedded.EmbeddedPostgres, procs: Processes,
                 concurrency: int) -> None:
        self.server = server
        self.procs = procs
        self.concurrency = concurrency

    async def create_database(self, dbname: str) -> str:
        await admin(self.server, f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)")
        await admin(self.server, f"CREATE DATABASE {dbname}")
        url = self.server.url(dbname)
        await self.install(url)
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(tasks.STAMP_TABLE)
        finally:
            await conn.close()
        return url

    async def install(self, url: str) -> None:
        raise NotImplementedError

    def start_workers(self, url: str, count: int, tag: str) -> list[Worker]:
        """``count`` worker processes on ``url``, each named ``TAG-SYSTEM-I`` and connected
        under that name (``bench-`` first) as its application_name."""
        workers = []
        for i in range(count):
            name = f"{tag}-{self.name}-{i}"
            argv, env = self.worker(with_application_name(url, name), name, i)
            workers.append(self.procs.spawn(name, argv, env))
        return workers

    def worker(self, url: str, name: str, index: int) -> tuple[list[str], dict[str, str]]:
        """The command line and environment of one worker process."""
        raise NotImplementedError

    async def enqueue_many(self, url: str, kind: str, n: int) -> None:
        raise NotImplementedError

    async def open_enqueuer(self, url: str) -> Any:
        raise NotImplementedError

    async def enqueue_one(self, handle: Any, kind: str) -> None:
        raise NotImplementedError

    async def close_enqueuer(self, handle: Any) -> None:
        raise NotImplementedError

    async def outstanding(self, conn: asyncpg.Connection) -> int:
        """Tasks not finished yet."""
        raise NotImplementedError

    async def span(self, conn: asyncpg.Connection) -> tuple[dt.datetime, dt.datetime]:
        """First claim and last completion, as the queue recorded them."""
        raise NotImplementedError

    def config(self) -> str:
        raise NotImplementedError

    async def inside(self) -> dict[str, float]:
        """What the workers saw of their own pauses during the latency phase (if they say)."""
        return {}


class Citerun(System):
    name = "citerun"

    async def install(self, url: str) -> None:
        await db.migrate(url)

    metrics_ports: list[int] = []

    def start_workers(self, url: str, count: int, tag: str) -> list[Worker]:
        # The latency phase's workers serve /metrics, read after it (event-loop lag, GC).
        self.metrics_ports = [free_port() for _ in range(count)] if tag == "lat" else []
        return super().start_workers(url, count, tag)

    def worker(self, url: str, name: str, index: int) -> tuple[list[str], dict[str, str]]:
        env = {"CITERUN_DATABASE_URL": url,
               "CITERUN_WORKER__CONCURRENCY": str(self.concurrency),
               "CITERUN_WORKER__ID": name}
        if self.metrics_ports:
            env["CITERUN_WORKER__METRICS_PORT"] = str(self.metrics_ports[index])
        return [sys.executable, "-m", "citerun", "--log-level", "WARNING", "worker",
                "--tasks", "bench.queue.tasks:registry"], env

    async def enqueue_many(self, url: str, kind: str, n: int) -> None:
        pool = await db.create_pool(url, min_size=1, max_size=1)
        try:
            for start in range(0, n, 10_000):
                await queue.enqueue(pool, [queue.NewTask(kind)] * min(10_000, n - start))
        finally:
            await pool.close()

    async def open_enqueuer(self, url: str) -> Any:
        return await db.create_pool(url, min_size=1, max_size=1)

    async def enqueue_one(self, handle: Any, kind: str) -> None:
        await queue.enqueue(handle, [queue.NewTask(kind)])

    async def close_enqueuer(self, handle: Any) -> None:
        await handle.close()

    async def outstanding(self, conn: asyncpg.Connection) -> int:
        return int(await conn.fetchval(
            "SELECT count(*) FROM tasks WHERE state NOT IN ('succeeded', 'failed')"))

    async def span(self, conn: asyncpg.Connection) -> tuple[dt.datetime, dt.datetime]:
        row = await conn.fetchrow("SELECT min(claimed_at) AS a, max(finished_at) AS b "
                                  "FROM tasks WHERE state = 'succeeded'")
        return row["a"], row["b"]

    async def inside(self) -> dict[str, float]:
        import httpx

        lag = gc_max = gc_n = 0.0
        async with httpx.AsyncClient() as client:
            for port in self.metrics_ports:
                text = (await client.get(f"http://127.0.0.1:{port}/metrics", timeout=10)).text
                for line in text.splitlines():
                    if line.startswith("citerun_event_loop_lag_max_seconds "):
                        lag = max(lag, float(line.split()[1]))
                    elif line.startswith("citerun_gc_pause_max_seconds "):
                        gc_max = max(gc_max, float(line.split()[1]))
                    elif line.startswith("citerun_gc_pause_seconds_count"):
                        gc_n += float(line.split()[1])
        return {"loop lag max (ms)": lag * 1000, "GC pause max (ms)": gc_max * 1000,
                "GC collections": gc_n}

    def config(self) -> str:
        return (f"citerun: `python -m citerun worker`, concurrency {self.concurrency}, "
                "defaults otherwise (idle: poll and sweep+heartbeat every 60 s; busy: "
                "sweep every 15 s, lease heartbeat every 10 s; batched completion), "
                "asyncio event loop")


class PgQueuer(System):
    name = "pgqueuer"

    async def install(self, url: str) -> None:
        from pgqueuer import AsyncpgDriver
        from pgqueuer.queries import Queries

        conn = await asyncpg.connect(url)
        try:
            await Queries(AsyncpgDriver(conn)).install()
        finally:
            await conn.close()

    @property
    def max_concurrent(self) -> int:
        return max(self.concurrency, 2 * self.batch_size)

    @property
    def batch_size(self) -> int:
        return max(1, min(PGQ_BATCH_SIZE, self.concurrency // 2))

    def worker(self, url: str, name: str, index: int) -> tuple[list[str], dict[str, str]]:
        return [sys.executable, "-m", "bench.queue.tasks",
                "--batch-size", str(self.batch_size),
                "--max-concurrent-tasks", str(self.max_concurrent),
                "--dequeue-timeout", str(PGQ_DEQUEUE_TIMEOUT_S)], {"BENCH_PGQ_DSN": url}

    async def open_enqueuer(self, url: str) -> Any:
        """pgqueuer's ``Queries`` on a connection of its own: ``(connection, queries)``."""
        from pgqueuer import AsyncpgDriver
        from pgqueuer.queries import Queries

        conn = await asyncpg.connect(url)
        return conn, Queries(AsyncpgDriver(conn))

    async def enqueue_many(self, url: str, kind: str, n: int) -> None:
        handle = await self.open_enqueuer(url)
        try:
            for start in range(0, n, 10_000):
                k = min(10_000, n - start)
                await handle[1].enqueue([kind] * k, [None] * k, [0] * k)
        finally:
            await self.close_enqueuer(handle)

    async def enqueue_one(self, handle: Any, kind: str) -> None:
        await handle[1].enqueue(kind, None)

    async def close_enqueuer(self, handle: Any) -> None:
        await handle[0].close()

    async def outstanding(self, conn: asyncpg.Connection) -> int:
        return int(await conn.fetchval("SELECT count(*) FROM pgqueuer"))

    async def span(self, conn: asyncpg.Connection) -> tuple[dt.datetime, dt.datetime]:
        row = await conn.fetchrow(
            "SELECT min(created) FILTER (WHERE status = 'picked') AS a, "
            "max(created) FILTER (WHERE status = 'successful') AS b FROM pgqueuer_log")
        return row["a"], row["b"]

    def config(self) -> str:
        import pgqueuer
        return (f"pgqueuer {pgqueuer.__version__}: `pgqueuer.run()` (the supervisor behind "
                "`pgq run`, whose CLI is broken in 1.6.0; uvloop like `pgq run`) with a "
                f"`QueueManager` on one asyncpg connection "
                f"(`AsyncpgDriver`, as in its docs and its own benchmark), "
                f"batch_size {self.batch_size} (its default), max_concurrent_tasks "
                f"{self.max_concurrent} (= the per-worker concurrency; it requires >= 2 x "
                f"batch_size), dequeue_timeout {PGQ_DEQUEUE_TIMEOUT_S:.0f} s and "
                "heartbeat_timeout 30 s (defaults), logged (durable) tables like citerun's, "
                "no per-entrypoint concurrency limits")


class Procrastinate(System):
    name = "procrastinate"

    async def install(self, url: str) -> None:
        from bench.queue import procrastinate_tasks

        app = procrastinate_tasks.make_app(url)
        async with app.open_async():
            await app.schema_manager.apply_schema_async()

    def worker(self, url: str, name: str, index: int) -> tuple[list[str], dict[str, str]]:
        return [sys.executable, "-m", "bench.queue.procrastinate_tasks",
                "--concurrency", str(self.concurrency)], {"BENCH_PROCRASTINATE_DSN": url}

    async def open_enqueuer(self, url: str) -> Any:
        from bench.queue import procrastinate_tasks

        app = procrastinate_tasks.make_app(url)
        await app.open_async()
        return app

    async def enqueue_many(self, url: str, kind: str, n: int) -> None:
        app = await self.open_enqueuer(url)
        try:
            for start in range(0, n, 10_000):
                await app.configure_task(kind).batch_defer_async(
                    *[{}] * min(10_000, n - start))
        finally:
            await self.close_enqueuer(app)

    async def enqueue_one(self, handle: Any, kind: str) -> None:
        await handle.configure_task(kind).defer_async()

    async def close_enqueuer(self, handle: Any) -> None:
        await handle.close_async()

    async def outstanding(self, conn: asyncpg.Connection) -> int:
        return int(await conn.fetchval(
            "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"))

    async def span(self, conn: asyncpg.Connection) -> tuple[dt.datetime, dt.datetime]:
        row = await conn.fetchrow(
            "SELECT min(at) FILTER (WHERE type = 'started') AS a, "
            "max(at) FILTER (WHERE type = 'succeeded') AS b FROM procrastinate_events")
        return row["a"], row["b"]

    def config(self) -> str:
        import procrastinate
        return (f"procrastinate {procrastinate.__version__}: `App.run_worker_async` (what "
                f"`procrastinate worker` runs) with concurrency {self.concurrency}, "
                "LISTEN/NOTIFY on, psycopg pool, asyncio event loop, its defaults otherwise "
                "(fetch polling 5 s, one job per fetch, jobs kept after completion)")


SYSTEMS: dict[str, type[System]] = {
    "citerun": Citerun, "pgqueuer": PgQueuer, "procrastinate": Procrastinate}
