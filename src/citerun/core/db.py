"""Connections and migrations.

Every process calls :func:`migrate` at boot. Migrations run under a session-level
``pg_advisory_lock`` held on one dedicated connection, unlocked in ``finally``: when ten
pods start at once, one applies the files and the other nine wait, then find nothing to
do. Each applied file is recorded with its sha256; an applied file whose text changed is
an error, never a silent skip.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeVar

import asyncpg
import pgvector.asyncpg

from citerun.core import errors, retry, sql

logger = logging.getLogger(__name__)

# Any fixed 64-bit key works, as long as it never changes (old and new pods share it).
MIGRATION_LOCK_KEY = 0x63697465_72756E31  # "citerun1"

_QUERIES = sql.load("citerun.core", "db.sql")
_MIGRATION_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class DatabaseError(errors.CiterunError):
    """The database could not be reached or answered unexpectedly."""


#: "The database is unavailable": errors after which a caller waits and tries again
#: (connection refused or reset, the server shutting down or full, a closed connection,
#: a timeout). The one definition the worker, the listener and the operator share.
UNAVAILABLE: tuple[type[BaseException], ...] = (
    OSError, asyncio.TimeoutError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError,
    asyncpg.CannotConnectNowError, asyncpg.AdminShutdownError,
    asyncpg.TooManyConnectionsError, DatabaseError,
)

#: How a caller waits for the database to come back: soon at first, then every 5 s.
RECONNECT = retry.RetryPolicy(base_s=0.2, cap_s=5.0)

#: "Another transaction was in the way": Postgres aborted this one to break a deadlock, or
#: for a serialization failure. Nothing of it was kept; the same transaction run again
#: from its start usually passes.
CONFLICT: tuple[type[BaseException], ...] = (
    asyncpg.DeadlockDetectedError, asyncpg.SerializationError)

#: How a transaction aborted for a :data:`CONFLICT` is run again: soon (the other one has
#: gone on), a few times, then the error is the caller's.
CONFLICT_RETRY = retry.RetryPolicy(base_s=0.05, cap_s=1.0, max_attempts=5)

T = TypeVar("T")


async def retrying_conflicts(what: str, transaction: Callable[[], Awaitable[T]]) -> T:
    """Run ``transaction`` (a whole one: it acquires its connection, begins and commits;
    never called inside a caller's transaction) until Postgres stops aborting it for a
    :data:`CONFLICT`, under :data:`CONFLICT_RETRY`. Concurrent uploads and cancels of
    the same documents deadlocked and the web answered 500 (issue 48)."""
    return await retry.retrying(CONFLICT_RETRY, what, transaction, errors=CONFLICT)


class MigrationError(errors.CiterunError):
    """The migrations could not be applied."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    text: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def available_migrations() -> list[Migration]:
    """The migration files shipped with citerun, in version order."""
    found: list[Migration] = []
    for entry in resources.files("citerun.core.migrations").iterdir():
        match = _MIGRATION_FILE.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"two migration files share a version: {versions}")
    return found


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=_json_dumps, decoder=_json_loads,
                              schema="pg_catalog")
    try:
        await pgvector.asyncpg.register_vector(conn)
    except ValueError:
        # The vector type does not exist before the first migration ran.
        pass


def _json_dumps(value: Any) -> str:
    import json
    return json.dumps(value, separators=(",", ":"), default=str)


def _json_loads(text: str) -> Any:
    import json
    return json.loads(text)


async def connect(url: str, **kwargs: Any) -> asyncpg.Connection:
    """One connection with citerun's codecs (jsonb as Python objects, vector as numpy)."""
    try:
        conn: asyncpg.Connection = await asyncpg.connect(url, **kwargs)
    except (OSError, asyncpg.PostgresError) as err:
        raise DatabaseError(f"cannot connect to the database: {err}") from err
    await _init_connection(conn)
    return conn


async def _reset_connection(conn: asyncpg.Connection) -> None:
    """What a connection needs when it goes back to the pool: only an open transaction
    rolled back. citerun keeps no session state on pooled connections (LISTEN and the
    migration lock live on dedicated ones), so asyncpg's default reset (unlock all,
    CLOSE ALL, UNLISTEN *, RESET ALL: a round trip on every release) is pure cost."""
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")


async def create_pool(url: str, *, min_size: int = 1, max_size: int = 8) -> asyncpg.Pool:
    """A pool whose connections carry citerun's codecs."""
    try:
        pool = await asyncpg.create_pool(url, min_size=min_size, max_size=max_size,
                                         init=_init_connection, reset=_reset_connection)
    except (OSError, asyncpg.PostgresError) as err:
        raise DatabaseError(f"cannot connect to the database: {err}") from err
    assert pool is not None
    return pool


async def migrate(url: str) -> list[int]:
    """Apply the pending migrations; return the versions this call applied."""
    conn = await connect(url)
    try:
        await conn.execute(_QUERIES["migration_lock"], MIGRATION_LOCK_KEY)
        try:
            return await _apply_pending(conn)
        finally:
            await conn.execute(_QUERIES["migration_unlock"], MIGRATION_LOCK_KEY)
    finally:
        await conn.close()


async def _apply_pending(conn: asyncpg.Connection) -> list[int]:
    await conn.execute(_QUERIES["schema_migrations_create"])
    applied = {r["version"]: r for r in await conn.fetch(_QUERIES["schema_migrations_all"])}
    done: list[int] = []
    for migration in available_migrations():
        row = applied.get(migration.version)
        if row is not None:
            if row["checksum"] != migration.checksum:
                raise MigrationError(
                    f"migration {migration.version:04d}_{migration.name}.sql was changed after "
                    f"it was applied (recorded sha256 {row['checksum'][:12]}, file "
                    f"{migration.checksum[:12]}); add a new migration instead of editing it")
            continue
        async with conn.transaction():
            try:
                await conn.execute(migration.text)
            except asyncpg.PostgresError as err:
                raise MigrationError(
                    f"migration {migration.version:04d}_{migration.name}.sql failed: {err}"
                ) from err
            await conn.execute(_QUERIES["schema_migrations_insert"], migration.version,
                               migration.name, migration.checksum)
        logger.info("applied migration %04d_%s", migration.version, migration.name,
                    extra={"action": "migrate", "version": migration.version})
        done.append(migration.version)
    return done
