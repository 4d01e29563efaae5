"""Finding the database: the configured URL, or the embedded Postgres in the data dir.

The embedded server is started on first use and left running between calls of the same
user only while some citerun process uses it: the last process to leave stops it (a pid
registry under the data dir counts the users).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import fasteners

from citerun import db, embedded
from citerun.settings import Settings

DATABASE = "citerun"  # db.sql creates it (tests/unit/test_single_sources.py compares)


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
        yield server.url(DATABASE)
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
    import asyncio

    import asyncpg

    async def create() -> None:
        conn = await asyncpg.connect(server.url("postgres"))
        try:
            if not await conn.fetchval(db.QUERIES["database_exists"], DATABASE):
                await conn.execute(db.QUERIES["database_create_citerun"])
        finally:
            await conn.close()

    asyncio.run(create())
