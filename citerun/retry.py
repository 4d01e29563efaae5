"""Backoff and Retry-After: one implementation for the queue and the HTTP clients."""

from __future__ import annotations

import email.utils
import random
import time


def backoff_s(attempt: int, *, base_s: float, cap_s: float) -> float:
    """Delay before retry number ``attempt`` (1-based): exponential, capped, jittered ±25 %
    (so retries of many tasks that failed together spread out)."""
    raw: float = min(cap_s, base_s * 2.0 ** max(attempt - 1, 0))
    return raw * (0.75 + random.random() / 2)


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
