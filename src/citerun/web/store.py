"""The web service's SQL: who owns which run, one user's caps, the service's keys.

Ownership is one row per run (``web_runs``, migration 0015); a document is a user's when
one of their runs uses it. Every read takes the user, so another user's run is simply
not found (the API answers 404, as for an id nobody used).
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

import asyncpg

from citerun import errors, sql

_Q = sql.load("citerun", "queries/web.sql")

#: The name of the CSRF tokens' HMAC key in ``web_keys``.
CSRF_KEY = "csrf"


class OverCap(errors.CiterunError):
    """An upload the user's caps refuse; ``status`` is the HTTP answer (429 or 413)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class UserCaps:
    max_active_runs: int
    max_staged_bytes: int


async def admit(conn: asyncpg.Connection, owner: str, run_id: uuid.UUID,
                caps: UserCaps) -> None:
    """Record ``owner``'s new run and check their caps, in the transaction that staged
    the bytes and inserted the run (so both count); raise :class:`OverCap` to roll all of
    it back. The per-user lock makes two uploads at once count each other."""
    await conn.execute(_Q["web_owner_lock"], owner)
    await conn.execute(_Q["web_run_insert"], run_id, owner)
    usage = await conn.fetchrow(_Q["web_usage"], owner)
    if usage["active_runs"] > caps.max_active_runs:
        raise OverCap(429, f"you have {usage['active_runs'] - 1} active run(s); the cap is "
                      f"{caps.max_active_runs}: wait for one to finish or cancel one")
    if usage["staged_bytes"] > caps.max_staged_bytes:
        raise OverCap(413, f"your running runs would hold {usage['staged_bytes']} staged "
                      f"bytes; the cap is {caps.max_staged_bytes}")


async def run_of(conn: asyncpg.Connection | asyncpg.Pool, run_id: uuid.UUID,
                 owner: str) -> asyncpg.Record | None:
    return await conn.fetchrow(_Q["web_run_owned"], run_id, owner)


async def runs_of(conn: asyncpg.Connection | asyncpg.Pool, owner: str,
                  limit: int) -> list[asyncpg.Record]:
    return list(await conn.fetch(_Q["web_runs_of_owner"], owner, limit))


async def run_documents(conn: asyncpg.Connection | asyncpg.Pool,
                        run_id: uuid.UUID) -> list[asyncpg.Record]:
    return list(await conn.fetch(_Q["web_run_documents"], run_id))


async def document_of(conn: asyncpg.Connection | asyncpg.Pool, digest: str,
                      owner: str) -> asyncpg.Record | None:
    return await conn.fetchrow(_Q["web_document_owned"], digest, owner)


async def secret_key(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> bytes:
    """The named key, made on first use (the first replica's wins)."""
    await conn.execute(_Q["web_key_insert"], name, os.urandom(32))
    secret = await conn.fetchval(_Q["web_key_get"], name)
    assert isinstance(secret, bytes)
    return secret
