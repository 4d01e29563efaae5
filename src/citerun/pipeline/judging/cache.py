"""The LLM judge's answer cache: an identical question is answered once.

The key is the sha256 of the model name and the exact messages (system prompt, claim,
numbered passages), so a re-run of a thesis, or another thesis citing the same source
for the same claim, costs no tokens; a changed prompt, passage or model is a new key.
:class:`PostgresAnswerCache` keeps the answers in the ``judge_answers`` table
(migration 0005); anything with the same two methods works, e.g. a dict in tests.
"""

from __future__ import annotations

import collections.abc
import hashlib
import json
import typing

from citerun.core import sql

_Q = sql.load("citerun.pipeline.judging", "cache.sql")


class AnswerCache(typing.Protocol):
    """Where validated answers are kept, by key."""

    async def get(self, key: str) -> tuple[str, int] | None:
        """The answer (JSON text) and the tokens it cost, or ``None``."""
        ...

    async def put(self, key: str, model: str, answer: str, tokens: int) -> None:
        """Keep ``answer`` for ``key``; an existing answer stays."""
        ...


def key_of(model: str, messages: collections.abc.Sequence[collections.abc.Mapping[str, str]]) -> str:
    """The cache key of one question: model and messages, canonical JSON, sha256."""
    canonical = json.dumps({"model": model, "messages": list(map(dict, messages))},
                           sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class PostgresAnswerCache:
    """:class:`AnswerCache` over the ``judge_answers`` table of a pool, for one tenant.

    The stored key is the question's key scoped to the ``tenant`` (sha256 of both): one
    tenant's answers are never another's (issue 27: tenant B paid no tokens for A's
    answers and so learnt that A had asked them). ``tenant`` None is the unscoped key
    of one installation's own use (``citerun verify``).
    """

    def __init__(self, pool: typing.Any, tenant: str | None = None) -> None:
        self._pool = pool
        self._tenant = tenant

    def _scoped(self, key: str) -> str:
        if self._tenant is None:
            return key
        return hashlib.sha256(f"{self._tenant}\0{key}".encode("utf-8")).hexdigest()

    async def get(self, key: str) -> tuple[str, int] | None:
        row = await self._pool.fetchrow(_Q["judge_answer_get"], self._scoped(key))
        return None if row is None else (str(row["answer"]), int(row["tokens"]))

    async def put(self, key: str, model: str, answer: str, tokens: int) -> None:
        await self._pool.execute(_Q["judge_answer_put"], self._scoped(key), model, answer,
                                 max(tokens, 0))
