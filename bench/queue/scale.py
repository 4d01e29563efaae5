"""The queue's hot statements behind a million rows: before (schema 0001) and after (0004).

Usage (from the repository root)::

    python -m bench.queue.scale               # 1M finished + 1M queued rows
    python -m bench.queue.scale --rows 200000 # smaller, quicker
    python -m bench.queue.scale --write-docs  # also replace its docs/benchmarks.md section

Two databases on one embedded Postgres hold the same rows: ``--rows`` succeeded tasks,
``--rows`` due tasks of a kind the measured worker does not serve, and 100 due tasks of
the kind it does. ``before`` has only migration 0001 and runs the statements as they were
in 0001's time (quoted below, the baseline of issue 12); ``after`` has every migration and
runs the statements of ``src/citerun/core/queue.sql`` through ``citerun.core.queue``. Each
statement runs ``--repeat`` times; a claim runs in a transaction that is rolled back, so
every repetition sees the same rows. Then the same for the claim behind ``--rows`` queued
tasks of the served kind itself (one tenant's backlog, plus one run of another tenant),
with and without a tenant cap, and for an 80-task enqueue into that backlog. Times are
client-side (asyncpg over loopback), in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from rich.console import Console
from rich.table import Table

from bench import machine as bench_machine
from bench.common import REPO, postgres
from bench.queue.processes import admin
from citerun.core import db, queue
from citerun.local import embedded

console = Console()
SECTION = "## Queue at scale: claim, due probes and depth behind 1M rows"

# The statements as they were before migration 0004 (git history of queue.sql): the
# baseline the "before" column measures.
BEFORE = {
    "claim": """
        UPDATE tasks AS t
        SET state = 'running', worker_id = $1, attempt = t.attempt + 1, claimed_at = now(),
            lease_expires_at = now() + make_interval(secs => $3)
        FROM (SELECT id FROM tasks
              WHERE state = 'queued' AND run_after <= now() AND kind = ANY($2::text[])
              ORDER BY priority, id FOR UPDATE SKIP LOCKED LIMIT $4) AS due
        WHERE t.id = due.id RETURNING t.id""",
    "has_due": """
        SELECT EXISTS (SELECT 1 FROM tasks WHERE state = 'queued' AND run_after <= now()
                       AND kind = ANY($1::text[]))""",
    "next_due": """
        SELECT extract(epoch FROM min(run_after) - now())::float8
        FROM tasks WHERE state = 'queued' AND kind = ANY($1::text[])""",
    "depth": "SELECT kind, state, count(*) AS n FROM tasks GROUP BY kind, state",
}

KIND = "mine"
WORKER = "bench-worker"


async def _fill(conn: asyncpg.Connection, rows: int) -> None:
    await conn.execute("""
        INSERT INTO tasks (kind, state, attempt, max_attempts, claimed_at, finished_at)
        SELECT 'done', 'succeeded', 1, 5, now(), now() FROM generate_series(1, $1)""", rows)
    await conn.execute("INSERT INTO tasks (kind, max_attempts) "
                       "SELECT 'other', 5 FROM generate_series(1, $1)", rows)


async def _timed(fn: Callable[[], Awaitable[Any]], repeat: int,
                 conn: asyncpg.Connection | None = None) -> list[float]:
    """Milliseconds per call of ``fn``; with ``conn``, each call in a rolled-back
    transaction (BEGIN and ROLLBACK not timed)."""
    out = []
    for i in range(repeat + 1):  # the first call warms plan caches and buffers
        tx = conn.transaction() if conn is not None else None
        if tx is not None:
            await tx.start()
        try:
            t0 = time.perf_counter()
            await fn()
            elapsed = (time.perf_counter() - t0) * 1000
        finally:
            if tx is not None:
                await tx.rollback()
        if i:
            out.append(elapsed)
    return out


def _rolled_back(conn: asyncpg.Connection,
                 fn: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    async def run() -> Any:
        tx = conn.transaction()
        await tx.start()
        try:
            return await fn()
        finally:
            await tx.rollback()
    return run


async def measure_before(url: str, rows: int, repeat: int) -> dict[str, list[float]]:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute((REPO / "src" / "citerun" / "core" / "migrations" / "0001_initial.sql").read_text())
        await _fill(conn, rows)
        await conn.execute("INSERT INTO tasks (kind, max_attempts) "
                           "SELECT $1, 5 FROM generate_series(1, 100)", KIND)
        await conn.execute("VACUUM ANALYZE tasks")
        kinds = [KIND]
        return {
            "claim 1": await _timed(lambda: conn.fetch(
                BEFORE["claim"], WORKER, kinds, 30.0, 1), repeat, conn),
            "claim 20": await _timed(lambda: conn.fetch(
                BEFORE["claim"], WORKER, kinds, 30.0, 20), repeat, conn),
            "has_due": await _timed(lambda: conn.fetchval(BEFORE["has_due"], kinds), repeat),
            "next_due": await _timed(lambda: conn.fetchval(BEFORE["next_due"], kinds), repeat),
            "depth": await _timed(lambda: conn.fetch(BEFORE["depth"]), repeat),
        }
    finally:
        await conn.close()


async def _run(conn: asyncpg.Connection, tenant: str) -> uuid.UUID:
    run_id = uuid.uuid4()
    await conn.execute("INSERT INTO runs (id, name, tenant, spec) VALUES ($1, 'r', $2, '{}')",
                       run_id, tenant)
    return run_id


async def measure_after(url: str, rows: int, repeat: int) -> dict[str, list[float]]:
    await db.migrate(url)
    conn = await db.connect(url)
    try:
        await _fill(conn, rows)
        await queue.enqueue(conn, [queue.NewTask(KIND) for _ in range(100)])
        await conn.execute("VACUUM ANALYZE tasks")
        kinds = [KIND]

        def claim(n: int, caps: queue.TenantCaps = queue.NO_CAPS) -> Callable[[], Any]:
            return lambda: queue.claim(conn, worker_id=WORKER, kinds=kinds, limit=n,
                                       lease_s=30.0, caps=caps)

        out = {
            "claim 1": await _timed(claim(1), repeat, conn),
            "claim 20": await _timed(claim(20), repeat, conn),
            "has_due": await _timed(lambda: queue.has_due(conn, kinds), repeat),
            "next_due": await _timed(lambda: queue.next_due_s(conn, kinds), repeat),
            "depth": await _timed(lambda: queue.depth(conn, kinds), repeat),
        }
        # The served kind's own backlog: one tenant's `rows` queued tasks, then one run of
        # another tenant (which the fair claim must find first).
        backlog = await _run(conn, "dept")
        await conn.execute("""
            INSERT INTO tasks (kind, run_id, tenant, fair_key, max_attempts)
            SELECT $1, $2, 'dept', (12::bigint << 32) + g, 5
            FROM generate_series(1, $3) AS g""",
                           KIND, backlog, rows)
        await conn.execute("UPDATE tasks SET state = 'succeeded' WHERE kind = $1 "
                           "AND run_id IS NULL", KIND)
        lone = await _run(conn, "lone")
        await conn.execute("VACUUM ANALYZE tasks")
        await queue.enqueue(conn, [queue.NewTask(KIND, run_id=lone) for _ in range(80)])
        first = await _rolled_back(conn, lambda: queue.claim(
            conn, worker_id=WORKER, kinds=kinds, limit=20, lease_s=30.0))()
        if {t.run_id for t in first} != {lone}:
            raise RuntimeError("the fair claim did not take the lone run first")
        caps = queue.TenantCaps({"dept": 100, "lone": 100})
        out["claim 20, backlog"] = await _timed(claim(20), repeat, conn)
        out["claim 20, backlog, capped"] = await _timed(claim(20, caps), repeat, conn)
        # dept at its cap: the capped claim must not read dept's backlog to find lone's.
        await conn.execute("""
            UPDATE tasks SET state = 'running', worker_id = 'elsewhere', attempt = 1,
                   lease_expires_at = now() + interval '1 hour'
            WHERE id IN (SELECT id FROM tasks WHERE tenant = 'dept' AND state = 'queued'
                         ORDER BY id LIMIT 100)""")
        full = await _rolled_back(conn, lambda: queue.claim(
            conn, worker_id=WORKER, kinds=kinds, limit=20, lease_s=30.0, caps=caps))()
        if {t.tenant for t in full} != {"lone"}:
            raise RuntimeError("the capped claim took a task of a tenant at its cap")
        out["claim 20, backlog, dept at cap"] = await _timed(claim(20, caps), repeat, conn)
        other = await _run(conn, "dept")
        out["enqueue 80, backlog"] = await _timed(lambda: queue.enqueue(
            conn, [queue.NewTask(KIND, run_id=other) for _ in range(80)]), repeat, conn)
        return out
    finally:
        await conn.close()


def _cell(samples: list[float] | None) -> str:
    if not samples:
        return ""
    return f"{statistics.median(samples):.2f} / {max(samples):.2f}"


def report(rows: int, repeat: int, info: dict[str, str], before: dict[str, list[float]],
           after: dict[str, list[float]], command: str) -> str:
    names = list(after)
    t = Table(title=f"Queue statements behind {rows:,} finished + {rows:,} queued rows of "
                    "another kind (ms, median / max)")
    for h in ("Statement", "before (0001)", "after (all)", "target", "met"):
        t.add_column(h)
    lines = [SECTION, "", f"Measured {dt.date.today().isoformat()} with "
             "`python -m bench.queue.scale`:", "", "```", command, "```", "",
             "| Machine | |", "|---|---|", *[f"| {k} | {v} |" for k, v in info.items()], "",
             f"Milliseconds, median / max of {repeat} runs (client side, loopback):", "",
             "| Statement | before (0001) | after (all migrations) | target | met |",
             "|---|---:|---:|---:|---:|"]
    for name in names:
        med = statistics.median(after[name])
        probe = not name.startswith("enqueue")  # the 5 ms target is for claim and probes
        met = ("yes" if med < 5 else "NO") if probe else "-"
        row = [name, _cell(before.get(name)), _cell(after[name]),
               "< 5 ms" if probe else "-", met]
        t.add_row(*row)
        lines.append("| " + " | ".join(row) + " |")
    console.print(t)
    lines += ["", "Notes:", "",
              f"- Rows: {rows:,} succeeded tasks (kind `done`) and {rows:,} due tasks of "
              "kind `other`, VACUUM ANALYZEd; the worker serves kind `mine` (100 due). "
              "`before` replays migration 0001 and runs the statements of that time "
              "(quoted in the bench); `after` runs `citerun.core.queue` on all migrations.",
              f"- `backlog`: {rows:,} due tasks of kind `mine` of tenant `dept` ahead of one "
              "80-task run of tenant `lone`; the claim must (and did) take `lone`'s tasks "
              "first. `capped`: caps for both tenants, so the claim takes the advisory lock "
              "and counts running tasks per tenant. `dept at cap`: 100 of dept's tasks "
              "running (its cap), so the claim must find `lone`'s tasks without reading "
              "dept's backlog. `enqueue 80`: one stage's judge tasks for a `dept` run (the tenant's backlog count is capped at 4,096 rows).",
              "- Claims and enqueues run in a transaction that is rolled back, so every "
              "repetition sees the same rows.",
              "- `depth` before: every (kind, state) of the table; after: the open tasks "
              "(queued, running) of the kinds the worker serves, and the worker reads it at "
              "most once per scrape interval; the pod's probes use `/healthz`, which reads "
              "nothing from the database."]
    return "\n".join(lines) + "\n"


async def main_async(args: argparse.Namespace, server: embedded.EmbeddedPostgres) -> str:
    await admin(server, "CREATE DATABASE scale_before")
    await admin(server, "CREATE DATABASE scale_after")
    console.print(f"filling and measuring 'before' ({args.rows:,} + {args.rows:,} rows) ...")
    before = await measure_before(server.url("scale_before"), args.rows, args.repeat)
    console.print("filling and measuring 'after' ...")
    after = await measure_after(server.url("scale_after"), args.rows, args.repeat)
    version = (await admin(server, "SHOW server_version"))[0][0]
    info = {**bench_machine.basics(), "PostgreSQL": version}
    command = " ".join(["python -m bench.queue.scale",
                        *[a for a in sys.argv[1:] if a != "--write-docs"]])
    return report(args.rows, args.repeat, info, before, after, command)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--write-docs", action="store_true")
    args = p.parse_args()
    with postgres("citerun-bench-scale-") as (_tmp, server):
        text = asyncio.run(main_async(args, server))
    bench_machine.write_section_if(args.write_docs, SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
