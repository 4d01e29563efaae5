"""The web service's SQL: who owns which run, one user's caps, the service's keys.

Ownership is one row per run (``web_runs``, migration 0015); a document is a user's when
one of their runs uses it. An owner may let a named user read one run (``web_shares``,
migration 0018). Every read takes the user, so another user's run is simply not found
(the API answers 404, as for an id nobody used).
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

import asyncpg

from citerun.core import errors, retention, runs, sql
from citerun.web.units import human_bytes

_Q = sql.load("citerun.web", "store.sql")

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
    await _check_caps(conn, owner, caps)


@dataclass(frozen=True)
class Usage:
    """What one user holds now: their running runs (a submission not yet a run counts)
    and the bytes their running runs' documents keep staged (each digest once)."""

    active_runs: int
    staged_bytes: int


async def usage(conn: asyncpg.Connection | asyncpg.Pool, owner: str) -> Usage:
    row = await conn.fetchrow(_Q["web_usage"], owner)
    return Usage(int(row["active_runs"]), int(row["staged_bytes"]))


async def _check_caps(conn: asyncpg.Connection, owner: str, caps: UserCaps) -> None:
    held = await usage(conn, owner)
    if held.active_runs > caps.max_active_runs:
        raise OverCap(429, f"you have {held.active_runs - 1} active run(s); the cap is "
                      f"{caps.max_active_runs}: wait for one to finish or cancel one under "
                      "My runs (/runs)")
    if held.staged_bytes > caps.max_staged_bytes:
        raise OverCap(413, f"your running runs would hold "
                      f"{human_bytes(held.staged_bytes)} of staged files; the cap is "
                      f"{human_bytes(caps.max_staged_bytes)}: wait for a run to finish or "
                      "cancel one under My runs (/runs)")


async def run_of(conn: asyncpg.Connection | asyncpg.Pool, run_id: uuid.UUID,
                 owner: str) -> asyncpg.Record | None:
    return await conn.fetchrow(_Q["web_run_owned"], run_id, owner)


async def runs_of(conn: asyncpg.Connection | asyncpg.Pool, owner: str,
                  limit: int) -> list[asyncpg.Record]:
    return list(await conn.fetch(_Q["web_runs_listed"], owner, limit, "owner"))


async def run_readable(conn: asyncpg.Connection | asyncpg.Pool, run_id: uuid.UUID,
                       user: str) -> asyncpg.Record | None:
    """A run ``user`` may read: their own or one shared with them (``owner`` says whose)."""
    return await conn.fetchrow(_Q["web_run_readable"], run_id, user)


#: How many users one run may be shared with.
MAX_READERS = 20


async def share(pool: asyncpg.Pool, run_id: uuid.UUID, owner: str, reader: str) -> bool:
    """Let ``reader`` read ``owner``'s run; False: it is not ``owner``'s run, or it has
    MAX_READERS readers already. The run's row is locked first, so shares at once count
    its readers one after another (counted in the insert's own snapshot, 60 concurrent
    shares left 22 readers: issue 48)."""
    async with pool.acquire() as conn, conn.transaction():
        if await conn.fetchval(_Q["web_share_lock"], run_id, owner) is None:
            return False
        return await conn.fetchval(_Q["web_share_insert"], run_id, owner, reader,
                                   MAX_READERS) is not None


async def unshare(conn: asyncpg.Connection | asyncpg.Pool, run_id: uuid.UUID, owner: str,
                  reader: str) -> bool:
    """Take ``reader``'s access to ``owner``'s run back; False: there was none."""
    return await conn.fetchval(_Q["web_share_delete"], run_id, owner, reader) is not None


async def seen(conn: asyncpg.Connection | asyncpg.Pool, user: str) -> None:
    """``user`` signed in and viewed a page (``web_users``, migration 0022)."""
    await conn.execute(_Q["web_user_seen"], user)


async def unknown(conn: asyncpg.Connection | asyncpg.Pool, users: list[str]) -> set[str]:
    """Of ``users``, those who have never signed in to the service (a typo, or someone
    yet to sign in)."""
    if not users:
        return set()
    return {r["name"] for r in await conn.fetch(_Q["web_users_unknown"], users)}


async def readers_of(conn: asyncpg.Connection | asyncpg.Pool,
                     run_id: uuid.UUID) -> list[str]:
    return [r["reader"] for r in await conn.fetch(_Q["web_shares_of_run"], run_id)]


async def shared_with(conn: asyncpg.Connection | asyncpg.Pool, reader: str,
                      limit: int) -> list[asyncpg.Record]:
    """The runs other users shared with ``reader``, the newest first."""
    return list(await conn.fetch(_Q["web_runs_listed"], reader, limit, "reader"))


async def run_stage(conn: asyncpg.Connection | asyncpg.Pool,
                    run_id: uuid.UUID) -> list[asyncpg.Record]:
    """A run's open tasks per kind (queued, running, the oldest claim's age)."""
    return list(await conn.fetch(_Q["web_run_stage"], run_id))


async def thesis_title(conn: asyncpg.Connection | asyncpg.Pool,
                       run_id: uuid.UUID) -> str | None:
    title = await conn.fetchval(_Q["web_thesis_title"], run_id)
    return title if isinstance(title, str) else None


async def run_documents(conn: asyncpg.Connection | asyncpg.Pool,
                        run_id: uuid.UUID) -> list[asyncpg.Record]:
    return list(await conn.fetch(_Q["web_run_documents"], run_id))


async def document_of(conn: asyncpg.Connection | asyncpg.Pool, digest: str,
                      owner: str) -> asyncpg.Record | None:
    return await conn.fetchrow(_Q["web_document_owned"], digest, owner)


# -- deleting a run (issue 47) -------------------------------------------------------------

async def delete_run(pool: asyncpg.Pool, run_id: uuid.UUID, owner: str) -> str | None:
    """Delete ``owner``'s ended run with everything that hangs off it (citations,
    verdicts, report, tasks, the ``web_runs`` row and its shares: by cascade, as
    retention deletes a run, :func:`citerun.core.retention.delete_runs`), and its
    uploaded documents where nothing else uses them: the tenant's ownership ends, their
    bytes, pages and chunks go and, used by no run at all, their rows too. None when
    done, else why not (another user's run or none: "not found"; a running one)."""
    async with pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(_Q["web_run_lock_owned"], run_id, owner)
        if row is None:
            return "not found"
        if row["state"] == "running":
            return "the run is still running: cancel it first"
        digests = [r["digest"] for r in await conn.fetch(_Q["web_run_digests"], run_id,
                                                         owner)]
        if row["pending"]:
            gone = await conn.fetchval(_Q["web_submission_forget"], run_id, owner)
        else:
            gone = await retention.delete_runs(conn, [run_id])
        if not gone:
            return "the run is busy: try again in a moment"
        if row["tenant"] is not None:
            await conn.execute(_Q["web_release_deleted"], row["tenant"], digests)
        await runs.erase_unowned(conn, digests)
        await conn.execute(_Q["web_documents_forget"], digests)
    return None


async def expired_runs(conn: asyncpg.Connection | asyncpg.Pool, older_than_s: float,
                       limit: int = 100) -> list[asyncpg.Record]:
    """Up to ``limit`` runs (``run_id``, ``owner``) that ended over ``older_than_s``
    ago, oldest first."""
    return list(await conn.fetch(_Q["web_runs_expired"], older_than_s, limit))


async def secret_key(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> bytes:
    """The named key, made on first use (the first replica's wins)."""
    await conn.execute(_Q["web_key_insert"], name, os.urandom(32))
    secret = await conn.fetchval(_Q["web_key_get"], name)
    assert isinstance(secret, bytes)
    return secret


# -- submissions to a cluster (citerun.web.cluster) -----------------------------------------

@dataclass(frozen=True)
class Pending:
    """A submission whose CitationRun the operator has not turned into a run yet."""

    run_id: uuid.UUID
    namespace: str
    resource_name: str
    age_s: float


async def stage_submission(conn: asyncpg.Connection, owner: str, placeholder: uuid.UUID,
                           namespace: str, resource_name: str, name: str,
                           uploads: list[tuple[bytes, str]], caps: UserCaps) -> None:
    """Stage ``uploads`` owned by ``namespace`` (``runs.stage_document``, via upload),
    record the owner's submission and check their caps, in the caller's transaction
    (:class:`OverCap` rolls all of it back). The digests the namespace did not own before
    are kept, to be taken back if the CitationRun is never created."""
    await conn.execute(_Q["web_owner_lock"], owner)
    await conn.execute(_Q["web_namespace_lock"], namespace)
    digests = list(dict.fromkeys([await runs.digest_off_loop(data) for data, _ in uploads]))
    owned = {r["digest"] for r in await conn.fetch(_Q["web_owned_by_tenant"], namespace,
                                                   digests)}
    for data, filename in uploads:
        await runs.stage_document(conn, data, filename, tenant=namespace, via="upload")
    await conn.execute(_Q["web_submission_insert"], placeholder, owner, namespace,
                       resource_name, name, digests, [d for d in digests if d not in owned])
    await _check_caps(conn, owner, caps)


async def submission_created(pool: asyncpg.Pool, placeholder: uuid.UUID,
                             run_id: uuid.UUID) -> None:
    await pool.execute(_Q["web_submission_created"], placeholder, run_id)


async def drop_submission(pool: asyncpg.Pool, run_id: uuid.UUID, namespace: str) -> None:
    """The CitationRun was never created: the row goes, and so does the namespace's
    ownership of what the upload staged first (unless something else uses it)."""
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(_Q["web_namespace_lock"], namespace)
        fresh = await conn.fetchval(_Q["web_submission_delete"], run_id)
        if fresh:
            await _release(conn, namespace, list(fresh), run_id)


async def close_submission(pool: asyncpg.Pool, run_id: uuid.UUID, state: str,
                           error: str) -> None:
    """A submission that will never become a run (refused for good, deleted, cancelled):
    it stops counting against its owner's caps and its fresh uploads are let go."""
    async with pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(_Q["web_submission_close"], run_id, state, error[:2000])
        if row is not None and row["fresh_digests"]:
            await conn.execute(_Q["web_namespace_lock"], row["namespace"])
            await _release(conn, row["namespace"], list(row["fresh_digests"]), run_id)


async def pending_of(conn: asyncpg.Connection | asyncpg.Pool, owner: str) -> list[Pending]:
    return [Pending(r["run_id"], r["namespace"], r["resource_name"], r["age_s"])
            for r in await conn.fetch(_Q["web_pending_of_owner"], owner)]


async def _release(conn: asyncpg.Connection, namespace: str, digests: list[str],
                   run_id: uuid.UUID) -> None:
    released = [r["digest"] for r in await conn.fetch(_Q["web_release_uploads"], namespace,
                                                      digests, run_id)]
    await runs.erase_unowned(conn, released)


async def resource_of(conn: asyncpg.Connection | asyncpg.Pool,
                      run_id: uuid.UUID) -> asyncpg.Record | None:
    """The namespace and name of a submission's CitationRun (None: a local run)."""
    return await conn.fetchrow(_Q["web_resource_of"], run_id)
