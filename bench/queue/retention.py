"""Claim latency with a million finished tasks, before, during and after retention.

Usage (from the repository root)::

    python -m bench.queue.retention                # 1,000,000 finished tasks
    python -m bench.queue.retention --finished 100000
    python -m bench.queue.retention --write-docs   # replace the section in docs/benchmarks.md

One embedded Postgres, one migrated database. ``--finished`` tasks are inserted as
finished 30 days ago (the state a busy queue reaches without retention), plus enough
queued tasks for every claim. A claim is ``queue.claim(limit=1)`` followed by the fenced
completion, one after the other from one connection, timed on the client. Three phases:

1. before: claims with every finished row in the table;
2. during: the same claims while the operator's cleaner (``Cleaner.run_once``, batches
   of ``--batch``) deletes the finished rows on another connection;
3. after: claims once the cleaner is done (and autovacuum had its chance: ``VACUUM``).

Everything started here is stopped in ``finally``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import asyncpg
from rich.console import Console
from rich.table import Table

from bench import machine as bench_machine
from bench.common import postgres
from bench.queue.processes import admin
from citerun.core import db, queue
from citerun.operator import cleaner

console = Console()
SECTION = "## Retention: claim latency with finished tasks"


async def _fill(pool: asyncpg.Pool, finished: int, queued: int) -> None:
    step = 200_000
    for start in range(0, finished, step):
        n = min(step, finished - start)
        await pool.execute(
            "INSERT INTO tasks (kind, payload, state, attempt, max_attempts, created_at, "
            "finished_at, dedupe_key) SELECT 'done', jsonb_build_object('n', g), 'succeeded', "
            "1, 5, now() - interval '31 days', now() - interval '30 days', 'done:' || g "
            "FROM generate_series($1::bigint, $2::bigint) AS g", start, start + n - 1)
    await pool.execute(
        "INSERT INTO tasks (kind, payload, max_attempts) "
        "SELECT 'work', '{}', 5 FROM generate_series(1, $1)", queued)
    await pool.execute("VACUUM ANALYZE tasks")


async def _claims(pool: asyncpg.Pool, n: int, stop: asyncio.Event | None = None) -> list[float]:
    latencies: list[float] = []
    async with pool.acquire() as conn:
        while len(latencies) < n and not (stop is not None and stop.is_set()):
            started = time.perf_counter()
            [task] = await queue.claim(conn, worker_id="bench", kinds=["work"], limit=1,
                                       lease_s=30)
            await queue.complete(conn, task, worker_id="bench")
            latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def _row(label: str, finished: int, ms: list[float]) -> list[str]:
    q = statistics.quantiles(ms, n=100)
    return [label, f"{finished:,}", f"{len(ms):,}", f"{statistics.median(ms):.2f}",
            f"{q[94]:.2f}", f"{q[98]:.2f}", f"{max(ms):.1f}"]


async def bench(url: str, finished: int, claims: int, batch: int) -> tuple[list[list[str]], str]:
    await db.migrate(url)
    pool = await db.create_pool(url, min_size=2, max_size=4)
    try:
        started = time.perf_counter()
        await _fill(pool, finished, queued=claims * 4)
        console.print(f"inserted {finished:,} finished tasks in {time.perf_counter() - started:.0f} s")
        rows = [_row("before retention", finished, await _claims(pool, claims))]

        clean = cleaner.Cleaner(pool, cleaner.CleanerConfig(batch_size=batch,
                                                            max_batches=10**9))
        stop = asyncio.Event()
        during = asyncio.create_task(_claims(pool, claims * 2, stop))
        started = time.perf_counter()
        result = await clean.run_once()
        took = time.perf_counter() - started
        stop.set()
        rows.append(_row(f"during retention ({result.tasks:,} deleted)", finished,
                         await during))
        await pool.execute("VACUUM ANALYZE tasks")
        left = int(await pool.fetchval("SELECT count(*) FROM tasks WHERE kind = 'done'"))
        rows.append(_row("after retention", left, await _claims(pool, claims)))
        note = (f"The cleaner deleted {result.tasks:,} rows in {took:.1f} s "
                f"({result.tasks / took:,.0f} rows/s, batches of {batch:,}).")
        return rows, note
    finally:
        await pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--claims", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=cleaner.CleanerConfig().batch_size)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    with postgres("citerun-bench-retention-", stop="immediate") as (_tmp, server):
        asyncio.run(admin(server, "CREATE DATABASE bench"))
        rows, note = asyncio.run(bench(server.url("bench"), args.finished, args.claims,
                                       args.batch))

    headers = ["phase", "finished rows", "claims", "p50 ms", "p95 ms", "p99 ms", "max ms"]
    table = Table(*headers, title="claim + complete latency, one connection")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    console.print(note)
    machine = bench_machine.basics()
    console.print(machine)
    if args.write_docs:
        lines = [SECTION, "",
                 "`python -m bench.queue.retention` (`--finished "
                 f"{args.finished}`, `--claims {args.claims}`): one claim (`limit=1`) and its "
                 "fenced completion at a time, timed on the client, while the table holds "
                 "finished tasks, while the operator's cleaner deletes them, and after.", "",
                 "| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        lines += ["", note, "", "| machine | |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in machine.items()]
        bench_machine.write_section(SECTION, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
