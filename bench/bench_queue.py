"""citerun's queue against pgqueuer and procrastinate, side by side, on one embedded Postgres.

Usage (from the repository root)::

    python bench/bench_queue.py                 # full run (about 4 minutes)
    python bench/bench_queue.py --quick         # smaller sizes, under 2 minutes
    python bench/bench_queue.py --runs 3        # three runs in a row, one table each
    python bench/bench_queue.py --write-docs    # also replace the section in docs/benchmarks.md

All three queues run as real worker processes (``python -m citerun worker``, pgqueuer's
supervisor, ``App.run_worker_async`` of procrastinate) with the same number of processes
and the same per-worker concurrency, each against its own database on the same server. Every phase uses fresh
databases, so no phase sees the rows of another. Three things are measured:

1. throughput: N no-op tasks are enqueued before any worker starts; the rate is N over
   the span from the first claim to the last completion, read from the queues' own
   timestamps (also reported: wall time from spawning the workers until a poll sees all
   done, which includes start-up);
2. enqueue-to-start latency with idle workers: single tasks enqueued one at a time at a
   fixed rate; a handler inserts ``clock_timestamp()`` next to the enqueue time the
   queue recorded, so both ends are database timestamps;
3. what one idle worker costs the database: transactions per second from
   ``pg_stat_database`` (read from the ``postgres`` database, so the reader is not
   counted) and statements per second from ``pg_stat_statements``, with both idle
   workers measured in the same window.

Everything started here (Postgres, workers) is stopped in ``finally``, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime as dt
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import machine as bench_machine  # noqa: E402
from bench import queue_tasks  # noqa: E402
from citerun import db, embedded, queue  # noqa: E402

console = Console()

DOCS = ROOT / "docs" / "benchmarks.md"
SECTION = "## Queue: citerun vs pgqueuer vs procrastinate"
OLD_SECTIONS = ("## Queue: citerun vs pgqueuer",)

# pgqueuer's own defaults for these; it requires max_concurrent_tasks >= 2 * batch_size.
PGQ_BATCH_SIZE = 10
PGQ_DEQUEUE_TIMEOUT_S = 30.0


# -- processes ----------------------------------------------------------------------------

@dataclasses.dataclass
class Worker:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path


class Processes:
    """Every worker process this run started; :meth:`stop_all` ends them by pid."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.running: list[Worker] = []

    def spawn(self, name: str, argv: list[str], env: dict[str, str]) -> Worker:
        log = self.logs / f"{name}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **env}, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        worker = Worker(name, proc, log)
        self.running.append(worker)
        return worker

    def check(self) -> None:
        """Fail loudly if a worker died."""
        for w in self.running:
            if w.proc.poll() is not None:
                raise RuntimeError(f"worker {w.name} exited with {w.proc.returncode}:\n"
                                   + tail(w.log))

    def stop_all(self, grace_s: float = 20.0) -> None:
        for w in self.running:
            if w.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    w.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for w in self.running:
            try:
                w.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
        self.running.clear()


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


# -- the two systems ----------------------------------------------------------------------

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
            await conn.execute(queue_tasks.STAMP_TABLE)
        finally:
            await conn.close()
        return url

    async def install(self, url: str) -> None:
        raise NotImplementedError

    def start_workers(self, url: str, count: int, tag: str) -> list[Worker]:
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
        workers = []
        # The latency phase's workers serve /metrics, read after it (event-loop lag, GC).
        self.metrics_ports = [_free_port() for _ in range(count)] if tag == "lat" else []
        for i in range(count):
            name = f"{tag}-citerun-{i}"
            env = {
                "CITERUN_DATABASE_URL": f"{url}?application_name=bench-{name}",
                "CITERUN_WORKER__CONCURRENCY": str(self.concurrency),
                "CITERUN_WORKER__ID": name,
            }
            if self.metrics_ports:
                env["CITERUN_WORKER__METRICS_PORT"] = str(self.metrics_ports[i])
            argv = [sys.executable, "-m", "citerun", "--log-level", "WARNING", "worker",
                    "--tasks", "bench.queue_tasks:registry"]
            workers.append(self.procs.spawn(name, argv, env))
        return workers

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

    def start_workers(self, url: str, count: int, tag: str) -> list[Worker]:
        workers = []
        for i in range(count):
            name = f"{tag}-pgqueuer-{i}"
            env = {"BENCH_PGQ_DSN": f"{url}?application_name=bench-{name}"}
            argv = [sys.executable, "-m", "bench.queue_tasks",
                    "--batch-size", str(self.batch_size),
                    "--max-concurrent-tasks", str(self.max_concurrent),
                    "--dequeue-timeout", str(PGQ_DEQUEUE_TIMEOUT_S)]
            workers.append(self.procs.spawn(name, argv, env))
        return workers

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
        from bench import procrastinate_tasks

        app = procrastinate_tasks.make_app(url)
        async with app.open_async():
            await app.schema_manager.apply_schema_async()

    def start_workers(self, url: str, count: int, tag: str) -> list[Worker]:
        workers = []
        for i in range(count):
            name = f"{tag}-procrastinate-{i}"
            env = {"BENCH_PROCRASTINATE_DSN": f"{url}?application_name=bench-{name}"}
            argv = [sys.executable, "-m", "bench.procrastinate_tasks",
                    "--concurrency", str(self.concurrency)]
            workers.append(self.procs.spawn(name, argv, env))
        return workers

    async def open_enqueuer(self, url: str) -> Any:
        from bench import procrastinate_tasks

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


# -- database helpers ---------------------------------------------------------------------

def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])



async def admin(server: embedded.EmbeddedPostgres, statement: str) -> Any:
    conn = await asyncpg.connect(server.url("postgres"))
    try:
        return await conn.fetch(statement)
    finally:
        await conn.close()


async def wait_connected(server: embedded.EmbeddedPostgres, workers: list[Worker],
                         procs: Processes, timeout_s: float = 60.0) -> None:
    """Wait until every worker has a backend (its application_name) on the server."""
    names = {f"bench-{w.name}" for w in workers}
    conn = await asyncpg.connect(server.url("postgres"))
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            procs.check()
            seen = {r["application_name"] for r in await conn.fetch(
                "SELECT DISTINCT application_name FROM pg_stat_activity "
                "WHERE application_name = ANY($1::text[])", list(names))}
            if seen == names:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"workers never connected: {sorted(names - seen)}")
            await asyncio.sleep(0.1)
    finally:
        await conn.close()


async def wait_drained(system: System, url: str, procs: Processes, *,
                       timeout_s: float, poll_s: float = 0.1) -> float:
    """Poll until nothing is outstanding; return the monotonic time it was seen."""
    conn = await asyncpg.connect(url)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if await system.outstanding(conn) == 0:
                return time.monotonic()
            procs.check()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{system.name}: tasks still outstanding after {timeout_s} s")
            await asyncio.sleep(poll_s)
    finally:
        await conn.close()


async def stop_workers(procs: Processes) -> None:
    await asyncio.to_thread(procs.stop_all)


# -- phases -------------------------------------------------------------------------------

@dataclasses.dataclass
class Throughput:
    tasks: int
    db_s: float
    wall_s: float

    @property
    def rate(self) -> float:
        return self.tasks / self.db_s


async def measure_throughput(system: System, n: int, workers: int) -> Throughput:
    url = await system.create_database(f"tp_{system.name}")
    await system.enqueue_many(url, "noop", n)
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("ANALYZE")
    finally:
        await conn.close()
    try:
        started = time.monotonic()
        system.start_workers(url, workers, "tp")
        seen = await wait_drained(system, url, system.procs, timeout_s=600)
    finally:
        await stop_workers(system.procs)
    conn = await asyncpg.connect(url)
    try:
        first, last = await system.span(conn)
    finally:
        await conn.close()
    return Throughput(n, (last - first).total_seconds(), seen - started)


@dataclasses.dataclass
class Latency:
    n: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    inside: dict[str, float] = dataclasses.field(default_factory=dict)


async def measure_latency(system: System, n: int, rate: float, workers: int) -> Latency:
    url = await system.create_database(f"lat_{system.name}")
    handle = None
    try:
        started = system.start_workers(url, workers, "lat")
        await wait_connected(system.server, started, system.procs)
        handle = await system.open_enqueuer(url)
        # Warm up (imports, prepared statements), then let every worker go idle again.
        for _ in range(2 * workers):
            await system.enqueue_one(handle, "noop")
        await wait_drained(system, url, system.procs, timeout_s=60)
        await asyncio.sleep(3)
        t0 = time.monotonic()
        for i in range(n):
            await asyncio.sleep(max(0.0, t0 + i / rate - time.monotonic()))
            await system.enqueue_one(handle, "stamp")
        await wait_drained(system, url, system.procs, timeout_s=120)
        inside = await system.inside()
        conn = await asyncpg.connect(url)
        try:
            row = await conn.fetchrow("""
                SELECT count(*) AS n,
                       percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50,
                       percentile_cont(0.9) WITHIN GROUP (ORDER BY ms) AS p90,
                       percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99,
                       max(ms) AS max
                FROM (SELECT extract(epoch FROM started_at - enqueued_at) * 1000 AS ms
                      FROM bench_stamps) s""")
        finally:
            await conn.close()
    finally:
        if handle is not None:
            await system.close_enqueuer(handle)
        await stop_workers(system.procs)
    if row["n"] != n:
        raise RuntimeError(f"{system.name}: {row['n']} of {n} stamps recorded")
    return Latency(n, row["p50"], row["p90"], row["p99"], row["max"], inside)


@dataclasses.dataclass
class Idle:
    seconds: float
    xacts: int
    statements: int | None
    top: list[tuple[str, int]]

    @property
    def xacts_per_s(self) -> float:
        return self.xacts / self.seconds

    @property
    def statements_per_s(self) -> float | None:
        return None if self.statements is None else self.statements / self.seconds


async def _idle_snapshot(conn: asyncpg.Connection, dbnames: list[str],
                         statements: bool) -> dict[str, Any]:
    xacts = {r["datname"]: r["n"] for r in await conn.fetch(
        "SELECT datname, xact_commit + xact_rollback AS n FROM pg_stat_database "
        "WHERE datname = ANY($1::text[])", dbnames)}
    calls: dict[str, dict[str, int]] = {d: {} for d in dbnames}
    if statements:
        for r in await conn.fetch(
                "SELECT d.datname, s.query, sum(s.calls)::bigint AS calls "
                "FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
                "WHERE d.datname = ANY($1::text[]) GROUP BY 1, 2", dbnames):
            calls[r["datname"]][r["query"]] = r["calls"]
    return {"xacts": xacts, "calls": calls}


async def measure_idle(systems: list[System], seconds: float, settle_s: float,
                       statements: bool) -> dict[str, Idle]:
    """One idle worker per system, all measured in the same window."""
    server = systems[0].server
    dbnames = {s.name: f"idle_{s.name}" for s in systems}
    urls = {s.name: await s.create_database(dbnames[s.name]) for s in systems}
    try:
        started: list[Worker] = []
        for s in systems:
            started += s.start_workers(urls[s.name], 1, "idle")
        await wait_connected(server, started, systems[0].procs)
        await asyncio.sleep(settle_s)
        conn = await asyncpg.connect(server.url("postgres"))
        try:
            before = await _idle_snapshot(conn, list(dbnames.values()), statements)
            t0 = time.monotonic()
            while time.monotonic() - t0 < seconds:
                systems[0].procs.check()
                await asyncio.sleep(min(1.0, seconds - (time.monotonic() - t0)))
            elapsed = time.monotonic() - t0
            after = await _idle_snapshot(conn, list(dbnames.values()), statements)
        finally:
            await conn.close()
    finally:
        await stop_workers(systems[0].procs)
    out: dict[str, Idle] = {}
    for s in systems:
        d = dbnames[s.name]
        delta = {q: c - before["calls"][d].get(q, 0) for q, c in after["calls"][d].items()}
        delta = {q: c for q, c in delta.items() if c > 0}
        top = sorted(delta.items(), key=lambda kv: -kv[1])[:10]
        out[s.name] = Idle(elapsed, after["xacts"][d] - before["xacts"][d],
                           sum(delta.values()) if statements else None, top)
    return out


# -- machine ------------------------------------------------------------------------------

def machine(server_version: str) -> dict[str, str]:
    import pgqueuer
    try:
        import uvloop
        uv = uvloop.__version__
    except ImportError:
        uv = "not installed"
    import procrastinate
    return {**bench_machine.basics(), "PostgreSQL": server_version,
            "pgqueuer": pgqueuer.__version__, "procrastinate": procrastinate.__version__,
            "asyncpg": asyncpg.__version__, "uvloop": uv}


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


# -- report -------------------------------------------------------------------------------

@dataclasses.dataclass
class Results:
    info: dict[str, str]
    command: str
    args: argparse.Namespace
    configs: list[str]
    throughput: dict[str, Throughput]
    latency: dict[str, Latency]
    idle: dict[str, Idle]
    load_before: str
    load_after: str


def rows(r: Results) -> tuple[list[str], list[list[str]]]:
    names = list(r.throughput)
    peers = [n for n in names if n != "citerun"]
    header = ["Measure", *names, "Target (citerun)", "Met"]
    ct, cl, ci = r.throughput["citerun"], r.latency["citerun"], r.idle["citerun"]

    def per(fn: Any) -> list[str]:
        return [fn(n) for n in names]

    def best(values: list[float]) -> float:
        return min(values) if values else float("inf")

    def idle_cost(n: str) -> float:
        i = r.idle[n]
        return i.statements_per_s if i.statements_per_s is not None else i.xacts_per_s

    out = [
        ["Throughput, first claim -> last completion (tasks/s)",
         *per(lambda n: f"{r.throughput[n].rate:,.0f}"), ">= every peer",
         _met(ct.rate >= max([r.throughput[p].rate for p in peers], default=0))],
        ["  DB span for all tasks (s)", *per(lambda n: f"{r.throughput[n].db_s:.2f}"), "", ""],
        ["  Wall time incl. worker start-up (s)",
         *per(lambda n: f"{r.throughput[n].wall_s:.2f}"), "", ""],
        ["  Throughput incl. start-up (tasks/s)",
         *per(lambda n: f"{r.throughput[n].tasks / r.throughput[n].wall_s:,.0f}"), "", ""],
        ["Enqueue -> handler start, p50 (ms)", *per(lambda n: f"{r.latency[n].p50_ms:.1f}"),
         "<= 10 ms", _met(cl.p50_ms <= 10)],
        ["  p90 (ms)", *per(lambda n: f"{r.latency[n].p90_ms:.1f}"), "", ""],
        ["  p99 (ms)", *per(lambda n: f"{r.latency[n].p99_ms:.1f}"), "<= every peer",
         _met(cl.p99_ms <= best([r.latency[p].p99_ms for p in peers]))],
        ["  max (ms)", *per(lambda n: f"{r.latency[n].max_ms:.1f}"), "<= 2 x best peer",
         _met(cl.max_ms <= 2 * best([r.latency[p].max_ms for p in peers]))],
        ["Idle worker: transactions/s (pg_stat_database)",
         *per(lambda n: f"{r.idle[n].xacts_per_s:.3f}"), "", ""],
    ]
    if ci.statements_per_s is not None:
        out.append(["Idle worker: statements/s (pg_stat_statements)",
                    *per(lambda n: f"{r.idle[n].statements_per_s:.3f}"),
                    "<= 0.05 and <= every peer",
                    _met(idle_cost("citerun") <= min(0.05, best([idle_cost(p) for p in peers])))])
    else:
        out[-1][-2:] = ["<= every peer",
                        _met(idle_cost("citerun") <= best([idle_cost(p) for p in peers]))]
    return header, out


def _met(ok: bool) -> str:
    return "yes" if ok else "NO"


def notes(r: Results) -> list[str]:
    a = r.args
    out = [
        f"{a.workers} worker processes per system, per-worker concurrency {a.concurrency}; "
        "one Postgres server, a fresh database per system and phase.",
        f"Throughput: {a.tasks:,} no-op tasks enqueued (batch insert) and ANALYZEd before "
        "the workers start. Rate = tasks / (last completion - first claim) from the "
        "queues' own timestamps (citerun `claimed_at`/`finished_at`, pgqueuer's "
        "`pgqueuer_log` 'picked'/'successful' rows, procrastinate's `procrastinate_events` "
        "'started'/'succeeded'); wall time runs from spawning the workers until a 0.1 s "
        "poll sees nothing outstanding.",
        f"Latency: {a.latency_tasks} `stamp` tasks enqueued one at a time at {a.rate:g}/s "
        "into idle workers; latency = the handler's `clock_timestamp()` - the enqueue "
        "transaction's `now()` as the queue stored it (citerun `tasks.created_at`, "
        "pgqueuer `created`, procrastinate's 'deferred' event). citerun's enqueue is one "
        "statement (INSERT with pg_notify in a CTE), pgqueuer's one INSERT whose trigger "
        "notifies, procrastinate's `procrastinate_defer_jobs_v1` function whose trigger "
        "notifies.",
        f"Idle: one worker per system, both in the same {a.idle_seconds:g} s window after "
        f"{a.settle_seconds:g} s of settling; the reader connects to `postgres`. "
        "An idle backend flushes pg_stat_database up to ~10 s late, so that count may be "
        "off by a transaction or two at either edge; pg_stat_statements is exact and counts "
        "every statement (utility ones such as BEGIN/COMMIT and asyncpg's pool reset too).",
        *[f"Inside the {name} workers during the latency phase (their /metrics, whole "
          "process life): " + ", ".join(f"{k} {v:.1f}" for k, v in lat.inside.items())
          for name, lat in r.latency.items() if lat.inside],
        *r.configs,
        f"Load average (1/5/15 min) before: {r.load_before}; after: {r.load_after}.",
    ]
    busiest = max(float(r.load_before.split(" / ")[0]), float(r.load_after.split(" / ")[0]))
    if busiest > 0.75 * (os.cpu_count() or 1):
        out.append("The machine was busy with other work during this run: the numbers, "
                   "latency tails most of all, are noisy; rerun on a quiet machine.")
    return out


def print_report(r: Results) -> None:
    t = Table(title="Machine", show_header=False)
    for k, v in r.info.items():
        t.add_row(k, v)
    console.print(t)
    header, body = rows(r)
    t = Table(title="Queue: " + " vs ".join(r.throughput))
    for h in header:
        t.add_column(h, justify="left" if h in ("Measure", "Target (citerun)") else "right")
    for row in body:
        t.add_row(*row)
    console.print(t)
    for name, idle in r.idle.items():
        if idle.top:
            t = Table(title=f"Statements of the idle {name} worker in {idle.seconds:.0f} s")
            t.add_column("calls", justify="right")
            t.add_column("statement")
            for q, c in idle.top:
                t.add_row(str(c), " ".join(q.split())[:110])
            console.print(t)
    for n in notes(r):
        console.print(f"- {n}", highlight=False)


def markdown(results: list[Results]) -> str:
    first = results[0]
    lines = [SECTION, "",
             f"Measured {dt.date.today().isoformat()} with `bench/bench_queue.py` "
             f"({len(results)} run{'s' if len(results) > 1 else ''} in a row):", "",
             "```", first.command, "```", "",
             "| Machine | |", "|---|---|",
             *[f"| {k} | {v} |" for k, v in first.info.items()], ""]
    for k, r in enumerate(results, 1):
        header, body = rows(r)
        if len(results) > 1:
            lines += [f"Run {k} of {len(results)} (load average before: {r.load_before}):", ""]
        lines += ["| " + " | ".join(header) + " |",
                  "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|",
                  *["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                    for row in body], ""]
    for name, idle in results[-1].idle.items():
        if idle.top:
            lines += [f"Statements of the idle {name} worker in {idle.seconds:.0f} s "
                      "(pg_stat_statements, last run):", "", "| calls | statement |",
                      "|---:|---|"]
            lines += [f"| {c} | `{' '.join(q.split())[:110]}` |" for q, c in idle.top]
            lines.append("")
    lines += ["Notes:", ""] + [f"- {n}" for n in notes(results[-1])] + [""]
    return "\n".join(lines)


# -- main ---------------------------------------------------------------------------------

async def run(args: argparse.Namespace, server: embedded.EmbeddedPostgres,
              procs: Processes) -> Results:
    load_before = load()
    version = (await admin(server, "SHOW server_version"))[0][0]
    statements = await enable_pg_stat_statements(server, args)
    info = machine(version)
    systems: list[System] = [SYSTEMS[name](server, procs, args.concurrency)
                             for name in args.systems]
    console.print(f"load average before: {load_before}", highlight=False)

    throughput: dict[str, Throughput] = {}
    for s in systems:
        console.print(f"[bold]{s.name}[/]: throughput, {args.tasks:,} tasks ...")
        throughput[s.name] = await measure_throughput(s, args.tasks, args.workers)
        console.print(f"  {throughput[s.name].rate:,.0f} tasks/s")
    latency: dict[str, Latency] = {}
    for s in systems:
        console.print(f"[bold]{s.name}[/]: latency, {args.latency_tasks} tasks at "
                      f"{args.rate:g}/s ...")
        latency[s.name] = await measure_latency(s, args.latency_tasks, args.rate, args.workers)
        console.print(f"  p50 {latency[s.name].p50_ms:.1f} ms")
    console.print(f"[bold]idle[/]: one worker each, {args.idle_seconds:g} s ...")
    idle = await measure_idle(systems, args.idle_seconds, args.settle_seconds, statements)
    return Results(info, command(args), args, [s.config() for s in systems], throughput,
                   latency, idle, load_before, load())


async def enable_pg_stat_statements(server: embedded.EmbeddedPostgres,
                                    args: argparse.Namespace) -> bool:
    if args.no_statements:
        return False
    try:
        preloaded = (await admin(server, "SHOW shared_preload_libraries"))[0][0]
        if "pg_stat_statements" not in preloaded:
            await admin(server,
                        "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
            await asyncio.to_thread(server.restart)
        await admin(server, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        return True
    except (asyncpg.PostgresError, embedded.EmbeddedPostgresError) as err:
        console.print(f"[yellow]pg_stat_statements unavailable ({err}); counting "
                      "transactions only[/]")
        return False


def command(args: argparse.Namespace) -> str:
    return " ".join(["python bench/bench_queue.py", *args.argv])


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="small sizes (5,000 tasks, 60 latency tasks, 30 s idle): about 1 min")
    p.add_argument("--workers", type=int, default=4, help="worker processes per system")
    p.add_argument("--concurrency", type=int, default=20, help="tasks per worker at once")
    p.add_argument("--tasks", type=int, help="no-op tasks for throughput (20,000)")
    p.add_argument("--latency-tasks", type=int, help="tasks enqueued one at a time (200)")
    p.add_argument("--rate", type=float, default=20.0, help="latency enqueue rate, per s")
    p.add_argument("--idle-seconds", type=float, help="idle measuring window (120 s)")
    p.add_argument("--settle-seconds", type=float, help="wait before the idle window (20 s)")
    p.add_argument("--runs", type=int, default=1, help="whole runs in a row (one table each)")
    p.add_argument("--systems", default="citerun,pgqueuer,procrastinate",
                   help="comma-separated: citerun (always first), pgqueuer, procrastinate")
    p.add_argument("--no-statements", action="store_true",
                   help="skip pg_stat_statements (saves a server restart)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    p.add_argument("--write-docs", action="store_true",
                   help=f"replace the '{SECTION[3:]}' section of docs/benchmarks.md")
    args = p.parse_args(argv)
    args.argv = [a for a in argv if a not in ("--write-docs", "--keep")]
    args.systems = ["citerun"] + [n for n in args.systems.split(",")
                                  if n and n != "citerun"]
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        p.error(f"unknown systems: {', '.join(sorted(unknown))}")
    quick = args.quick
    args.tasks = args.tasks or (5_000 if quick else 20_000)
    args.latency_tasks = args.latency_tasks or (60 if quick else 200)
    args.idle_seconds = args.idle_seconds or (30.0 if quick else 120.0)
    # Idle backends flush their statistics up to ~10 s late: settle longer than that, so
    # the start-up transactions are counted before the window, not in it.
    args.settle_seconds = args.settle_seconds or (12.0 if quick else 20.0)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    tmp = Path(tempfile.mkdtemp(prefix="citerun-bench-queue-"))
    (tmp / "logs").mkdir()
    procs = Processes(tmp / "logs")
    server = embedded.EmbeddedPostgres(tmp / "pg")

    def on_term(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    # A shell starts background jobs with SIGINT ignored; Ctrl-C must still clean up.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    results: list[Results] = []
    try:
        server.start()
        for k in range(args.runs):
            console.print(f"[bold]run {k + 1} of {args.runs}[/]")
            results.append(asyncio.run(run(args, server, procs)))
            print_report(results[-1])
    except KeyboardInterrupt:
        console.print("[red]interrupted; cleaning up[/]")
        return 130
    except Exception:
        console.print(f"[red]failed; worker logs are in {tmp / 'logs'}[/]")
        args.keep = True
        raise
    finally:
        procs.stop_all(grace_s=10)
        server.stop("fast")
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.write_docs:
        for old in OLD_SECTIONS:
            bench_machine.remove_section(old)
        bench_machine.write_section(SECTION, markdown(results))
        console.print(f"wrote the '{SECTION[3:]}' section of {DOCS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
