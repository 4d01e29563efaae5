"""The one retry policy: backoff, cap, jitter, Retry-After, attempts, retryable answers."""

from __future__ import annotations

import random

import pytest

from citerun.core import db, retry


def test_delays_double_from_the_base_up_to_the_cap_with_jitter() -> None:
    policy = retry.RetryPolicy(base_s=1.0, cap_s=5.0, jitter=0.25)
    rng = random.Random(7)
    for attempt, nominal in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (9, 5.0)]:
        delays = [policy.delay_s(attempt, rng=rng) for _ in range(200)]
        assert 0.75 * nominal <= min(delays) and max(delays) <= 1.25 * nominal
        assert max(delays) - min(delays) > 0.2 * nominal  # jittered, not constant


def test_retry_after_wins_but_is_capped() -> None:
    policy = retry.RetryPolicy(base_s=1.0, cap_s=5.0, retry_after_cap_s=60.0)
    assert policy.delay_s(1, retry_after="30") == 30.0
    assert policy.delay_s(1, retry_after="3600") == 60.0
    assert retry.RetryPolicy(cap_s=7.0).delay_s(1, retry_after="3600") == 7.0


def test_attempts_and_retryable_answers() -> None:
    policy = retry.RetryPolicy(max_attempts=3)
    assert [policy.exhausted(n) for n in (1, 2, 3)] == [False, False, True]
    assert not retry.RetryPolicy().exhausted(10**6)
    assert all(policy.retryable(s) for s in (408, 429, 500, 502, 503, 504))
    assert not any(policy.retryable(s) for s in (400, 401, 403, 404, 422, 501))
    with pytest.raises(ValueError):
        retry.RetryPolicy(jitter=1.5)


async def test_retrying_retries_the_given_errors_then_gives_up() -> None:
    calls: list[int] = []
    waits: list[float] = []

    async def sleep(s: float) -> None:
        waits.append(s)

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionResetError("reset")
        return "ok"

    policy = retry.RetryPolicy(base_s=0.1, cap_s=1.0, max_attempts=5)
    assert await retry.retrying(policy, "test", flaky, errors=db.UNAVAILABLE, sleep=sleep) == "ok"
    assert len(calls) == 3 and len(waits) == 2

    async def down() -> str:
        raise ConnectionRefusedError("refused")

    with pytest.raises(ConnectionRefusedError):
        await retry.retrying(retry.RetryPolicy(base_s=0.0, max_attempts=2), "test", down,
                             errors=db.UNAVAILABLE, sleep=sleep)

    async def bug() -> str:
        raise KeyError("not a database error")

    with pytest.raises(KeyError):
        await retry.retrying(policy, "test", bug, errors=db.UNAVAILABLE, sleep=sleep)


def test_database_unavailable_includes_a_closed_connection() -> None:
    import asyncpg

    assert asyncpg.InterfaceError in db.UNAVAILABLE
    assert asyncpg.PostgresConnectionError in db.UNAVAILABLE


async def test_a_try_again_waits_as_the_server_asked() -> None:
    waits: list[float] = []

    async def sleep(s: float) -> None:
        waits.append(s)

    answers = iter([retry.TryAgain("HTTP 429", status=429, retry_after="7"),
                    retry.TryAgain.no_answer(ConnectionResetError()), None])

    async def call() -> str:
        err = next(answers)
        if err is not None:
            raise err
        return "ok"

    policy = retry.RetryPolicy(base_s=0.0, cap_s=60.0, max_attempts=3)
    assert await retry.retrying(policy, "test", call, errors=(retry.TryAgain,), sleep=sleep) == "ok"
    assert waits == [7.0, 0.0]
    assert str(retry.TryAgain.no_answer(ConnectionResetError())) == "ConnectionResetError"
    assert str(retry.TryAgain.no_answer(OSError("refused"))) == "OSError: refused"


def test_retrying_sync_retries_then_gives_up() -> None:
    waits: list[float] = []
    calls: list[int] = []

    def down() -> str:
        calls.append(1)
        raise retry.TryAgain("HTTP 503", status=503)

    policy = retry.RetryPolicy(base_s=1.0, cap_s=1.0, jitter=0.0, max_attempts=3)
    with pytest.raises(retry.TryAgain, match="HTTP 503"):
        retry.retrying_sync(policy, "test", down, errors=(retry.TryAgain,), sleep=waits.append)
    assert len(calls) == 3 and waits == [1.0, 1.0]
    assert retry.retrying_sync(policy, "test", lambda: "ok", errors=(retry.TryAgain,),
                               sleep=waits.append) == "ok"
