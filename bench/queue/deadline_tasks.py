"""Handlers of the deadline-week benchmark: the pipeline's task graph, timed by sleeps.

One run is what ``bench.pipeline.large_thesis`` generates (a thesis with 30 sources and 80
citations) as the pipeline schedules it: ``parse`` for the thesis and each source in
parallel; the last parse enqueues ``extract``; ``extract`` enqueues one ``judge`` per
citation; the last judge enqueues ``finalize``. Each handler sleeps for its stage's time
(the bench passes them; the defaults are this machine's pipeline timings at the scale of
a remote judge), then records progress and enqueues the next stage in one fenced
transaction, exactly as src/citerun/worker/tasks.py does. Sleeping keeps the workers' CPU out of the
measurement: what is compared is the queue's scheduling of the same work.

Served by ``python -m citerun worker --tasks bench.queue.deadline_tasks:registry``.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

import asyncpg

import pydantic

from citerun.core import queue
from citerun.worker import registry as registry_mod

SCHEMA = """
CREATE TABLE IF NOT EXISTS bench_runs (
    run_id       uuid PRIMARY KEY,
    documents    integer NOT NULL,
    citations    integer NOT NULL,
    parsed       integer NOT NULL DEFAULT 0,
    judged       integer NOT NULL DEFAULT 0,
    judge_s      float8 NOT NULL,
    extract_s    float8 NOT NULL,
    finalize_s   float8 NOT NULL,
    submitted_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at  timestamptz)
"""

registry = registry_mod.Registry()


class Stage(pydantic.BaseModel):
    run_id: uuid.UUID
    seconds: float


@contextlib.asynccontextmanager
async def _stage(ctx: registry_mod.TaskContext, payload: Stage) -> AsyncIterator[asyncpg.Connection]:
    """The stage's work (a sleep of its seconds), then its fenced transaction."""
    await asyncio.sleep(payload.seconds)
    async with ctx.fenced() as conn:
        yield conn


async def _stage_done(ctx: registry_mod.TaskContext, payload: Stage, counter: str, total: str,
                     then: str, then_seconds: str) -> None:
    """Sleep for the stage, count it on the run (``counter`` of ``total``), and when it was
    the run's last one, enqueue stage ``then`` in the same fenced transaction."""
    async with _stage(ctx, payload) as conn:
        row = await conn.fetchrow(
            f"UPDATE bench_runs SET {counter} = {counter} + 1 WHERE run_id = $1 "
            f"RETURNING {counter} = {total} AS last, {then_seconds} AS seconds", payload.run_id)
        if row["last"]:
            await queue.enqueue(conn, [queue.NewTask(
                then, {"run_id": str(payload.run_id), "seconds": row["seconds"]},
                run_id=payload.run_id)])


@registry.task("parse", payload=Stage)
async def parse(ctx: registry_mod.TaskContext, payload: Stage) -> None:
    await _stage_done(ctx, payload, "parsed", "documents", "extract", "extract_s")


@registry.task("extract", payload=Stage)
async def extract(ctx: registry_mod.TaskContext, payload: Stage) -> None:
    async with _stage(ctx, payload) as conn:
        row = await conn.fetchrow("SELECT citations, judge_s FROM bench_runs WHERE run_id = $1",
                                  payload.run_id)
        await queue.enqueue(conn, [queue.NewTask(
            "judge", {"run_id": str(payload.run_id), "seconds": row["judge_s"]},
            run_id=payload.run_id) for _ in range(row["citations"])])


@registry.task("judge", payload=Stage)
async def judge(ctx: registry_mod.TaskContext, payload: Stage) -> None:
    await _stage_done(ctx, payload, "judged", "citations", "finalize", "finalize_s")


@registry.task("finalize", payload=Stage)
async def finalize(ctx: registry_mod.TaskContext, payload: Stage) -> None:
    async with _stage(ctx, payload) as conn:
        await conn.execute("UPDATE bench_runs SET finished_at = clock_timestamp() "
                           "WHERE run_id = $1", payload.run_id)
