"""A judge task that dies costs only its citation (issue 46): the citation gets
``not_checked`` with a reason that names its source file, the run's other citations of the
same claim and source take it too, and the run goes on to its report. Before, the run
failed with "judge_citation task N failed on every attempt (value_error)", no report,
neither the citation nor the file named. A budget still stops the run."""

from __future__ import annotations

import uuid

import asyncpg

from citerun.core import flow, queue, runs, sql
from citerun.core.settings import QueueSettings, Settings
from citerun.worker import dead, tasks

QUEUE = QueueSettings()
_TASKS = sql.load("citerun.worker", "tasks.sql")

#: What bm25s raised for a source whose text layer was U+FFFD only (as a task stores it).
STORED = """Traceback (most recent call last):
  File "/app/src/citerun/pipeline/ranking.py", line 38, in build_bm25
    retriever.index(tokens, show_progress=False)
ValueError: max() arg is an empty sequence"""


async def _run_with_citations(pool: asyncpg.Pool, claims: list[str]) -> tuple[uuid.UUID, list[int]]:
    thesis = await runs.stage_document(pool, b"%PDF-1.7 thesis", "thesis.pdf", tenant="team-a")
    source = await runs.stage_document(pool, b"%PDF-1.7 bostock", "Bostock_1999.pdf",
                                       tenant="team-a")
    run_id = uuid.uuid4()
    await flow.create(pool, runs.RunRequest(id=run_id, name="r", thesis=thesis, sources=(source,),
                                            tenant="team-a", namespace="team-a"), settings=QUEUE)
    await pool.execute("UPDATE runs SET state = 'running' WHERE id = $1", run_id)
    ids = [await pool.fetchval(_TASKS["citation_insert"], run_id, n, "bostock1999",
                               "(Bostock, 1999)", claim, 1, None, source.digest, None, "key",
                               1.0, None, None, None)
           for n, claim in enumerate(claims, 1)]
    return run_id, ids


async def _dead_judge(pool: asyncpg.Pool, run_id: uuid.UUID, citation_id: int,
                      stored: str) -> int:
    [task_id] = await queue.enqueue(pool, [queue.NewTask(
        flow.JUDGE_CITATION, {"citation_id": citation_id}, run_id=run_id,
        dedupe_key=f"judge:{citation_id}")])
    await pool.execute("UPDATE tasks SET state = 'failed', last_error = $2 WHERE id = $1",
                       task_id, stored)
    return task_id


async def test_a_dead_judge_task_costs_only_its_citation(pool: asyncpg.Pool) -> None:
    claim = "Faults reactivate along old sutures."
    run_id, (first, same, other) = await _run_with_citations(pool, [claim, claim, "Another."])
    task_id = await _dead_judge(pool, run_id, first, STORED)
    await tasks.on_dead(pool, [task_id], Settings())
    rows = {r["citation_id"]: r for r in await pool.fetch(
        "SELECT citation_id, verdict, rationale FROM verdicts WHERE run_id = $1", run_id)}
    assert set(rows) == {first, same}  # the same claim and source take it; the other waits
    for row in rows.values():
        assert row["verdict"] == "not_checked"
        assert "Bostock_1999.pdf" in row["rationale"] and "(value_error)" in row["rationale"]
        assert "Traceback" not in row["rationale"] and "max()" not in row["rationale"]
    run = await runs.get(pool, run_id)
    assert run is not None and run["state"] == "running", run
    assert not await pool.fetchval("SELECT count(*) FROM tasks WHERE run_id = $1 AND kind = $2",
                                   run_id, flow.FINALIZE_RUN)
    # The last citation's task dies too: the run goes on to its report.
    await tasks.on_dead(pool, [await _dead_judge(pool, run_id, other, STORED)], Settings())
    assert await pool.fetchval("SELECT count(*) FROM tasks WHERE run_id = $1 AND kind = $2",
                               run_id, flow.FINALIZE_RUN) == 1
    run = await runs.get(pool, run_id)
    assert run is not None and run["state"] == "running", run


async def test_a_spent_budget_still_stops_the_run(pool: asyncpg.Pool) -> None:
    run_id, (citation,) = await _run_with_citations(pool, ["A claim."])
    stored = "citerun.worker.tasks.JudgeSpendExhausted: namespace 'team-a' has spent 500 tokens"
    await tasks.on_dead(pool, [await _dead_judge(pool, run_id, citation, stored)], Settings())
    run = await runs.get(pool, run_id)
    assert run is not None and run["state"] == "failed"
    assert "(judge_spend_exhausted)" in run["error"]
    assert not await pool.fetchval("SELECT count(*) FROM verdicts WHERE run_id = $1", run_id)


def test_the_reason_names_the_file_in_words() -> None:
    words = dead.not_checked_reason("scan.pdf", "model_mismatch")
    assert "scan.pdf" in words and "another model" in words and "citerun reembed" in words
    assert "against its source" in dead.not_checked_reason(None, "value_error")
