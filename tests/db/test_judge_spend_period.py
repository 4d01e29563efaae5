"""Issue 48, finding 1 (Medium): the per-namespace judge budget leaked at the period
boundary.

A namespace's spend for a period was the sum of ``tokens_spent`` of its runs CREATED in
the period, so runs created before midnight UTC that judged after it counted in neither
day: three late runs spent their 1,000 tokens each and the new day's run its 500, 3,500
tokens against a 500-a-day budget. Spend is now charged to the day it is spent
(``judge_spend``, by ``run_add_tokens``), and the overshoot is at most the namespace's
judges in flight times one citation's answers (docs/security.md).

Each judge here goes through the worker's own budget path: ``_namespace_tokens_left``
before it asks (as ``judge_citation`` does, with the same limit on top of the run's cap),
then ``run_add_tokens`` with what the answer cost. "Advancing the clock" moves every
recorded time of the database one day back (runs' times and the spend ledger), which is
the same to the queries as the next day starting.
"""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from citerun.core import flow, runs, runspec
from citerun.core.settings import QueueSettings
from citerun.worker import tasks

QUEUE = QueueSettings()
BUDGET = 500
ANSWER = 100  # tokens of one judge answer
PROFILES = {"metered": runspec.JudgeProfile.model_validate({
    "baseUrl": "http://127.0.0.1:9/v1", "model": "m", "namespaces": ["*"],
    "maxTokensPerRun": 1000, "maxTokensPerNamespace": BUDGET, "budgetPeriod": "day"})}
SPEC = runspec.RunSpec.model_validate({
    "thesis": {"name": "thesis.pdf", "digest": "0" * 64},
    "sources": [{"name": "s.pdf", "digest": "1" * 64}],
    "judge": {"kind": "openai", "openai": {"profile": "metered"}}})


async def _create(pool: asyncpg.Pool, tenant: str) -> uuid.UUID:
    thesis = await runs.stage_document(pool, b"%PDF-1.7 " + uuid.uuid4().bytes, "thesis.pdf",
                                       tenant=tenant)
    run_id = uuid.uuid4()
    spec = runspec.RunSpec.model_validate({
        "thesis": {"name": "thesis.pdf", "digest": thesis.digest},
        "sources": [{"name": "s.pdf", "digest": "1" * 64}],
        "judge": {"kind": "openai", "openai": {"profile": "metered"}}}).to_json()
    admitted = await flow.create(pool, runs.RunRequest(
        id=run_id, name="r", thesis=thesis, sources=(), tenant=tenant, spec=spec),
        settings=QUEUE)
    assert admitted.created
    return run_id


async def _limit(pool: asyncpg.Pool, run_id: uuid.UUID, tenant: str) -> tuple[int, int] | None:
    """What ``judge_citation`` gives the judge's TokenBudget: (limit, spent), or None when
    the namespace's budget is spent (the task fails with judge_spend_exhausted)."""
    spent = int(await pool.fetchval("SELECT tokens_spent FROM runs WHERE id = $1", run_id))
    try:
        left = await tasks._namespace_tokens_left(pool, PROFILES, SPEC, tenant)
    except tasks.JudgeSpendExhausted:
        return None
    assert left is not None
    return min(PROFILES["metered"].budget(None), left + spent), spent


async def _record(pool: asyncpg.Pool, run_id: uuid.UUID, tokens: int) -> None:
    """The answer's tokens, as ``judge_citation`` records them (in its transaction)."""
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(tasks._Q["run_add_tokens"], run_id, tokens)


async def _judge_run(pool: asyncpg.Pool, run_id: uuid.UUID, tenant: str,
                     citations: int = 10) -> int:
    """Judge the run's citations one after another; the tokens it spent."""
    spent = 0
    for _ in range(citations):
        given = await _limit(pool, run_id, tenant)
        if given is None:
            break
        limit, run_spent = given
        if run_spent >= limit:  # the TokenBudget's check before the request
            break
        await _record(pool, run_id, ANSWER)
        spent += ANSWER
    return spent


async def _advance_a_day(pool: asyncpg.Pool) -> None:
    """Tomorrow: every recorded time of the database moves one day back."""
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("UPDATE runs SET created_at = created_at - interval '1 day', "
                           "updated_at = updated_at - interval '1 day'")
        if await conn.fetchval("SELECT to_regclass('judge_spend')") is not None:
            await conn.execute("UPDATE judge_spend SET day = day - 1")


async def test_runs_created_before_midnight_that_judge_after_it_count_in_the_new_day(
        pool: asyncpg.Pool) -> None:
    # Period P: three runs of "law" are created; none has judged yet.
    late = [await _create(pool, "law") for _ in range(3)]
    await _advance_a_day(pool)
    # Period P+1: they judge now, and so does a run created today.
    spent_today = [await _judge_run(pool, run_id, "law") for run_id in late]
    spent_today.append(await _judge_run(pool, await _create(pool, "law"), "law"))
    # (before: [1000, 1000, 1000, 500], 3,500 tokens in a day of 500)
    assert sum(spent_today) <= BUDGET, spent_today
    assert spent_today == [BUDGET, 0, 0, 0], spent_today
    # The next day has its own budget again, for an old run as for a new one.
    await _advance_a_day(pool)
    assert await _judge_run(pool, late[1], "law") == BUDGET
    # Another namespace was never charged.
    assert await _judge_run(pool, await _create(pool, "physics"), "physics") == BUDGET


async def test_deleting_runs_does_not_give_their_spend_back(pool: asyncpg.Pool) -> None:
    first = await _create(pool, "law")
    assert await _judge_run(pool, first, "law") == BUDGET
    await pool.execute("DELETE FROM runs WHERE id = $1", first)
    # (before: the deleted run's 500 tokens were no longer counted: 500 more)
    assert await _judge_run(pool, await _create(pool, "law"), "law") == 0


@pytest.mark.parametrize("in_flight", [1, 4])
async def test_overshoot_at_the_boundary_is_at_most_the_judges_in_flight_times_one_answer(
        pool: asyncpg.Pool, in_flight: int) -> None:
    """400 of the 500 are spent in P; ``in_flight`` judges check the budget before
    midnight and record their answers after it; then the namespace judges on in P+1.
    Neither day's spend goes over the budget by more than ``in_flight`` answers, the
    documented bound (docs/security.md)."""
    spent = {"P": 0, "P+1": 0}
    old = await _create(pool, "law")
    for _ in range(4):
        await _record(pool, old, ANSWER)
        spent["P"] += ANSWER
    flying = [await _create(pool, "law") for _ in range(in_flight)]
    given = await asyncio.gather(*(_limit(pool, run_id, "law") for run_id in flying))
    assert all(g is not None and g[1] < g[0] for g in given), given  # each may ask
    await _advance_a_day(pool)
    for run_id in flying:  # the answers arrive after midnight
        await _record(pool, run_id, ANSWER)
        spent["P+1"] += ANSWER
    for run_id in (old, *flying, await _create(pool, "law")):
        spent["P+1"] += await _judge_run(pool, run_id, "law")
    assert spent["P"] <= BUDGET + in_flight * ANSWER, spent
    assert spent["P+1"] <= BUDGET + in_flight * ANSWER, spent
    # The new day was not left unbounded (before: every run spent to its own cap).
    assert spent["P+1"] <= max(BUDGET, in_flight * ANSWER), spent
    # What the namespace was charged today is what it spent since midnight.
    left = BUDGET - spent["P+1"]
    if left > 0:
        assert await tasks._namespace_tokens_left(pool, PROFILES, SPEC, "law") == left
    else:
        with pytest.raises(tasks.JudgeSpendExhausted):
            await tasks._namespace_tokens_left(pool, PROFILES, SPEC, "law")
