"""Issue 41, finding 4 (Medium): web users shared one judge answer cache. The local
backend files every web user under tenant ``default`` (``web.namespace`` does the same on
a cluster), so a second user who uploaded the first user's files got "(cached answer)"
verdicts at zero tokens -- which told them the first user had asked that claim of that
source.

The real service on loopback, the real Postgres, a real ``citerun worker`` whose judge is
an OpenAI-compatible endpoint on 127.0.0.1 (answering every question "supported"): Alice
runs the demo, then Bob uploads the same files. Bob's questions reach the endpoint and
cost him tokens; none of his verdicts is a cached answer (before the fix 3 of his 10
were, and he paid for 7). Alice running it again is answered from her own cache.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import asyncpg

from tests.e2e.test_web_service import served, users
from tests.support.web_user import User
from tests.unit.test_judge import ChatServer, Reply

ANSWER = json.dumps({"verdict": "supported", "confidence": 0.9, "evidence": [1],
                     "rationale": "Passage 1 states it."})


async def _finished(user: User, run_id: str, timeout_s: float = 300.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        status, body = await user.get(f"/api/runs/{run_id}")
        assert status == 200, body
        if body["state"] != "running":
            assert body["state"] == "succeeded", body
            return dict(body)
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.5)


async def _run(user: User) -> tuple[dict[str, Any], int]:
    status, body = await user.upload()
    assert status == 202, body
    await _finished(user, body["runId"])
    status, report = await user.get(f"/api/runs/{body['runId']}/report.json")
    assert status == 200, report
    return report, int(report["judge_tokens"])


def _cached(report: dict[str, Any]) -> int:
    return sum(1 for c in report["citations"] if "(cached answer)" in c["rationale"])


async def test_a_second_web_user_never_gets_the_first_users_cached_answers(
        pool: asyncpg.Pool, spawn_worker: Callable[..., Any]) -> None:
    chat = ChatServer()
    chat.script = [Reply(content=ANSWER, tokens=100) for _ in range(200)]
    try:
        spawn_worker("judge-w0", tasks="citerun.worker.tasks:registry", env={
            "CITERUN_WORKER__CONCURRENCY": "2", "CITERUN_JUDGE__KIND": "openai",
            # A 5 s lease: the tests' 2 s one can expire on a loaded machine, and a task
            # retried after its answer was given reads it from the (user's own) cache.
            "CITERUN_QUEUE__LEASE_S": "5", "CITERUN_QUEUE__HEARTBEAT_S": "1",
            "CITERUN_JUDGE__OPENAI__BASE_URL": chat.url,
            "CITERUN_JUDGE__OPENAI__API_KEY_ENV": "TEST_JUDGE_KEY_NOT_SET"})
        async with served(pool) as base, users(base, "alice", "bob") as (alice, bob):
            first, alice_tokens = await _run(alice)
            asked_by_alice = len(chat.seen)
            second, bob_tokens = await _run(bob)
            asked_by_bob = len(chat.seen) - asked_by_alice
            again, again_tokens = await _run(alice)
            asked_again = len(chat.seen) - asked_by_alice - asked_by_bob
    finally:
        chat.close()
    print({"alice": (asked_by_alice, alice_tokens, _cached(first)),
           "bob": (asked_by_bob, bob_tokens, _cached(second)),
           "alice_again": (asked_again, again_tokens, _cached(again))})
    assert asked_by_alice > 0 and alice_tokens > 0 and _cached(first) == 0
    # Bob asked for himself and paid for it; nothing of Alice's answers reached him.
    assert asked_by_bob >= asked_by_alice and bob_tokens == alice_tokens
    assert _cached(second) == 0
    # Alice's own cache still answers Alice (the questions that are asked again in the
    # same words: on this machine 3 of the demo's 10).
    assert _cached(again) > 0 and asked_again < asked_by_alice
