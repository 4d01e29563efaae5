"""Issue 41, finding 6 (Medium, kept from issue 27): judge spend had a per-run cap only.

A judge profile now has ``maxTokensPerNamespace`` per ``budgetPeriod`` on top of
``maxTokensPerRun``. A real ``citerun worker`` (one task at a time), the real Postgres and
an OpenAI-compatible endpoint on 127.0.0.1 answering every question at 100 tokens; the
profile allows 500 tokens a day per namespace; the demo thesis asks 10 questions.

* Namespace ``law``'s first run spends its 500 tokens and fails with
  ``judge_spend_exhausted`` (before: it spent 1,000 and succeeded, as would any number of
  runs); its second run fails without asking anything.
* Namespace ``physics`` has a budget of its own (5 questions, then the same failure).
* Spend of an earlier period does not count: once ``law``'s runs and spend are dated two
  days back, a new run of ``law`` asks again, within the new period's 500 (spend is
  charged to the day it is spent, issue 48: tests/db/test_judge_spend_period.py).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import asyncpg
import pytest

from citerun.core import flow, runs, runspec
from citerun.core.settings import QueueSettings
from tests.support import hostile_claims
from tests.unit.test_judge import ChatServer, Reply

#: The queue settings the runs here are created with (the defaults).
QUEUE = QueueSettings()

pytestmark = pytest.mark.chaos

ANSWER = json.dumps({"verdict": "supported", "confidence": 0.9, "evidence": [1],
                     "rationale": "Passage 1 states it."})


async def _start(pool: asyncpg.Pool, tenant: str) -> uuid.UUID:
    thesis = (hostile_claims.EXAMPLES / "thesis.pdf").read_bytes()
    staged = await runs.stage_document(pool, thesis, "thesis.pdf", tenant=tenant)
    sources = [await runs.stage_document(pool, data, name, tenant=tenant)
               for name, data in hostile_claims.demo_sources()]
    spec = runspec.RunSpec.model_validate({
        "thesis": {"name": "thesis.pdf", "digest": staged.digest},
        "sources": [{"name": s.filename, "digest": s.digest} for s in sources],
        "judge": {"kind": "openai", "openai": {"profile": "metered"}}}).to_json()
    run_id = uuid.uuid4()
    await flow.create(pool, runs.RunRequest(id=run_id, name=f"{tenant}-run", thesis=staged,
                                            sources=tuple(sources), tenant=tenant, spec=spec),
                      settings=QUEUE)
    return run_id


async def _ended(pool: asyncpg.Pool, run_id: uuid.UUID, worker: Any) -> asyncpg.Record:
    deadline = time.monotonic() + 180
    while True:
        row = await runs.get(pool, run_id)
        if row["state"] not in ("pending", "running"):
            return row
        assert worker.proc.poll() is None, worker.log()[-3000:]
        assert time.monotonic() < deadline, (dict(row), worker.log()[-3000:])
        await asyncio.sleep(0.2)


async def test_a_namespace_spends_at_most_its_profiles_budget_per_period(
        pool: asyncpg.Pool, spawn_worker: Any) -> None:
    chat = ChatServer()
    chat.script = [Reply(content=ANSWER, tokens=100) for _ in range(200)]
    try:
        profiles = {"metered": {"baseUrl": chat.url, "model": "m", "namespaces": ["*"],
                                "maxTokensPerNamespace": 500, "budgetPeriod": "day"}}
        worker = spawn_worker("spend-w0", tasks="citerun.worker.tasks:registry", env={
            "CITERUN_WORKER__CONCURRENCY": "1",  # a 5 s lease: on a loaded machine the
            # tests' 2 s one expires, and an answer whose task lost its lease is not counted
            "CITERUN_QUEUE__LEASE_S": "5", "CITERUN_QUEUE__HEARTBEAT_S": "1",
            runspec.JUDGE_PROFILES_ENV: json.dumps(profiles)})
        asked: dict[str, int] = {}
        ended: dict[str, asyncpg.Record] = {}
        for label, tenant in (("law-1", "law"), ("law-2", "law"), ("physics-1", "physics")):
            before = len(chat.seen)
            ended[label] = await _ended(pool, await _start(pool, tenant), worker)
            asked[label] = len(chat.seen) - before
        # A new period: law's runs so far were created, and spent, two days ago.
        await pool.execute("UPDATE runs SET created_at = created_at - interval '2 days' "
                           "WHERE tenant = 'law'")
        await pool.execute("UPDATE judge_spend SET day = day - 2 WHERE tenant = 'law'")
        before = len(chat.seen)
        ended["law-3"] = await _ended(pool, await _start(pool, "law"), worker)
        asked["law-3"] = len(chat.seen) - before
    finally:
        chat.close()
    spent = {label: (row["state"], row["tokens_spent"], row["error"]) for label, row in ended.items()}
    print({"asked": asked, "runs": spent})
    for label in ("law-1", "physics-1"):
        state, tokens, error = spent[label]
        assert state == "failed" and "(judge_spend_exhausted)" in (error or ""), spent
        # (a request the endpoint saw may have timed out at the client and been asked
        # again on a loaded machine: only answers count)
        assert tokens == 500 and asked[label] >= 5, (asked, spent)
    state, tokens, error = spent["law-2"]
    assert state == "failed" and "(judge_spend_exhausted)" in (error or "") and tokens == 0
    assert asked["law-2"] == 0, asked
    # The new period: law asks again (some answers may come from its cache, free), within
    # the period's 500 tokens.
    state, tokens, error = spent["law-3"]
    assert asked["law-3"] >= 1 and tokens <= 500, (asked, spent)
    assert state == "succeeded" or "(judge_spend_exhausted)" in (error or ""), spent
