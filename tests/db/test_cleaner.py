"""Retention: the operator leader's cleaner deletes old finished rows in small batches,
keeps what is live or still shown by a CitationRun, and never waits on a locked row."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from citerun.core import flow, queue, runs
from citerun.core.settings import QueueSettings
from citerun.operator import cleaner
from citerun.operator import settings as op_settings

#: The queue settings the runs here are created with (the defaults).
QUEUE = QueueSettings()

DAY = 24 * 3600.0


async def _run(pool: asyncpg.Pool, name: str, *, state: str, age_days: float,
               resource: uuid.UUID | None = None) -> uuid.UUID:
    doc = await runs.stage_document(pool, f"%PDF {name}".encode(), f"{name}.pdf")
    run_id = uuid.uuid4()
    await flow.create(pool, runs.RunRequest(id=run_id, name=name, thesis=doc, sources=(),
                                            namespace="ns", resource_uid=resource), settings=QUEUE)
    await pool.execute(
        "UPDATE tasks SET state = 'succeeded', finished_at = now() - make_interval(days => $2)"
        " WHERE run_id = $1", run_id, age_days)
    if state != "running":
        await pool.execute(
            "UPDATE runs SET state = $2, finished_at = now() - make_interval(days => $3)"
            " WHERE id = $1", run_id, state, age_days)
        await pool.execute("INSERT INTO reports (run_id, json, html) VALUES ($1, '{}', '')",
                           run_id)
    return run_id


async def test_a_round_deletes_old_finished_rows_and_keeps_the_rest(pool: asyncpg.Pool) -> None:
    old = await _run(pool, "old", state="succeeded", age_days=20)
    old_failed = await _run(pool, "old-failed", state="failed", age_days=15)
    recent = await _run(pool, "recent", state="succeeded", age_days=3)
    live = await _run(pool, "live", state="running", age_days=20)
    shown_uid, gone_uid = uuid.uuid4(), uuid.uuid4()
    shown = await _run(pool, "shown", state="succeeded", age_days=30, resource=shown_uid)
    gone = await _run(pool, "gone", state="succeeded", age_days=30, resource=gone_uid)
    await pool.execute("UPDATE documents SET raw = 'x'::bytea")  # bytes still staged
    [loose] = await queue.enqueue(pool, [queue.NewTask("k")])
    await pool.execute("UPDATE tasks SET state = 'failed', finished_at = now() - interval '30 days'"
                       " WHERE id = $1", loose)
    [waiting] = await queue.enqueue(pool, [queue.NewTask("k")])
    await pool.execute("INSERT INTO workers (id, version, heartbeat_at) VALUES "
                       "('long-gone', '0', now() - interval '20 days'), ('alive', '0', now())")
    asked: list[tuple[str, str]] = []

    async def exists(namespace: str, name: str, uid: uuid.UUID, run_id: uuid.UUID) -> bool:
        asked.append((namespace, name))
        return uid == shown_uid

    clean = cleaner.Cleaner(pool, cleaner.CleanerConfig(batch_size=2), resource_exists=exists)
    result = await clean.run_once()

    left = {r["id"] for r in await pool.fetch("SELECT id FROM runs")}
    assert left == {recent, live, shown}
    assert {old, old_failed, gone}.isdisjoint(left)
    assert sorted(asked) == [("ns", "gone"), ("ns", "shown")]
    assert await pool.fetchval("SELECT count(*) FROM reports") == 2  # recent, shown
    tasks = {r["id"]: r["run_id"] for r in await pool.fetch("SELECT id, run_id FROM tasks")}
    assert waiting in tasks and loose not in tasks
    # A live run keeps its finished tasks: their dedupe keys guard its transitions.
    assert live in tasks.values()
    assert (result.runs, result.kept_runs, result.workers) == (3, 1, 1)
    assert [r["id"] for r in await pool.fetch("SELECT id FROM workers")] == ["alive"]
    staged = dict(await pool.fetch("SELECT filename, raw IS NOT NULL FROM documents"))
    # Bytes of documents only finished runs use go; a live run's stay. (A deleted run's
    # documents are used by no run any more: the staging TTL takes those.)
    assert (staged["live.pdf"], staged["recent.pdf"], staged["shown.pdf"]) == (True, False, False)
    again = await clean.run_once()
    assert again.total == 0


async def test_the_cleaner_skips_locked_rows_instead_of_waiting(pool: asyncpg.Pool) -> None:
    ids = await queue.enqueue(pool, [queue.NewTask("k") for _ in range(5)])
    await pool.execute("UPDATE tasks SET state = 'succeeded', "
                       "finished_at = now() - interval '20 days'")
    async with pool.acquire() as holder, holder.transaction():
        await holder.execute("SELECT id FROM tasks WHERE id = $1 FOR UPDATE", ids[0])
        clean = cleaner.Cleaner(pool, cleaner.CleanerConfig(batch_size=2))
        result = await asyncio.wait_for(clean.run_once(), 10)
    assert result.tasks == 4
    assert [r["id"] for r in await pool.fetch("SELECT id FROM tasks")] == [ids[0]]


def test_retention_defaults_to_fourteen_days_and_reads_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert op_settings.OperatorSettings().retention.max_age_s == 14 * DAY
    monkeypatch.setenv("CITERUN_RETENTION__MAX_AGE_S", "60")
    assert op_settings.OperatorSettings().retention.max_age_s == 60
