"""The LLM judge's answer cache in Postgres: a re-run asks nothing and costs nothing."""

from __future__ import annotations

import asyncpg
import pytest

from citerun.pipeline import judge
from citerun.pipeline.judging import cache

_ANSWER = '{"verdict": "supported", "confidence": 0.8, "evidence": [1], "rationale": "[1] states it."}'


async def test_an_answer_is_stored_once_and_counted_on_each_hit(pool: asyncpg.Pool) -> None:
    store = judge.PostgresAnswerCache(pool)
    key = cache.key_of("m", [{"role": "user", "content": "claim"}])
    assert await store.get(key) is None
    await store.put(key, "m", _ANSWER, 321)
    await store.put(key, "m", _ANSWER.replace("0.8", "0.1"), 999)  # the first answer stays
    answer, tokens = await store.get(key) or ("", 0)
    assert tokens == 321 and '"confidence": 0.8' in answer
    row = await pool.fetchrow("SELECT model, tokens, hits, answer->>'verdict' AS verdict "
                              "FROM judge_answers WHERE key = $1", key)
    assert dict(row) == {"model": "m", "tokens": 321, "hits": 1, "verdict": "supported"}


async def test_the_key_must_be_a_sha256(pool: asyncpg.Pool) -> None:
    with pytest.raises(asyncpg.CheckViolationError):
        await judge.PostgresAnswerCache(pool).put("not-a-digest", "m", _ANSWER, 1)


def test_the_key_is_canonical_and_sensitive_to_everything_asked() -> None:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "claim [1] x"}]
    key = cache.key_of("m", messages)
    assert key == cache.key_of("m", [dict(reversed(list(m.items()))) for m in messages])
    assert len({key, cache.key_of("m2", messages),
                cache.key_of("m", [messages[0], {"role": "user", "content": "claim [1] y"}])}) == 3


async def test_answers_are_kept_per_tenant(pool: asyncpg.Pool) -> None:
    """Issue 27: tenant B paid no tokens for A's answers, and so learnt that A asked."""
    key = cache.key_of("m", [{"role": "user", "content": "a claim both theses make"}])
    alice, bob = judge.PostgresAnswerCache(pool, "alice"), judge.PostgresAnswerCache(pool, "bob")
    await alice.put(key, "m", _ANSWER, 100)
    assert await alice.get(key) is not None
    assert await bob.get(key) is None
    await bob.put(key, "m", _ANSWER, 120)
    assert (await bob.get(key) or ("", 0))[1] == 120
    assert await pool.fetchval("SELECT count(*) FROM judge_answers") == 2
