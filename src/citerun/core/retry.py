"""One retry policy for everything that retries: the queue, the listener, the worker's
database calls, the HTTP judge and the embedder.

A :class:`RetryPolicy` is a small frozen value (procrastinate's ``RetryStrategy``): how
long to wait before retry number *n* (exponential from ``base_s``, capped at ``cap_s``,
jittered by ``±jitter`` so many retries that failed together spread out), how many
attempts to make, and which HTTP answers are worth another attempt. Callers hand it the
attempt number and, for HTTP, the server's ``Retry-After``; :func:`retrying` (and
:func:`retrying_sync`, for a blocking client) runs a call under a policy until it stops
raising the given errors. An HTTP client raises :class:`TryAgain` from an attempt that
got no answer or a retryable one (with the server's ``Retry-After``), so its requests
are retried by the same loop as everything else. "The database is unavailable" is
defined once, as :data:`citerun.core.db.UNAVAILABLE`. See ``docs/architecture.md``
("Retries").
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: HTTP answers that say "try again later": timeouts, conflicts that clear, rate limits
#: and server errors except 501 (not implemented: retrying cannot help).
RETRYABLE_STATUS: frozenset[int] = frozenset(
    {408, 409, 425, 429} | set(range(500, 600)) - {501})


@dataclass(frozen=True)
class RetryPolicy:
    """How to retry: exponential backoff with a cap and jitter, and when to stop."""

    base_s: float = 1.0
    cap_s: float = 300.0
    #: Each delay is multiplied by a uniform factor in ``[1 - jitter, 1 + jitter]``.
    jitter: float = 0.25
    #: Attempts in all, the first included; None: the caller decides when to stop.
    max_attempts: int | None = None
    #: Upper bound of a wait a server asks for with ``Retry-After``; None: ``cap_s``.
    retry_after_cap_s: float | None = None
    retryable_status: frozenset[int] = field(default=RETRYABLE_STATUS)

    def __post_init__(self) -> None:
        if self.base_s < 0 or self.cap_s < 0 or not 0 <= self.jitter < 1:
            raise ValueError(f"invalid retry policy {self!r}")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def delay_s(self, attempt: int, *, retry_after: str | None = None,
                rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based).

        A server's ``Retry-After`` wins over the backoff (capped at
        ``retry_after_cap_s``); otherwise ``base_s * 2**(attempt-1)``, capped, jittered.
        """
        asked = retry_after_seconds(retry_after)
        if asked is not None:
            return min(asked, self.cap_s if self.retry_after_cap_s is None
                       else self.retry_after_cap_s)
        raw: float = min(self.cap_s, self.base_s * 2.0 ** max(attempt - 1, 0))
        draw = (rng or random).random()
        return raw * (1.0 - self.jitter + 2.0 * self.jitter * draw)

    def exhausted(self, attempt: int) -> bool:
        """Whether attempt number ``attempt`` (1-based) was the last one allowed."""
        return self.max_attempts is not None and attempt >= self.max_attempts

    def retryable(self, status: int) -> bool:
        """Whether an HTTP answer with ``status`` is worth another attempt."""
        return status in self.retryable_status


class TryAgain(Exception):
    """An attempt failed in a way the next one may not: no answer (a refused or reset
    connection, a timeout) or an answer with a retryable status. ``str()`` says what
    happened; ``retry_after`` is the server's ``Retry-After``, which wins over the
    backoff."""

    def __init__(self, problem: str, *, status: int | None = None,
                 retry_after: str | None = None) -> None:
        super().__init__(problem)
        self.status = status
        self.retry_after = retry_after

    @classmethod
    def no_answer(cls, err: BaseException) -> TryAgain:
        """A request that got no answer at all, described by its error."""
        return cls(f"{type(err).__name__}: {err}" if str(err) else type(err).__name__)


def _next_delay(policy: RetryPolicy, what: str, attempt: int, err: BaseException,
                deadline: float | None, rng: random.Random | None) -> float | None:
    """Seconds to wait after failed attempt ``attempt``; None: give up (no attempts or
    time left)."""
    delay = policy.delay_s(attempt, retry_after=getattr(err, "retry_after", None), rng=rng)
    if policy.exhausted(attempt) or (
            deadline is not None and time.monotonic() + delay > deadline):
        return None
    logger.warning("%s failed (%s); retrying in %.1fs", what, err, delay,
                   extra={"action": what, "error": str(err), "attempt": attempt,
                          "delay_s": round(delay, 3)})
    return delay


def _deadline(give_up_after_s: float | None) -> float | None:
    return None if give_up_after_s is None else time.monotonic() + give_up_after_s


async def retrying(policy: RetryPolicy, what: str, call: Callable[[], Awaitable[T]], *,
                   errors: tuple[type[BaseException], ...],
                   give_up_after_s: float | None = None,
                   sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                   rng: random.Random | None = None) -> T:
    """Run ``call`` until it returns, retrying ``errors`` under ``policy``.

    Gives up (re-raising the last error) when the policy's attempts are used up or the
    next wait would end after ``give_up_after_s`` seconds from now. An error with a
    ``retry_after`` (:class:`TryAgain`) waits as the server asked.
    """
    deadline = _deadline(give_up_after_s)
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except errors as err:
            delay = _next_delay(policy, what, attempt, err, deadline, rng)
            if delay is None:
                raise
            await sleep(delay)


def retrying_sync(policy: RetryPolicy, what: str, call: Callable[[], T], *,
                  errors: tuple[type[BaseException], ...],
                  give_up_after_s: float | None = None,
                  sleep: Callable[[float], None] = time.sleep,
                  rng: random.Random | None = None) -> T:
    """:func:`retrying` for a blocking ``call`` (the embedder's HTTP client runs in a
    worker thread, off the event loop)."""
    deadline = _deadline(give_up_after_s)
    attempt = 0
    while True:
        attempt += 1
        try:
            return call()
        except errors as err:
            delay = _next_delay(policy, what, attempt, err, deadline, rng)
            if delay is None:
                raise
            sleep(delay)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    seconds: float = when.timestamp() - (time.time() if now is None else now)
    return max(seconds, 0.0)
