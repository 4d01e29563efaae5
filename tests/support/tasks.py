"""Task handlers the queue tests run in real worker processes.

Each handler records what happened in tables the tests create (``test_starts``: every
execution that began; ``test_done``: written inside the fenced completion, so a row
exists exactly when the task's success was recorded).
"""

from __future__ import annotations

import asyncio
import time

import pydantic

from citerun.worker import registry as registry_mod

registry = registry_mod.Registry()

SCHEMA = """
CREATE TABLE IF NOT EXISTS test_starts (
    task_id bigint NOT NULL, attempt integer NOT NULL, worker_id text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE IF NOT EXISTS test_done (
    task_id bigint NOT NULL, attempt integer NOT NULL, worker_id text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp());
"""


class Work(pydantic.BaseModel):
    seconds: float = 0.0
    cpu: bool = False


async def _record_start(ctx: registry_mod.TaskContext) -> None:
    async with ctx.pool.acquire() as conn:
        await conn.execute("INSERT INTO test_starts (task_id, attempt, worker_id) "
                           "VALUES ($1, $2, $3)", ctx.task.id, ctx.task.attempt, ctx.worker_id)


@registry.task("work", payload=Work)
async def work(ctx: registry_mod.TaskContext, payload: Work) -> None:
    """Sleep (or burn CPU in a thread), then record the success inside the fence."""
    await _record_start(ctx)
    if payload.cpu:
        await ctx.run_cpu(_spin, payload.seconds)
    elif payload.seconds:
        await asyncio.sleep(payload.seconds)
    async with ctx.fenced() as conn:
        await conn.execute("INSERT INTO test_done (task_id, attempt, worker_id) "
                           "VALUES ($1, $2, $3)", ctx.task.id, ctx.task.attempt, ctx.worker_id)


class Nothing(pydantic.BaseModel):
    pass


@registry.task("noop", payload=Nothing)
async def noop(ctx: registry_mod.TaskContext, payload: Nothing) -> None:
    """Do nothing: the runtime completes the task (batched)."""


class Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    count: int


@registry.task("strict", payload=Strict)
async def strict(ctx: registry_mod.TaskContext, payload: Strict) -> None:
    """Accept only {"count": int}."""


@registry.task("boom", payload=Nothing)
async def boom(ctx: registry_mod.TaskContext, payload: Nothing) -> None:
    """Always fail."""
    raise RuntimeError("the boom handler always fails")


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
