"""Finding the database: the configured URL, or the embedded Postgres in the data dir.

The embedded server is started on first use and left running between calls of the same
user only while some citerun process uses it: the last process to leave stops it (a pid
registry under the data dir counts the users). The application gets the URL of the
``citerun_app`` role, which owns the ``citerun`` database and nothing else (see
:mod:`citerun.local.embedded`); the superuser only sets the role and the database up.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import fasteners
import platformdirs

from citerun.core import db, sql
from citerun.local import embedded
from citerun.core.settings import Settings

DATABASE = "citerun"

#: Root's embedded servers whose default data dir their system user cannot reach.
SYSTEM_DIR = embedded.SYSTEM_DIR

_Q = sql.load("citerun.local", "localdb.sql")


@contextlib.contextmanager
def database(settings: Settings) -> Iterator[str]:
    """Yield a database URL for this process; start the embedded server if needed."""
    if settings.database_url:
        yield settings.database_url
        return
    data_dir = server_dir(settings)
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


def server_dir(settings: Settings) -> Path:
    """The directory of the embedded server's files for ``settings`` (see the module's
    docstring): ``<data dir>/postgres``, or as root, when the default data dir is out of
    the server user's reach, :func:`system_server_dir`."""
    own = settings.data_dir / "postgres"
    user = embedded.server_user()
    if user is None:
        return own
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if embedded.unreachable(settings.data_dir, user) is None:
        return own
    if settings.data_dir.resolve() != default_data_dir().resolve():
        return own  # chosen by hand: EmbeddedPostgres refuses it, naming the directory
    return system_server_dir(settings.data_dir, user)


def default_data_dir() -> Path:
    """The data dir when ``CITERUN_DATA_DIR`` is unset (the platform's user data dir)."""
    return Path(platformdirs.user_data_dir("citerun"))


def system_server_dir(data_dir: Path, user: str) -> Path:
    """``/var/lib/citerun/<digest>``: the server files of root's ``data_dir``, made on
    first use (with one line on stderr), in :func:`citerun.local.embedded.system_dir`."""
    embedded.system_dir(user)
    path = system_server_path(data_dir)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        if path.is_symlink() or not path.is_dir():
            raise embedded.EmbeddedPostgresError(
                f"{path} is not a directory; remove it") from None
        return path
    blocked = embedded.unreachable(data_dir, user) or data_dir
    mode = stat.S_IMODE(blocked.stat().st_mode)
    print(f"citerun: the database server runs as the system user {user}, which cannot "
          f"pass {blocked} (mode {mode:04o}) on the way to {data_dir}; its files are kept "
          f"in {path} instead (0700, that user's; set CITERUN_DATA_DIR to choose another "
          "place)", file=sys.stderr)
    return path


def system_server_path(data_dir: Path) -> Path:
    """Where :func:`system_server_dir` keeps the server files of ``data_dir``."""
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
    return SYSTEM_DIR / digest


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
