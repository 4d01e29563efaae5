"""A run's token budget for the judge: the only state, ``spent``, lives with the run."""

from __future__ import annotations

from citerun.pipeline.judging.types import BudgetExhausted


class TokenBudget:
    """Tokens a run may spend on the judge; ``limit=None`` means no limit.

    ``spent`` is the only state: the caller stores it with the run and passes it back
    in when a worker resumes the run, so a redeploy does not reset the count. The
    check is made before each request, so the request that crosses the limit still
    completes and is counted; the next one raises :class:`BudgetExhausted`.
    """

    def __init__(self, limit: int | None, spent: int = 0) -> None:
        if limit is not None and limit < 0:
            raise ValueError("limit must not be negative")
        if spent < 0:
            raise ValueError("spent must not be negative")
        self._limit = limit
        self._spent = spent

    @property
    def limit(self) -> int | None:
        return self._limit

    @property
    def spent(self) -> int:
        return self._spent

    @property
    def remaining(self) -> int | None:
        return None if self._limit is None else max(self._limit - self._spent, 0)

    @property
    def exhausted(self) -> bool:
        return self._limit is not None and self._spent >= self._limit

    def check(self) -> None:
        """Raise :class:`BudgetExhausted` if no tokens are left."""
        if self.exhausted:
            raise BudgetExhausted(
                f"the run's judge token budget is used up: {self._spent} of {self._limit} tokens spent"
            )

    def charge(self, tokens: int) -> None:
        """Count ``tokens`` as spent (negative counts are ignored)."""
        self._spent += max(tokens, 0)

