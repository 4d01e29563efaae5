"""A find_source task that dies on every attempt (issue 51) costs only its work: the
citations waiting for it get ``unresolved_citation`` naming the failure and the
identifiers tried, the run goes on, and the last one enqueues the report. Before the dead
hook knew the kind, the flow failed the whole run ("find_source task N failed on every
attempt")."""

from __future__ import annotations

import uuid

import asyncpg

from citerun.core import flow, queue, runs, sql
from citerun.core.settings import QueueSettings, Settings
from citerun.pipeline import fetched, openaccess
from citerun.worker import tasks

QUEUE = QueueSettings()
_TASKS = sql.load("citerun.worker", "tasks.sql")
_FETCHING = sql.load("citerun.worker", "fetching.sql")

STORED = """Traceback (most recent call last):
  File "/app/src/citerun/worker/fetching.py", line 200, in find_source
ConnectionResetError: [Errno 104] Connection reset by peer"""


async def test_a_dead_find_costs_only_its_work(pool: asyncpg.Pool) -> None:
    thesis = await runs.stage_document(pool, b"%PDF-1.7 thesis", "thesis.pdf", tenant="t")
    run_id = uuid.uuid4()
    await flow.create(pool, runs.RunRequest(id=run_id, name="r", thesis=thesis, sources=(),
                                            tenant="t"), settings=QUEUE)
    ids = openaccess.WorkIds.build(doi="10.5555/gone.2019", title="Gone", first_author="Doe",
                                   year=2019)
    key = ids.key()
    await pool.execute(_FETCHING["run_fetch_want"], run_id, key, "doe2019", "Doe (2019). Gone.",
                       fetched.ids_to_json(ids))
    waiting = [await pool.fetchval(_TASKS["citation_insert"], run_id, n, "doe2019", r"\cite{doe2019}",
                                   claim, 1, None, None, "Doe (2019). Gone.", None, None, None,
                                   None, key)
               for n, claim in enumerate(["One claim.", "Another claim."], 1)]
    [task_id] = await queue.enqueue(pool, [flow.of(QUEUE).task(
        flow.FIND_SOURCE, flow.FindPayload(run_id=run_id, work_key=key), run_id=run_id,
        priority=0, dedupe_key=flow.find_key(run_id, key))])
    await pool.execute("UPDATE tasks SET state = 'failed', last_error = $2 WHERE id = $1",
                       task_id, STORED)

    await tasks.on_dead(pool, [task_id], Settings())

    run = await runs.get(pool, run_id)
    assert run is not None and run["state"] == "running", run
    rows = await pool.fetch("SELECT citation_id, verdict, rationale FROM verdicts "
                            "WHERE run_id = $1 ORDER BY citation_id", run_id)
    assert [r["citation_id"] for r in rows] == waiting
    for row in rows:
        assert row["verdict"] == "unresolved_citation"
        assert "DOI 10.5555/gone.2019" in row["rationale"]
        assert "(connection_reset_error)" in row["rationale"] and "Traceback" not in row["rationale"]
    status = await pool.fetchrow("SELECT status, error FROM run_fetches WHERE run_id = $1", run_id)
    assert (status["status"], status["error"]) == ("failed", "connection_reset_error")
    assert await pool.fetchval("SELECT count(*) FROM tasks WHERE run_id = $1 AND kind = $2",
                               run_id, flow.FINALIZE_RUN) == 1
