"""The comparison's three phases, each on fresh databases: throughput of a backlog,
enqueue-to-start latency into idle workers, and what an idle worker costs the database."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import asyncpg

from bench.queue.processes import Processes, Worker, stop_workers, wait_connected
from bench.queue.systems import System


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
