"""A dead task fails its run with a stable code and a short message (issue 12, attack 1):
never the stored traceback or a server's response body, which the status, the events and
the report would otherwise show."""

from __future__ import annotations

import uuid

import asyncpg

from citerun.core import errors, flow, queue, runs
from citerun.core.settings import QueueSettings

#: The queue settings the runs here are created with (the defaults).
QUEUE = QueueSettings()

STORED = """Traceback (most recent call last):
  File "/app/src/citerun/pipeline/judging/client.py", line 88, in _complete
    raise JudgeRequestError(f"{resp.status_code}: {resp.text}")
citerun.pipeline.judging.JudgeRequestError: 401: {"error": "internal-admin-token=s3cr3t"}"""


async def test_a_dead_judge_task_fails_the_run_with_a_code_only(pool: asyncpg.Pool) -> None:
    doc = await runs.stage_document(pool, b"%PDF-1.7 t", "t.pdf", tenant="team-a")
    run_id = uuid.uuid4()
    await flow.create(pool, runs.RunRequest(id=run_id, name="r", thesis=doc, sources=(),
                                            tenant="team-a", namespace="team-a"), settings=QUEUE)
    [task_id] = await queue.enqueue(pool, [queue.NewTask(
        flow.JUDGE_CITATION, {"citation_id": 1}, run_id=run_id, dedupe_key="judge:test")])
    await pool.execute("UPDATE tasks SET state = 'failed', last_error = $2 WHERE id = $1",
                       task_id, STORED)
    await flow.of(QUEUE).on_dead(pool, [task_id])
    run = await runs.get(pool, run_id)
    assert run is not None and run["state"] == "failed"
    assert run["error"] == (f"judge_citation task {task_id} failed on every attempt "
                            "(judge_request_error)")


def test_codes_are_stable_and_never_text() -> None:
    assert errors.code_of(STORED) == "judge_request_error"
    assert errors.code_of("plain words with spaces") == "error"
    assert errors.code_of(None) == "error"
    assert errors.code_of("ValueError: boom") == "value_error"
