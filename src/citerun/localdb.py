"""Finding the database: the configured URL, or the embedded Postgres in the data dir.

The embedded server is started on first use and left running between calls of the same
user only while some citerun process uses it: the last process to leave stops it (a pid
registry under the data dir counts the users). The application gets the URL of the
``citerun_app`` role, which owns the ``citerun`` database and nothing else (see
:mod:`citerun.embedded`); the superuser only sets the role and the database up.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import fasteners

from citerun import db, embedded, sql
from citerun.settings import Settings

DATABASE = "citerun"

_Q = sql.load("citerun", "queries/local.sql")


@contextlib.contextmanager
def database(settings: Settings) -> Iterator[str]:
    """Yield a database URL for this process; start the embedded server if needed."""
    if settings.database_url:
        yield settings.database_url
        return
    data_dir = settings.data_dir / "postgres"
    data_dir.mkdir(parents=True, exist_ok=True)
    server = embedded.EmbeddedPostgres(data_dir)
    lock = fasteners.InterProcessLock(str(data_dir / ".lock"))
    with lock:
        server.start()
        _ensure_database(server)
        _users(data_dir, add=os.getpid())
    try:
        yield server.app_url(DATABASE)
    finally:
        with lock:
            if not _users(data_dir, remove=os.getpid()):
                server.stop()


def _users(data_dir: Path, *, add: int | None = None, remove: int | None = None) -> list[int]:
    path = data_dir / "users.json"
    try:
        pids = [int(p) for p in json.loads(path.read_text())]
    except (FileNotFoundError, ValueError):
        pids = []
    pids = [p for p in pids if p != remove and _alive(p)]
    if add is not None and add not in pids:
        pids.append(add)
    path.write_text(json.dumps(pids))
    return pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ensure_database(server: embedded.EmbeddedPostgres) -> None:
    """The application role (password from its file) and its own database, with pgvector.

    A ``citerun`` database the superuser owns (made before the role existed) is kept
    aside as ``citerun_superuser_<n>`` and a new one is made: the role cannot use it.
    """
    import asyncio

    import asyncpg

    async def create() -> None:
        conn = await asyncpg.connect(server.url("postgres"))
        try:
            role, password = embedded.APP_ROLE, server.app_password()
            statement = "role_password_statement" if await conn.fetchval(
                _Q["role_exists"], role) else "role_create_statement"
            await conn.execute(await conn.fetchval(_Q[statement], role, password))
            owner = await conn.fetchval(_Q["database_owner"], DATABASE)
            if owner is not None and owner != role:
                n = 1
                while await conn.fetchval(_Q["database_owner"], f"{DATABASE}_superuser_{n}"):
                    n += 1
                await conn.execute(await conn.fetchval(
                    _Q["database_rename_statement"], DATABASE, f"{DATABASE}_superuser_{n}"))
                owner = None
            if owner is None:
                await conn.execute(await conn.fetchval(
                    _Q["database_create_statement"], DATABASE, role))
        finally:
            await conn.close()
        conn = await asyncpg.connect(server.url(DATABASE))
        try:
            await conn.execute(_Q["extension_create_vector"])
        finally:
            await conn.close()

    asyncio.run(create())
