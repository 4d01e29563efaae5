"""Issue 48 (Low): a document the readers refused stayed refused for good, keyed by its
bytes alone: a new version of the readers (one that reads what an older one could not)
never tried it again, and its bytes uploaded again were not even kept. A refusal is now
remembered by the document's content hash *and* the readers' version
(``runs.PARSER_VERSION``, recorded with the refusal): staged again under the same version
it is not parsed again (no parse slot burnt); under another it is staged with its bytes
and parsed again, once no running run holds the refused one.

The real worker with the real task registry (the parse child refuses a PDF without pages as empty), the
real Postgres and the flow's run creation, as the web and the CLI create runs."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from citerun.core import flow, runs, runspec
from citerun.core.settings import Settings
from citerun.pipeline.settings import PipelineSettings
from citerun.worker import registry, runtime
from tests.conftest import FAST_QUEUE_ENV

CORRUPT = b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\nnot a PDF the reader can open\n"


async def create_run(pool: asyncpg.Pool, settings: Settings) -> uuid.UUID:
    thesis = await runs.stage_document(pool, CORRUPT, "thesis.pdf")
    run_id = uuid.uuid4()
    admission = await flow.create(pool, runs.RunRequest(id=run_id, name="r", thesis=thesis,
                                                         sources=()), settings=settings)
    assert admission.created
    return run_id


async def parse_tasks(pool: asyncpg.Pool, run_id: uuid.UUID) -> int:
    return int(await pool.fetchval("SELECT count(*) FROM tasks WHERE kind = $1 AND run_id = $2",
                                   flow.PARSE_DOCUMENT, run_id))


async def document(pool: asyncpg.Pool) -> asyncpg.Record:
    return await pool.fetchrow("SELECT state, error_reason, raw IS NOT NULL AS has_raw, "
                               "parser_version FROM documents")


async def run_until_ended(pool: asyncpg.Pool, database_url: str, settings: Settings,
                          run_id: uuid.UUID) -> None:
    worker = runtime.Worker(database_url, registry.load("citerun.worker.tasks:registry"),
                            settings, PipelineSettings(), runspec.judge_profiles())
    running = asyncio.create_task(worker.run(install_signal_handlers=False))
    try:
        for _ in range(1200):
            if await pool.fetchval("SELECT state FROM runs WHERE id = $1", run_id) != "running":
                break
            await asyncio.sleep(0.1)
    finally:
        worker.stop()
        await asyncio.wait_for(running, 60)


async def test_a_refusal_is_remembered_by_content_and_parser_version(
        pool: asyncpg.Pool, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in FAST_QUEUE_ENV.items():
        monkeypatch.setenv(key, value)
    settings = Settings(database_url=database_url)
    monkeypatch.setattr(runs, "PARSER_VERSION", "readers-1", raising=False)

    first = await create_run(pool, settings)
    await run_until_ended(pool, database_url, settings, first)
    doc = await document(pool)
    assert (doc["state"], doc["error_reason"], doc["has_raw"]) == ("failed", "empty", False)
    assert doc["parser_version"] == "readers-1"

    # The same bytes under the same readers: remembered, no parse task, no slot burnt.
    second = await create_run(pool, settings)
    assert await parse_tasks(pool, second) == 0
    assert (await document(pool))["state"] == "failed"

    # New readers while a run that counted the refusal still runs: it stays as that run
    # saw it (the second run is running, its extraction queued, no worker serving it).
    monkeypatch.setattr(runs, "PARSER_VERSION", "readers-2", raising=False)
    third = await create_run(pool, settings)
    assert await parse_tasks(pool, third) == 0
    assert (await document(pool))["state"] == "failed"
    await runs.cancel(pool, second, "done with it")
    await runs.cancel(pool, third, "done with it")

    # New readers and no run holding it: staged with its bytes and parsed again.
    fourth = await create_run(pool, settings)
    doc = await document(pool)
    assert (doc["state"], doc["error_reason"], doc["has_raw"]) == ("staged", None, True)
    assert await parse_tasks(pool, fourth) == 1
    await run_until_ended(pool, database_url, settings, fourth)
    doc = await document(pool)
    assert (doc["state"], doc["error_reason"], doc["parser_version"]) == (
        "failed", "empty", "readers-2")
    assert await pool.fetchval("SELECT state FROM runs WHERE id = $1", fourth) == "failed"
