"""The pipeline flow: the settings decide the attempts; a dead parse fails its document
and the run goes on; the core's SQL takes the flow's kinds as parameters."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pydantic
import pytest

from citerun.core import flow, runs
from citerun.core.settings import QueueSettings, Settings
from citerun.pipeline.settings import PipelineSettings
from citerun.worker import registry as registry_mod
from citerun.worker import runtime
from tests.conftest import FAST_QUEUE_ENV

#: The queue settings the runs here are created with (the defaults).
QUEUE = QueueSettings()


class _Parse(pydantic.BaseModel):
    digest: str


def _failing_registry() -> registry_mod.Registry:
    registry = registry_mod.Registry()

    @registry.task(flow.PARSE_DOCUMENT, payload=_Parse)
    async def parse(ctx: registry_mod.TaskContext, payload: _Parse) -> None:
        raise RuntimeError(f"cannot parse {payload.digest[:8]}")

    async def on_dead(pool: asyncpg.Pool, task_ids: list[int], settings: Settings) -> None:
        await flow.of(settings).on_dead(pool, task_ids)

    registry.on_dead = on_dead
    return registry


async def test_max_attempts_from_the_environment_dead_letters_after_two_attempts(
        pool: asyncpg.Pool, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {**FAST_QUEUE_ENV, "CITERUN_QUEUE__MAX_ATTEMPTS": "2"}.items():
        monkeypatch.setenv(key, value)
    settings = Settings(database_url=database_url)
    assert settings.queue.max_attempts == 2
    thesis = await runs.stage_document(pool, b"%PDF-1.7 not really", "thesis.pdf")
    run_id = uuid.uuid4()
    admission = await flow.create(pool, runs.RunRequest(id=run_id, name="r", thesis=thesis,
                                                         sources=()), settings=settings)
    assert admission.created
    worker = runtime.Worker(database_url, _failing_registry(), settings, PipelineSettings(), {})
    running = asyncio.create_task(worker.run(install_signal_handlers=False))
    try:
        for _ in range(400):
            task = await pool.fetchrow(
                "SELECT state, attempt, max_attempts, last_error FROM tasks WHERE kind = $1",
                flow.PARSE_DOCUMENT)
            if task["state"] == "failed":
                break
            await asyncio.sleep(0.05)
    finally:
        worker.stop()
        await asyncio.wait_for(running, 30)
    assert (task["state"], task["attempt"], task["max_attempts"]) == ("failed", 2, 2)
    assert "cannot parse" in task["last_error"]
    # The flow's dead-task policy: the document fails for this run (crashed on every
    # attempt: lost leases, a killed worker), the run goes on to extraction, and the
    # document stays staged with its bytes for another run (issue 27).
    doc = await pool.fetchrow("SELECT state, error_reason, raw IS NOT NULL AS has_raw"
                              " FROM documents WHERE digest = $1", thesis.digest)
    assert (doc["state"], doc["error_reason"], doc["has_raw"]) == ("staged", None, True)
    source = await pool.fetchrow("SELECT error_reason FROM run_sources WHERE run_id = $1",
                                 run_id)
    assert source["error_reason"] == "crashed"
    extract = await pool.fetchrow("SELECT state, max_attempts FROM tasks WHERE kind = $1",
                                  flow.EXTRACT_CITATIONS)
    assert extract is not None and extract["max_attempts"] == 2


async def test_attempts_per_kind_override_the_default(pool: asyncpg.Pool) -> None:
    settings = QueueSettings(max_attempts=3, max_attempts_by_kind={flow.PARSE_DOCUMENT: 7})
    thesis = await runs.stage_document(pool, b"%PDF-1.7 t", "t.pdf")
    await flow.create(pool, runs.RunRequest(id=uuid.uuid4(), name="r", thesis=thesis,
                                            sources=(),
                                            fetches=(runs.FetchRequest("http://127.0.0.1:9/s.pdf",
                                                                       "s.pdf"),)),
                      settings=settings)
    rows = dict(await pool.fetch("SELECT kind, max_attempts FROM tasks"))
    assert rows == {flow.PARSE_DOCUMENT: 7, flow.FETCH_DOCUMENT: 3}


def test_attempts_per_kind_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITERUN_QUEUE__MAX_ATTEMPTS_BY_KIND", '{"judge_citation": 9}')
    assert Settings().queue.attempts_for(flow.JUDGE_CITATION) == 9
    assert Settings().queue.attempts_for(flow.PARSE_DOCUMENT) == 5


async def test_extraction_waits_for_open_downloads(pool: asyncpg.Pool) -> None:
    thesis = await runs.stage_document(pool, b"%PDF-1.7 t", "t.pdf")
    run_id = uuid.uuid4()
    await flow.create(pool, runs.RunRequest(
        id=run_id, name="r", thesis=thesis, sources=(),
        fetches=(runs.FetchRequest("http://127.0.0.1:9/s.pdf", "s.pdf"),)), settings=QUEUE)
    await pool.execute("UPDATE documents SET state = 'parsed'")
    async with pool.acquire() as conn, conn.transaction():
        await runs.lock(conn, run_id)
        await flow.of(QUEUE).advance(conn, run_id, priority=0)
        assert not await runs.tasks_open(conn, run_id, [flow.EXTRACT_CITATIONS])
        await conn.execute("UPDATE tasks SET state = 'succeeded' WHERE kind = $1",
                           flow.FETCH_DOCUMENT)
        await flow.of(QUEUE).advance(conn, run_id, priority=0)
        await flow.of(QUEUE).advance(conn, run_id, priority=0)  # deduped
        assert await conn.fetchval("SELECT count(*) FROM tasks WHERE kind = $1",
                                   flow.EXTRACT_CITATIONS) == 1
