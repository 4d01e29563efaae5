"""Attack 7 of issue 12: another local user cannot reach the embedded Postgres.

The embedded server of ``citerun verify`` (started as the CLI starts it, through
:func:`citerun.local.localdb.database`) must not listen on TCP, must keep its socket in a 0700
directory, must require passwords, and must give the application a role that cannot run
programs on the server. A real ``psql`` run as ``nobody`` (``setpriv``) with the
application's own URL, password included, is refused.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from citerun.local import embedded, localdb
from citerun.core.settings import Settings

PSQL = Path(getattr(embedded.pgbin, "POSTGRES_BIN_PATH")) / "psql"


@pytest.fixture
def local_database() -> Iterator[tuple[Path, str]]:
    # A short path under /tmp: a Unix socket path has at most 107 bytes.
    data_dir = Path(tempfile.mkdtemp(prefix="citerun-local-"))
    os.chmod(data_dir, 0o755)
    try:
        with localdb.database(Settings(data_dir=data_dir)) as url:
            yield data_dir / "postgres", url
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_no_tcp_private_socket_passwords_and_no_superuser(
        local_database: tuple[Path, str]) -> None:
    pg_dir, url = local_database
    server = embedded.EmbeddedPostgres(pg_dir)
    assert "127.0.0.1" not in url and "localhost" not in url
    assert _mode(pg_dir) == 0o700 and _mode(server.socket_dir) == 0o700
    for name in ("postgres.password", "citerun_app.password"):
        assert _mode(pg_dir / name) == 0o600
    with socket.socket() as s:  # nothing listens on TCP at the server's port
        assert s.connect_ex(("127.0.0.1", server.port)) != 0

    async def inspect() -> None:
        conn = await asyncpg.connect(url)
        try:
            assert await conn.fetchval("SHOW listen_addresses") == ""
            assert not await conn.fetchval(
                "SELECT rolsuper OR rolcreaterole OR rolcreatedb FROM pg_roles "
                "WHERE rolname = current_user")
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute("COPY (SELECT 1) TO PROGRAM 'id'")
        finally:
            await conn.close()
        # Without the password the socket refuses even the right role.
        with pytest.raises(asyncpg.InvalidPasswordError):
            await asyncpg.connect(url.replace(server.app_password(), "wrong"))

    asyncio.run(inspect())
    hba = (server.pgdata / "pg_hba.conf").read_text()
    assert "trust" not in hba.split("\n", 1)[1] and "host " not in hba


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to run a client as another user")
def test_another_local_user_cannot_connect(local_database: tuple[Path, str]) -> None:
    _, url = local_database
    as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    probe = subprocess.run([*as_nobody, str(PSQL), "--version"], capture_output=True,
                           text=True, timeout=30)
    assert probe.returncode == 0, probe.stderr  # nobody can run psql at all
    done = subprocess.run([*as_nobody, str(PSQL), "-X", "-w", url, "-c", "SELECT 1"],
                          capture_output=True, text=True, timeout=30,
                          env={"PATH": os.environ.get("PATH", "/usr/bin")})
    assert done.returncode != 0, done.stdout
    assert "Permission denied" in done.stderr or "No such file" in done.stderr, done.stderr
    mine = subprocess.run([str(PSQL), "-X", "-w", url, "-At", "-c", "SELECT current_user"],
                          capture_output=True, text=True, timeout=30)
    assert mine.stdout.strip() == embedded.APP_ROLE, mine.stderr
